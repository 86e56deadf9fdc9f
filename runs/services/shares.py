"""Share links: a read-only public link to a run's report (docs/runs.md, "Share links").

The raw token is made here, returned once, and only its SHA-256 is kept. A link is revocable and
always expires; every create and revoke, and a link's first view, is in the audit log, and every
view counts on the link itself.
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.actors import actor_or_none
from core.errors import Conflict, DomainError
from runs.models import Run, RunShare
from workspaces.services import audit_record

SHARE_DAYS_DEFAULT = 7
SHARE_DAYS_MAX = 90
SHARES_ACTIVE_MAX = 20  # per run: more is a sign of a leak, not of sharing
TOKEN_PREFIX = "acs_"


@transaction.atomic
def run_share_create(*, run: Run, user: Any, expires_in_days: int = SHARE_DAYS_DEFAULT) -> tuple[RunShare, str]:
    """A new link to ``run``'s report and its raw token (shown once, never stored)."""
    if isinstance(expires_in_days, bool) or not isinstance(expires_in_days, int) or not 1 <= expires_in_days <= SHARE_DAYS_MAX:
        raise DomainError(
            f"expires_in_days must be a whole number of days from 1 to {SHARE_DAYS_MAX}.", field="expires_in_days", code="invalid"
        )
    Run.objects.select_for_update().filter(pk=run.pk).first()  # one count-and-create at a time per run
    now = timezone.now()
    active = RunShare.objects.filter(run=run, revoked_at__isnull=True, expires_at__gt=now).count()
    if active >= SHARES_ACTIVE_MAX:
        raise Conflict(
            f"This run already has {SHARES_ACTIVE_MAX} active share links. Revoke one before making another.",
            field="run", code="too_many_shares",
        )  # fmt: skip
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    share = RunShare.objects.create(
        run=run, workspace_id=run.workspace_id, token_hash=RunShare.hash(raw), created_by=actor_or_none(user),
        expires_at=now + dt.timedelta(days=expires_in_days),
    )  # fmt: skip
    audit_record(
        workspace=run.workspace, actor=user, action="run_share.created", target=f"run {run.pk}",
        metadata={"share_id": share.pk, "expires_at": share.expires_at.isoformat()},
    )  # fmt: skip
    return share, raw


@transaction.atomic
def run_share_revoke(*, share: RunShare, user: Any) -> RunShare:
    """Ends a link at once; revoking a revoked link changes nothing."""
    changed = RunShare.objects.filter(pk=share.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_by=actor_or_none(user)
    )
    share.refresh_from_db()
    if changed:
        audit_record(
            workspace=share.run.workspace, actor=user, action="run_share.revoked", target=f"run {share.run_id}",
            metadata={"share_id": share.pk, "view_count": share.view_count},
        )  # fmt: skip
    return share


@transaction.atomic
def run_share_viewed(*, share: RunShare) -> None:
    """Counts one view of a link; its first view is also in the audit log (later ones only count)."""
    now = timezone.now()
    first = RunShare.objects.filter(pk=share.pk, view_count=0).update(view_count=1, last_viewed_at=now)
    if not first:
        RunShare.objects.filter(pk=share.pk).update(view_count=F("view_count") + 1, last_viewed_at=now)
        return
    audit_record(
        workspace=share.run.workspace, actor=None, action="run_share.first_viewed", target=f"run {share.run_id}",
        metadata={"share_id": share.pk},
    )  # fmt: skip
