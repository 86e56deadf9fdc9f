"""``{% load when %}``: how long ago, in words a person reads ("just now", not "0 minutes ago")."""

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
