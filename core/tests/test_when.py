"""How long ago, in words (issue 25: "0 minutes ago")."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from core.templatetags.when import ago, field_words, words


def test_under_a_minute_is_just_now_and_later_counts_minutes():
    now = timezone.now()
    assert ago(now - dt.timedelta(seconds=20)) == "just now"
    assert ago(now - dt.timedelta(minutes=5, seconds=3)) == "5\xa0minutes ago"
    assert ago(None) == ""


def test_stored_values_read_as_words_not_python_reprs():
    assert words(["a.example.com", "b.example.org"]) == "a.example.com, b.example.org"
    assert words([]) == "none" and words(None) == "—" and words(True) == "yes" and words(3) == "3"
    assert field_words("allowed_hosts") == "allowed hosts"
