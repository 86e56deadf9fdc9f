"""A case's finish: one transaction records its result, its score and its last events, and refills its lane.

The case's last events, its finish and (scored with the finish) its score and ``scoring.*``
events are one transaction and one event batch: the lane row is locked once per case (by the
batch's sequence reservation, which also reads the lane's dispatch state for the refill), and a
case is never seen finished without its events (docs/performance.md). Then, committed, the lane
and the run move on (runs/pipeline/advance.py).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from engine.modes.case import CANCELLED, COMPLETED
from engine.redact import Redactor
from engine.types import Usage
from runs.events import RunEventSink
from runs.lifecycle import case_close
from runs.models import CaseRun, CaseStatus
from runs.pipeline.advance import ScoreHere, case_after_finish
from runs.pipeline.context import CaseContext
from runs.pipeline.lane import lane_dispatch
from runs.pipeline.native import CaseAttempt
from scoring.services import CaseScoring, case_scoring, case_scoring_save

logger = logging.getLogger(__name__)

ERROR_MAX_CHARS = 5000


def result_fields(result: CaseAttempt, redactor: Redactor) -> tuple[str, dict[str, Any]]:
    """The case's final status and the fields that record it, redacted."""
    outcome, verification = result.outcome, result.verification
    usage = outcome.usage or Usage()
    status = {COMPLETED: CaseStatus.COMPLETED, CANCELLED: CaseStatus.CANCELLED}.get(outcome.status, CaseStatus.FAILED)
    fields = {
        "stop_reason": outcome.stop_reason or "",
        "final_output": redactor.text(outcome.final_output) if outcome.final_output is not None else None,
        "error": redactor.text(outcome.error or "")[:ERROR_MAX_CHARS],
        "step_count": outcome.step_count,
        "tool_call_count": outcome.tool_call_count,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "duration_ms": outcome.duration_ms,
        "verification": redactor.json(verification) if verification else {},
        "provider_failure": redactor.json(outcome.provider_failure) if outcome.provider_failure else None,
    }
    return status, fields


def _score_with_finish(ctx: CaseContext, status: str, sink: RunEventSink) -> CaseScoring | None:
    """The case's verdict from its events (as the sink kept them), or None to score it after its finish.

    Only a native attempt's sink keeps its events (its own events are its whole evidence:
    scoring/services/cases.py), a cancelled case is not scored, and a spec with LLM judges is scored
    after the finish (``judges=False``).
    """
    if not ctx.score_inline or status == CaseStatus.CANCELLED or sink.evidence is None:
        return None
    return case_scoring(ctx.case_run, spec=ctx.evaluation_spec, security=ctx.security, events=sink.evidence, judges=False)


def case_finish(case_run: CaseRun, result: CaseAttempt, sink: RunEventSink, ctx: CaseContext | None) -> str:
    """Finish the case with its result (if this attempt still holds the claim), then move the lane on.

    ``ctx`` is None when the case's context could not be built (the failure is the result).
    """
    status, fields = result_fields(result, ctx.redactor if ctx else Redactor([]))
    for name, value in fields.items():  # the row as it is about to be, for scoring
        setattr(case_run, name, value)
    case_run.status = status
    verdict = _score_with_finish(ctx, status, sink) if ctx is not None else None
    with transaction.atomic():
        finished = case_close(
            case_run_id=case_run.pk, attempt=case_run.attempt, status=status, fields={**fields, **(verdict.fields if verdict else {})}
        )
        if finished and verdict is not None:
            case_scoring_save(case_run, verdict, in_finish=True)
        # A lost claim's events are kept; a finished case's batch locks the lane row for the refill below.
        state = sink.write_final(extra=verdict.events if finished and verdict is not None else None)
        maybe_done = lane_dispatch(case_run.lane_id, state=state, locked=state is not None).maybe_done if finished else None
    if not finished:
        logger.info("case run %s attempt %s lost its claim; result dropped", case_run.pk, case_run.attempt)
        return "superseded"
    score_here = None
    if ctx is not None and ctx.score_inline and verdict is None:
        score_here = ScoreHere(case_run=case_run, events=sink.evidence, spec=ctx.evaluation_spec, security=ctx.security)
    case_after_finish(
        case_run_id=case_run.pk,
        lane_id=case_run.lane_id,
        status=status,
        maybe_done=maybe_done,
        scored=verdict is not None,
        score_here=score_here,
    )
    return str(status)
