"""Artifacts attached to runs: attach any artifact, or store the run's own exports (docs/artifacts.md)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum

from artifacts.models import Artifact, ArtifactKind
from artifacts.services import artifact_create, artifact_create_from_bytes
from core.actors import actor_or_none
from core.errors import QuotaExceeded
from runs.events import payload_hydrate
from runs.models import Run, RunArtifact, RunEvent, ScoreStatus
from runs.presenters import event_json
from scoring.models import LaneScorecard, RunScorecard
from workspaces.services import audit_record

# Rows read per query while streaming a run's events.
_CHUNK = 500
# Exports up to this size stay in memory while they are written; larger ones spill to a temp file.
_SPOOL_BYTES = 8 * 1024 * 1024


def event_export_lines(run: Run) -> Iterator[str]:
    """Every event of the run as JSON lines, oldest first (the events export, API and artifact alike)."""
    for event in RunEvent.objects.filter(run=run).order_by("id").iterator(chunk_size=_CHUNK):
        if event.payload_ref:
            event.payload = payload_hydrate(event.payload)
        yield json.dumps(event_json(event), default=str) + "\n"


@transaction.atomic
def run_artifact_attach(*, run: Run, artifact: Artifact, user: Any) -> tuple[RunArtifact, bool]:
    """Attach an artifact of the run's workspace (idempotent: ``created`` is False the second time)."""
    if artifact.workspace_id != run.workspace_id:
        raise ValueError("an artifact can only be attached to a run of its own workspace")
    existing = RunArtifact.objects.filter(run=run, artifact=artifact).first()
    if existing is not None:
        return existing, False
    attachment = RunArtifact(run=run, artifact=artifact, workspace_id=run.workspace_id, attached_by=actor_or_none(user))
    attachment.full_clean(validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            attachment.save(force_insert=True)
    except IntegrityError:  # attached concurrently
        return RunArtifact.objects.get(run=run, artifact=artifact), False
    audit_record(
        workspace=run.workspace,
        actor=user,
        action="run.artifact_attached",
        target=f"run {run.pk}",
        metadata={"artifact_id": str(artifact.pk), "name": artifact.name},
    )
    return attachment, True


def _scorecard_document(run: Run) -> dict[str, Any] | None:
    if run.score_status != ScoreStatus.SCORED:
        return None
    card = RunScorecard.objects.filter(run=run).first()
    lanes = LaneScorecard.objects.filter(lane__run=run).select_related("lane").order_by("lane__lane_index")
    return {
        "run_id": run.pk,
        "run_scorecard": card.document if card else None,
        "lane_scorecards": [{"lane_id": c.lane_id, "label": c.lane.label, "document": c.document} for c in lanes],
    }


@transaction.atomic
def run_exports_store(*, run: Run, user: Any) -> list[RunArtifact]:
    """Store the run's events (JSON lines) and, once it is scored, its scorecards (JSON) as
    artifacts attached to it. Every call stores a fresh copy; older ones stay."""
    attachments: list[RunArtifact] = []
    metadata = {"run_id": run.pk, "run_status": run.status}
    Run.objects.select_for_update().filter(pk=run.pk).first()  # one export of a run at a time: the budget below holds
    document = _scorecard_document(run)
    scorecard_bytes = json.dumps(document, indent=2, sort_keys=True, default=str).encode() if document is not None else b""
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool:
        for line in event_export_lines(run):
            spool.write(line.encode())
        _run_quota_check(run, spool.tell() + len(scorecard_bytes))
        events = artifact_create(
            workspace=run.workspace,
            user=user,
            stream=spool,
            name=f"run-{run.pk}-events.jsonl",
            kind=ArtifactKind.RUN_EVENTS,
            metadata=metadata,
        )
    attachments.append(run_artifact_attach(run=run, artifact=events, user=user)[0])
    if document is not None:
        scorecard = artifact_create_from_bytes(
            workspace=run.workspace,
            user=user,
            data=scorecard_bytes,
            name=f"run-{run.pk}-scorecard.json",
            kind=ArtifactKind.SCORECARD,
            metadata=metadata,
        )
        attachments.append(run_artifact_attach(run=run, artifact=scorecard, user=user)[0])
    return attachments


def _run_quota_check(run: Run, size: int) -> None:
    """Refuse ``size`` more bytes of exports past ``ARTIFACT_BYTES_PER_RUN`` (every call stores a fresh copy)."""
    limit = int(settings.ARTIFACT_BYTES_PER_RUN)
    used = int(RunArtifact.objects.filter(run=run).aggregate(total=Sum("artifact__size_bytes"))["total"] or 0)
    if used + size > limit:
        raise QuotaExceeded(budget="run's artifact", setting="ARTIFACT_BYTES_PER_RUN", limit=limit, used=used, size=size)
