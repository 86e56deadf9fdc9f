"""Reads for runs: lists, progress, events. Lookups by user-supplied id go through the access helper."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any, TypedDict, cast

from django.db import connection, transaction
from django.db.models import (
    Avg,
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    Max,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Sum,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, Now, NullIf, Substr

from engine import events as ev
from engine.modes.context import visible_case
from engine.redact import Redactor
from engine.scoring.documents import ValidatorDetail
from engine.scoring.pricing import price_usage
from engine.scoring.security import planted_values
from engine.scoring.spec import ModelPrice, PricingConfig
from engine.types import JSON
from packs.manifests import pack_manifest
from runs.events import payload_hydrate
from runs.lookups import CASE_STATUSES, tally_annotations
from runs.models import CASE_TERMINAL, CaseRun, CaseStatus, Lane, Run, RunArtifact, RunEvent, RunShare, ScoreStatus
from scoring.models import CaseScore, LaneScorecard, RunScorecard
from scoring.services import evaluation_spec_for, workspace_prices_for
from workspaces.models import Workspace


def _case_count_annotations(prefix: str = "") -> dict[str, Count]:
    field = f"{prefix}case_runs"
    counts = {f"cases_{s}": Count(field, filter=Q(**{f"{field}__status": s})) for s in CASE_STATUSES}
    counts["cases_total"] = Count(field)
    counts.update(tally_annotations(f"{field}__"))
    return counts


def run_list(*, workspace: Workspace, status: str = "", pack_id: Any = None) -> QuerySet[Run]:
    """Runs of the workspace, newest first, with case counts and lanes (a fixed number of queries)."""
    runs = Run.objects.filter(workspace=workspace).select_related("pack_version__pack")
    if status:
        runs = runs.filter(status=status)
    if pack_id not in (None, ""):
        try:
            runs = runs.filter(pack_version__pack_id=int(pack_id))
        except (TypeError, ValueError):
            runs = runs.none()
    return (
        runs.annotate(**_case_count_annotations())
        .order_by("-created_at", "-id")
        .prefetch_related(Prefetch("lanes", queryset=Lane.objects.order_by("lane_index")))
    )


# The runs list's sortable columns: ?sort=<key> ascending, ?sort=-<key> descending.
RUN_SORTS: dict[str, str] = {
    "name": "name",
    "status": "status",
    "pack": "pack_version__pack__name",
    "winner": "winner_label",
    "best_score": "best_score",
    "pass_rate": "pass_rate",
    "duration": "duration",
    "created": "created_at",
}
RUN_SORT_DEFAULT = "-created"


def run_sort_key(raw: str | None) -> str:
    """``raw`` if it names a sortable column (with an optional ``-``), else the default."""
    raw = (raw or "").strip()
    return raw if raw.lstrip("-") in RUN_SORTS else RUN_SORT_DEFAULT


def run_list_table(*, workspace: Workspace, status: str = "", pack_id: Any = None, query: str = "", sort: str = "") -> QuerySet[Run]:
    """The runs page: ``run_list`` plus winner, best lane score, pass rate and duration, searchable and sortable.

    Pass rate counts the scored case runs of every lane; duration runs from start to finish (or
    to now while the run runs). Sorting puts runs without a value last either way.
    """
    runs = run_list(workspace=workspace, status=status, pack_id=pack_id)
    query = (query or "").strip()
    if query:
        runs = runs.filter(
            Q(name__icontains=query)
            | Q(pack_version__pack__name__icontains=query)
            | Q(pk__in=Lane.objects.filter(workspace=workspace, label__icontains=query).values("run_id"))
            | (Q(pk=int(query.lstrip("#"))) if query.lstrip("#").isdigit() else Q(pk__in=[]))
        )
    best = LaneScorecard.objects.filter(lane__run=OuterRef("pk")).values("lane__run").annotate(best=Max("overall_score")).values("best")
    winner = RunScorecard.objects.filter(run=OuterRef("pk")).values("winner_lane__label")[:1]
    runs = runs.annotate(
        best_score=Subquery(best[:1], output_field=FloatField()),
        winner_label=Subquery(winner),
        cases_passed=Count("case_runs", filter=Q(case_runs__passed=True)),
        cases_scored=Count("case_runs", filter=Q(case_runs__passed__isnull=False)),
        duration=ExpressionWrapper(Coalesce("finished_at", Now()) - F("started_at"), output_field=DurationField()),
    ).annotate(
        pass_rate=ExpressionWrapper(Cast("cases_passed", FloatField()) / NullIf("cases_scored", 0), output_field=FloatField()),
    )
    key = run_sort_key(sort)
    field = RUN_SORTS[key.lstrip("-")]
    order = F(field).desc(nulls_last=True) if key.startswith("-") else F(field).asc(nulls_last=True)
    return runs.order_by(order, "-id")


@dataclasses.dataclass
class LaneProgress:
    lane: Lane
    total: int
    done: int
    completed: int
    failed: int
    running: int
    steps: int
    tool_calls: int
    tokens: int
    latest_event: RunEvent | None  # the lane's newest event (runs.presenters.lanes_with_activity words it)
    passed: int = 0
    scored: int = 0
    score_mean: float | None = None
    waiting_on_provider: int = 0  # running cases waiting on their provider account's limit now
    activity: str = ""  # what the lane is doing, in words (set by the presenter)

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def queued(self) -> int:
        return max(0, self.total - self.done - self.running)

    cancelled: int = 0  # cancelled cases: done, but not run to their end (runs.lookups.cancelled_q)
    ran: int = 0  # cases that ran to their end: passed, failed or waiting for a score

    @property
    def finished(self) -> int:
        """Cases done, cancelled ones aside: "3 / 3 cases done · 2 cancelled" read as done."""
        return self.done - self.cancelled

    @property
    def pass_rate(self) -> float | None:
        """Passed cases among the scored ones, so far."""
        return self.passed / self.scored if self.scored else None

    @property
    def outcome(self) -> str:
        """The lane's outcome so far, for its colours: pass (every finished case passed), fail (none
        did), mixed, or none (no verdict yet)."""
        if self.failed and not self.passed:
            return "fail"
        if self.failed:
            return "mixed"
        return "pass" if self.passed else "none"

    @property
    def bar(self) -> dict[str, str]:
        """The segments of the lane's progress bar on a 0–100 axis (SVG attributes: no style=).

        Colour and fill follow the outcome: green for passed cases, red for failed ones (a failing
        verdict, or an agent that failed without one: ``runs.lookups.failed_q``), grey for cases
        that finished without a verdict yet, pale for cancelled ones, blue for running ones."""
        if not self.total:
            return dict.fromkeys(
                ("ok", "failed", "failed_x", "pending", "pending_x", "cancelled", "cancelled_x", "running", "running_x"), "0"
            )
        unit = 100 / self.total
        # green passed, red failed, grey waiting for a score, pale cancelled, blue running
        widths = [self.passed, self.failed, max(0, self.ran - self.passed - self.failed), self.cancelled, self.running]
        ok, bad, pending, cancelled, running = (n * unit for n in widths)
        return {
            "ok": f"{ok:.2f}",
            "failed": f"{bad:.2f}",
            "failed_x": f"{ok:.2f}",
            "pending": f"{pending:.2f}",
            "pending_x": f"{ok + bad:.2f}",
            "cancelled": f"{cancelled:.2f}",
            "cancelled_x": f"{ok + bad + pending:.2f}",
            "running": f"{running:.2f}",
            "running_x": f"{ok + bad + pending + cancelled:.2f}",
        }


def _tally(row: object, key: str) -> int:
    """A count of ``runs.lookups.tally_annotations`` (its names are built, so typed here)."""
    return int(getattr(row, f"tally_{key}"))


def lane_progress(*, run: Run) -> list[LaneProgress]:
    lanes = list(
        run.lanes.select_related("deployment")
        .order_by("lane_index")
        .annotate(
            total=Count("case_runs"),
            done=Count("case_runs", filter=Q(case_runs__status__in=list(CASE_TERMINAL))),
            completed=Count("case_runs", filter=Q(case_runs__status=CaseStatus.COMPLETED)),
            running=Count("case_runs", filter=Q(case_runs__status=CaseStatus.RUNNING)),
            **tally_annotations("case_runs__"),
            scored=Count("case_runs", filter=Q(case_runs__score_status=ScoreStatus.SCORED)),
            score_mean=Avg("case_runs__score", filter=Q(case_runs__score_status=ScoreStatus.SCORED)),
            steps=Sum("case_runs__step_count"),
            tool_calls=Sum("case_runs__tool_call_count"),
            tokens=Sum("case_runs__total_tokens"),
        )
    )
    waiting = _waiting_on_provider(run) if any(lane.running for lane in lanes) else {}
    latest: dict[int, RunEvent] = {}
    for lane in lanes:
        event = RunEvent.objects.filter(lane=lane).order_by("-sequence_number").only("event_type", "payload").first()
        if event is not None:
            latest[lane.pk] = event
    return [
        LaneProgress(
            lane=lane,
            total=lane.total,
            done=lane.done,
            completed=lane.completed,
            failed=_tally(lane, "failed"),
            cancelled=_tally(lane, "cancelled"),
            ran=_tally(lane, "ran"),
            running=lane.running,
            steps=lane.steps or 0,
            tool_calls=lane.tool_calls or 0,
            tokens=lane.tokens or 0,
            latest_event=latest.get(lane.pk),
            passed=_tally(lane, "passed"),
            scored=lane.scored,
            score_mean=lane.score_mean,
            waiting_on_provider=waiting.get(lane.pk, 0),
        )
        for lane in lanes
    ]


def _waiting_on_provider(run: Run) -> dict[int, int]:
    """Lane id → its running cases whose latest provider-limit event says they are waiting."""
    throttle = (ev.PROVIDER_THROTTLE_WAITING, ev.PROVIDER_THROTTLED)
    last = RunEvent.objects.filter(case_run=OuterRef("pk"), attempt=OuterRef("attempt"), event_type__in=throttle)
    rows = (
        CaseRun.objects.filter(run=run, status=CaseStatus.RUNNING)
        .annotate(last_throttle=Subquery(last.order_by("-sequence_number").values("event_type")[:1]))
        .filter(last_throttle=ev.PROVIDER_THROTTLE_WAITING)
        .values("lane_id")
        .annotate(cases=Count("pk"))
        .order_by()
    )
    return {row["lane_id"]: row["cases"] for row in rows}


def case_run_list(*, run: Run, lane_id: Any = None, trial: Any = None) -> QuerySet[CaseRun]:
    cases = CaseRun.objects.filter(run=run).select_related("lane").order_by("lane__lane_index", "position", "trial")
    for field, value in (("lane_id", lane_id), ("trial", trial)):
        if value not in (None, ""):
            try:
                cases = cases.filter(**{field: int(value)})
            except (TypeError, ValueError):
                cases = cases.none()
    return cases


def run_events_horizon(*, run_id: int) -> int | None:
    """The highest event id below which every event of the run that will ever exist is already
    committed (None: no limit), so a reader that advances its cursor to the last id it read never
    skips an event that commits later (docs/runs.md "Reading events").

    An event's id is taken when it is inserted, before its transaction commits: two lanes
    committing concurrently can make a lower id visible after a higher one was read. Every event
    is inserted under its lane row's lock, taken before its id (runs/events.py ``LaneRow``). So on
    PostgreSQL the horizon is the id sequence's last value read first, then a ``FOR SHARE`` on the
    run's lane rows, which waits for every writer that took an id up to it to commit. SQLite
    commits one writer at a time, in id order: no horizon is needed there.
    """
    if connection.vendor != "postgresql":
        return None
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_sequence_last_value(pg_get_serial_sequence('runs_runevent', 'id')::regclass)")
        horizon = cursor.fetchone()[0]
        cursor.execute("SELECT 1 FROM runs_runagent WHERE run_id = %s FOR SHARE", [run_id])
        cursor.fetchall()
    return int(horizon or 0)


def run_events_after(*, run: Run, after: Any = None, limit: int = 100, case_run: CaseRun | None = None) -> list[RunEvent]:
    """Events of the run (or one case) with id greater than ``after``, oldest first, payloads hydrated;
    only up to the run's commit horizon (:func:`run_events_horizon`): none is ever skipped."""
    events = RunEvent.objects.filter(run=run)
    horizon = run_events_horizon(run_id=run.pk)
    if horizon is not None:
        events = events.filter(id__lte=horizon)
    if case_run is not None:
        events = events.filter(case_run=case_run)
    try:
        after_id = int(after) if after not in (None, "") else 0
    except (TypeError, ValueError):
        after_id = 0
    rows = list(events.filter(id__gt=after_id).select_related("lane").order_by("id")[: max(1, min(int(limit), 1000))])
    for row in rows:
        if row.payload_ref:
            row.payload = payload_hydrate(row.payload)
    return rows


def run_events_latest(*, run: Run, after: Any = None, limit: int = 15) -> list[RunEvent]:
    """The newest events (at most ``limit``) after ``after``, oldest first: the live ticker (up to
    the run's commit horizon, like :func:`run_events_after`)."""
    events = RunEvent.objects.filter(run=run).select_related("lane")
    horizon = run_events_horizon(run_id=run.pk)
    if horizon is not None:
        events = events.filter(id__lte=horizon)
    try:
        if after not in (None, ""):
            events = events.filter(id__gt=int(after))
    except (TypeError, ValueError):
        pass
    rows = list(events.order_by("-id")[:limit])
    rows.reverse()
    return rows


# -- the results matrix --------------------------------------------------------------------------

MATRIX_FIELDS = (
    "pk", "lane_id", "case_key", "position", "status", "passed", "score", "score_status", "stop_reason", "attempt",
    "duration_ms", "total_tokens", "trial",
)  # fmt: skip


class CaseMatrixRow(TypedDict):
    """A case run's ``MATRIX_FIELDS``."""

    pk: int
    lane_id: int
    case_key: str
    position: int
    status: str
    passed: bool | None
    score: float | None
    score_status: str
    stop_reason: str
    attempt: int
    duration_ms: int | None
    total_tokens: int
    trial: int


def case_matrix_rows(*, run: Run, first_trials: bool = False) -> list[CaseMatrixRow]:
    """Every case run of the run (``first_trials``: trial 1 of each case) as a small dict (no
    outputs), in case order: one cheap query."""
    rows = CaseRun.objects.filter(run=run)
    if first_trials:
        rows = rows.filter(trial=1)
    values = rows.order_by("position", "case_key", "lane__lane_index", "trial").values(*MATRIX_FIELDS)
    return cast(list[CaseMatrixRow], list(values))


class MatrixTrialCounts(TypedDict):
    """Every trial of one case in one lane, counted (the matrix's ``k/n passed``)."""

    trials: int
    open: int  # queued or running
    running: int
    passed: int
    judged: int  # with a verdict
    score_mean: float | None  # over the finished trials with a score
    latency_mean: float | None  # ms, over the finished trials with a duration
    tokens_mean: float | None


_OPEN = [CaseStatus.QUEUED, CaseStatus.RUNNING]
_NO_VERDICT = [CaseStatus.QUEUED, CaseStatus.RUNNING, CaseStatus.CANCELLED]  # as runs/matrix.py words a cell


def case_matrix_trial_counts(*, run: Run) -> dict[tuple[int, str], MatrixTrialCounts]:
    """Per (lane id, case key), its trials counted in the database: one query, whatever the trials."""
    rows = (
        CaseRun.objects.filter(run=run)
        .values("lane_id", "case_key")
        .annotate(
            n_trials=Count("pk"),
            n_open=Count("pk", filter=Q(status__in=_OPEN)),
            n_running=Count("pk", filter=Q(status=CaseStatus.RUNNING)),
            n_passed=Count("pk", filter=Q(passed=True) & ~Q(status__in=_NO_VERDICT) & ~Q(score_status=ScoreStatus.ERRORED)),
            n_judged=Count("pk", filter=Q(passed__isnull=False) & ~Q(status__in=_NO_VERDICT) & ~Q(score_status=ScoreStatus.ERRORED)),
            mean_score=Avg("score", filter=Q(score__isnull=False) & ~Q(status__in=_OPEN)),
            mean_latency=Avg("duration_ms", filter=Q(duration_ms__isnull=False) & ~Q(status__in=_OPEN)),
            mean_tokens=Avg("total_tokens"),
        )
        .order_by()
    )
    return {
        (row["lane_id"], row["case_key"]): {
            "trials": row["n_trials"],
            "open": row["n_open"],
            "running": row["n_running"],
            "passed": row["n_passed"],
            "judged": row["n_judged"],
            "score_mean": row["mean_score"],
            "latency_mean": row["mean_latency"],
            "tokens_mean": row["mean_tokens"],
        }
        for row in rows
    }


def case_output_starts(*, case_run_ids: list[int], length: int = 160) -> dict[int, str | None]:
    """The first ``length`` characters of each case run's final output (None: no answer)."""
    rows = CaseRun.objects.filter(pk__in=case_run_ids).annotate(start=Substr("final_output", 1, length)).values_list("pk", "start")
    return dict(rows)


def case_cost_means(*, run: Run, case_keys: list[str]) -> dict[tuple[int, str], float | None]:
    """Per (lane id, case key) of ``case_keys``, the mean cost in USD of its priced trials (runs with trials)."""
    rows = (
        CaseScore.objects.filter(case_run__run=run, case_run__case_key__in=case_keys)
        .values("case_run__lane_id", "case_run__case_key")
        .annotate(mean_cost=Avg(Cast(KT("document__cost_usd"), FloatField())))
        .order_by()
    )
    return {(row["case_run__lane_id"], row["case_run__case_key"]): row["mean_cost"] for row in rows}


def case_costs(*, case_run_ids: list[int]) -> dict[int, float | None]:
    """Each scored case run's cost in USD, as its score priced it (None: not priced)."""
    rows = CaseScore.objects.filter(case_run_id__in=case_run_ids).values_list("case_run_id", "document__cost_usd")
    return {pk: float(cost) if isinstance(cost, int | float) else None for pk, cost in rows}


def run_masker(*, run: Run) -> Redactor:
    """Masks a security pack's planted values (the canaries) in what the results pages and exports
    show. Outputs are stored masked already (secrets and planted values); this is the second lock,
    and the only one for the case inputs, which come from the pack as written."""
    return Redactor(planted_values(pack_manifest(pack_version_id=run.pack_version_id).manifest))


def case_inputs_shown(*, run: Run, masker: Redactor | None = None, case_keys: list[str] | None = None) -> dict[str, JSON]:
    """The inputs of the run's cases (every case, or those of ``case_keys``: a page of the matrix)
    as the agent was given them (hidden keys dropped, planted values masked), by case key."""
    mask = masker or run_masker(run=run)
    case_runs = CaseRun.objects.filter(run=run) if case_keys is None else CaseRun.objects.filter(run=run, case_key__in=case_keys)
    rows = case_runs.order_by("case_key", "lane__lane_index").values_list("case_key", "case__payload", "regression_case__payload")
    found: dict[str, JSON] = {}
    for case_key, payload, regression_payload in rows:
        if case_key in found:
            continue
        chosen = regression_payload if isinstance(regression_payload, dict) else payload
        shown = visible_case(chosen if isinstance(chosen, dict) else {}).get("inputs")
        found[case_key] = mask.json(shown if shown is not None else [])
    return found


SEARCH_MAX_CHARS = 200


def case_keys_matching(*, run: Run, query: str, inputs: dict[str, JSON]) -> set[str]:
    """The case keys of the run whose key, inputs (as shown) or any lane's final output contains
    ``query`` (case-insensitive; at most ``SEARCH_MAX_CHARS``). ``inputs`` is ``case_inputs_shown``:
    the search reads what the page shows, so it is never an oracle for a masked value."""
    needle = query.strip()[:SEARCH_MAX_CHARS].casefold()
    if not needle:
        return set(inputs)
    keys = {key for key, shown in inputs.items() if needle in key.casefold() or needle in _searchable(shown)}
    by_output = CaseRun.objects.filter(run=run, final_output__icontains=needle).values_list("case_key", flat=True)
    return keys | set(by_output)


def _searchable(value: JSON) -> str:
    if isinstance(value, str):
        return value.casefold()
    return json.dumps(value, ensure_ascii=False, default=str).casefold()


def case_outputs(*, case_run_ids: list[int]) -> dict[int, str | None]:
    """Whole final outputs (the offline report), read 500 at a time."""
    found: dict[int, str | None] = {}
    for start in range(0, len(case_run_ids), 500):
        found.update(CaseRun.objects.filter(pk__in=case_run_ids[start : start + 500]).values_list("pk", "final_output"))
    return found


def case_output_full(*, case_run: CaseRun, masker: Redactor) -> str | None:
    """A case run's whole final output, planted values masked (None: no answer)."""
    output = CaseRun.objects.filter(pk=case_run.pk).values_list("final_output", flat=True).first()
    return masker.text(output) if output is not None else None


EXPORT_FIELDS = (
    "pk", "case_key", "lane_id", "lane__label", "lane__lane_index", "trial", "status", "stop_reason", "passed", "score",
    "score_status", "duration_ms", "input_tokens", "output_tokens", "total_tokens", "final_output", "case_score__document__cost_usd",
)  # fmt: skip


def results_rows(*, run: Run) -> Iterator[dict[str, Any]]:
    """Every case run of the run, in case order then lane order, read in chunks (the exports stream it)."""
    rows = CaseRun.objects.filter(run=run).order_by("position", "case_key", "lane__lane_index", "trial").values(*EXPORT_FIELDS)
    yield from rows.iterator(chunk_size=500)


def run_shares(*, run: Run) -> list[RunShare]:
    """The run's share links, newest first (tokens are never stored: only their state)."""
    return list(RunShare.objects.filter(run=run).select_related("created_by", "revoked_by").order_by("-created_at", "-id"))


def validator_keys(*, run: Run) -> list[str]:
    """The keys of the evaluation spec's validators, in declaration order."""
    spec = evaluation_spec_for(run)
    return [str(v["key"]) for v in spec.get("validators") or [] if isinstance(v, dict) and v.get("key")]


def validator_verdicts(*, run: Run, key: str) -> dict[int, ValidatorDetail]:
    """Per scored case run, the verdict of validator ``key`` (``verdict``, ``state``, ``normalized_score``, ``reason``)."""
    found: dict[int, ValidatorDetail] = {}
    rows = CaseScore.objects.filter(lane__run=run).values_list("case_run_id", "document__validator_details")
    for case_run_id, details in rows:
        stored: list[ValidatorDetail] = details if isinstance(details, list) else []
        for detail in stored:
            if isinstance(detail, dict) and detail.get("key") == key:
                found[case_run_id] = detail
                break
    return found


# -- the case replay -----------------------------------------------------------------------------


@dataclasses.dataclass
class CaseNeighbours:
    previous: CaseRun | None  # the case before this one in its lane, same trial
    next: CaseRun | None
    same_case: list[CaseRun]  # the same case and trial in the run's other lanes, in lane order
    trials: list[CaseRun] = dataclasses.field(default_factory=list)  # every trial of this case in this lane (one: no switcher)
    previous_trial: CaseRun | None = None
    next_trial: CaseRun | None = None


def case_neighbours(*, case_run: CaseRun) -> CaseNeighbours:
    """The cases before and after this one in its lane (same trial), the same case in the other
    lanes, and this case's other trials in its lane (docs/runs.md, "Trials")."""
    lane_cases = CaseRun.objects.filter(lane_id=case_run.lane_id, trial=case_run.trial).only(
        "pk", "case_key", "position", "status", "trial"
    )
    previous = lane_cases.filter(Q(position__lt=case_run.position) | Q(position=case_run.position, pk__lt=case_run.pk))
    following = lane_cases.filter(Q(position__gt=case_run.position) | Q(position=case_run.position, pk__gt=case_run.pk))
    same = (
        CaseRun.objects.filter(run_id=case_run.run_id, case_key=case_run.case_key, trial=case_run.trial)
        .exclude(pk=case_run.pk)
        .select_related("lane")
        .order_by("lane__lane_index")
    )
    trials = list(
        CaseRun.objects.filter(lane_id=case_run.lane_id, case_key=case_run.case_key)
        .only("pk", "trial", "status", "passed", "score_status", "case_key")
        .order_by("trial")
    )
    if len(trials) < 2:
        trials = []
    index = next((i for i, t in enumerate(trials) if t.pk == case_run.pk), -1)
    return CaseNeighbours(
        previous=previous.order_by("-position", "-pk").first(),
        next=following.order_by("position", "pk").first(),
        same_case=list(same),
        trials=trials,
        previous_trial=trials[index - 1] if index > 0 else None,
        next_trial=trials[index + 1] if 0 <= index < len(trials) - 1 else None,
    )


def case_events(*, case_run: CaseRun, after_sequence: int = 0, limit: int = 2000) -> list[RunEvent]:
    """A case's events after ``after_sequence``, in order, payloads hydrated."""
    rows = list(RunEvent.objects.filter(case_run=case_run, sequence_number__gt=after_sequence).order_by("sequence_number")[:limit])
    for row in rows:
        if row.payload_ref:
            row.payload = payload_hydrate(row.payload)
    return rows


def case_events_before(*, case_run: CaseRun, sequence: int, limit: int = 60) -> list[RunEvent]:
    """Up to ``limit`` events just before ``sequence``, oldest first: where the steps, model and
    tool calls that end on a replay page started (for their durations)."""
    rows = list(RunEvent.objects.filter(case_run=case_run, sequence_number__lt=sequence).order_by("-sequence_number")[:limit])
    rows.reverse()
    for row in rows:
        if row.payload_ref:
            row.payload = payload_hydrate(row.payload)
    return rows


def model_call_inputs(*, case_run: CaseRun, upto: RunEvent) -> list[RunEvent]:
    """The model calls of ``upto``'s attempt up to and including it: together they hold its full input."""
    rows = list(
        RunEvent.objects.filter(
            case_run=case_run, attempt=upto.attempt, event_type=ev.MODEL_CALL_STARTED, sequence_number__lte=upto.sequence_number
        ).order_by("sequence_number")
    )
    for row in rows:
        if row.payload_ref:
            row.payload = payload_hydrate(row.payload)
    return rows


def model_call_pricer(*, case_run: CaseRun) -> Callable[[str, str, int, int], float | None]:
    """Prices one model call's tokens from the sources scoring uses (the pack's pricing rows,
    free for ``scripted``, the workspace's overrides, the price library)."""
    spec = evaluation_spec_for(case_run.run)
    pricing: PricingConfig | None = spec.get("pricing")
    if not isinstance(pricing, dict):
        pricing = {}
    spec_rows: list[ModelPrice] = [row for row in pricing.get("models") or [] if isinstance(row, dict)]
    workspace_rows: list[ModelPrice] | None = None

    def price(provider_key: str, model_id: str, input_tokens: int, output_tokens: int) -> float | None:
        nonlocal workspace_rows
        if workspace_rows is None:  # read once, and only when a call has tokens to price
            workspace_rows = workspace_prices_for(case_run)
        priced = price_usage(spec_rows, workspace_rows, provider_key or case_run.lane.provider_key, model_id, input_tokens, output_tokens)
        return priced.cost_usd if priced is not None else None

    return price


def run_attachments(*, run: Run) -> list[RunArtifact]:
    """Artifacts attached to the run, oldest first (run page and API)."""
    return list(
        RunArtifact.objects.filter(run=run)
        .select_related("artifact__workspace", "artifact__created_by", "attached_by")
        .order_by("attached_at", "id")
    )


def case_live_totals(*, case_run: CaseRun) -> dict[str, int] | None:
    """Steps, tool calls and tokens of a case that is still running, from its events so far (the
    case's own counters are written when it finishes). None once it is finished."""
    if case_run.is_terminal:
        return None
    events = RunEvent.objects.filter(case_run=case_run, attempt=case_run.attempt)
    totals = events.aggregate(
        steps=Count("pk", filter=Q(event_type=ev.SYSTEM_STEP_STARTED)),
        tool_calls=Count("pk", filter=Q(event_type__in=list(ev.TOOL_CALL_RESULTS)) & ~Q(payload__tool_name="submit")),
    )
    usage = events.filter(event_type=ev.MODEL_CALL_COMPLETED).values_list("payload__usage__input_tokens", "payload__usage__output_tokens")
    totals["input_tokens"] = sum(int(i or 0) for i, _ in usage)
    totals["output_tokens"] = sum(int(o or 0) for _, o in usage)
    return totals
