"""``{% load when %}``: values in words a person reads: how long ago ("just now", not "0 minutes
ago"), a list as "a, b" (not Python's ``['a', 'b']``), a field name with spaces."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

register = template.Library()


@register.filter
def ago(value: dt.datetime | None) -> str:
    """``just now`` under a minute, else Django's ``timesince`` + "ago" ("5 minutes ago")."""
    if value is None:
        return ""
    if (timezone.now() - value).total_seconds() < 60:
        return "just now"
    return f"{timesince(value)} ago"


@register.filter
def words(value: object) -> str:
    """A stored value as text: a list joined with commas ("none" when empty), ``None`` as "—"."""
    if value is None:
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value) if value else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


@register.filter
def field_words(value: object) -> str:
    """``allowed_hosts`` → "allowed hosts"."""
    return str(value).replace("_", " ")
