from __future__ import annotations

from celery import shared_task


@shared_task(name="workspaces.ping")
def ping(value: str = "pong") -> str:
    """Round-trip check for the worker and broker."""
    return value
