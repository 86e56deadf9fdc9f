"""How long ago, in words (issue 25: "0 minutes ago")."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from core.templatetags.when import ago


def test_under_a_minute_is_just_now_and_later_counts_minutes():
    now = timezone.now()
    assert ago(now - dt.timedelta(seconds=20)) == "just now"
    assert ago(now - dt.timedelta(minutes=5, seconds=3)) == "5\xa0minutes ago"
    assert ago(None) == ""
