"""The limiter on the database, for the embedded defaults (SQLite, or PostgreSQL without Redis).

One row per model call (``infrastructure.ProviderCallLease``). Checking the limits and inserting
the row happen in one transaction that first locks the provider account: ``SELECT … FOR NO KEY
UPDATE`` on PostgreSQL; on SQLite, which has no row locks, a no-op write takes the database's
write lock for the transaction (the settings also begin every transaction IMMEDIATE). So two
workers can never both see a free slot and both take it.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import TYPE_CHECKING

from django.db import DatabaseError, connection, transaction
from django.db.models import Count, F, Min, Q, Sum
from django.utils import timezone

from infrastructure.models import ProviderAccount, ProviderCallLease
from runs.throttle.base import MAX_CONCURRENT_CALLS, REQUESTS_PER_MINUTE, TOKENS_PER_MINUTE, WINDOW_SECONDS, Decision, LimiterUnavailable

if TYPE_CHECKING:
    from runs.throttle import Limits

# A concurrency slot frees whenever a call ends; poll this often for one.
SLOT_POLL_SECONDS = 0.1


def _lock_account(account_id: int) -> None:
    if connection.features.has_select_for_update:
        no_key = connection.features.has_select_for_no_key_update
        list(ProviderAccount.objects.select_for_update(no_key=no_key).filter(pk=account_id).values_list("pk", flat=True))
    else:  # SQLite: a write holds the database's write lock until the transaction ends
        ProviderAccount.objects.filter(pk=account_id).update(max_concurrent_calls=F("max_concurrent_calls"))


class DatabaseLimiter:
    name = "database"

    def try_acquire(self, *, account_id: int, limits: Limits, lease_seconds: float) -> Decision:
        try:
            return self._try_acquire(account_id, limits, lease_seconds)
        except DatabaseError as exc:
            raise LimiterUnavailable(f"database: {exc}") from exc

    @transaction.atomic
    def _try_acquire(self, account_id: int, limits: Limits, lease_seconds: float) -> Decision:
        _lock_account(account_id)
        now = timezone.now()
        window_start = now - dt.timedelta(seconds=WINDOW_SECONDS)
        calls = ProviderCallLease.objects.filter(account_id=account_id)
        calls.filter(started_at__lte=window_start).filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now)).delete()
        recent = Q(started_at__gt=window_start)
        counts = calls.aggregate(
            held=Count("pk", filter=Q(lease_expires_at__gt=now)),
            requests=Count("pk", filter=recent),
            used_tokens=Sum("tokens", filter=recent),
            oldest=Min("started_at", filter=recent),
            oldest_with_tokens=Min("started_at", filter=recent & Q(tokens__gt=0)),
        )
        denial = _denial(limits, counts, now)
        if denial is not None:
            return denial
        token = uuid.uuid4().hex
        ProviderCallLease.objects.create(
            account_id=account_id, token=token, started_at=now, lease_expires_at=now + dt.timedelta(seconds=lease_seconds)
        )
        return Decision(token=token)

    def release(self, *, account_id: int, token: str, tokens: int) -> None:
        try:
            ProviderCallLease.objects.filter(account_id=account_id, token=token).update(lease_expires_at=None, tokens=max(0, int(tokens)))
        except DatabaseError as exc:
            raise LimiterUnavailable(f"database: {exc}") from exc


def _until_window_frees(oldest: dt.datetime | None, now: dt.datetime) -> float:
    if oldest is None:
        return SLOT_POLL_SECONDS
    return max(SLOT_POLL_SECONDS, (oldest + dt.timedelta(seconds=WINDOW_SECONDS) - now).total_seconds())


def _denial(limits: Limits, counts: dict[str, object], now: dt.datetime) -> Decision | None:
    held, requests, tokens = int(counts["held"] or 0), int(counts["requests"] or 0), int(counts["used_tokens"] or 0)  # type: ignore[call-overload]
    if limits.max_concurrent_calls and held >= limits.max_concurrent_calls:
        return Decision(limit=MAX_CONCURRENT_CALLS, limit_value=limits.max_concurrent_calls, retry_in=SLOT_POLL_SECONDS)
    if limits.requests_per_minute and requests >= limits.requests_per_minute:
        retry = _until_window_frees(counts["oldest"], now)  # type: ignore[arg-type]
        return Decision(limit=REQUESTS_PER_MINUTE, limit_value=limits.requests_per_minute, retry_in=retry)
    if limits.tokens_per_minute and tokens >= limits.tokens_per_minute:
        retry = _until_window_frees(counts["oldest_with_tokens"], now)  # type: ignore[arg-type]
        return Decision(limit=TOKENS_PER_MINUTE, limit_value=limits.tokens_per_minute, retry_in=retry)
    return None
