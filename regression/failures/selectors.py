"""The failures review of a run: every failed case classified and grouped into clusters.

A bounded number of queries whatever the run's size (lanes, candidate case runs with their score
documents, the tool-failure and egress-denial events, and — only when some were too large to
store inline — those events' payloads); the classifying happens in Python
(regression/failures/classify.py). Filters apply after clustering, so cluster ids and counts do not
depend on them.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping
from typing import Any, TypedDict, cast
from urllib.parse import quote

from django.db.models import Q
from django.db.models.fields.json import KT

from core.errors import DomainError
from engine.events import SANDBOX_EGRESS_DENIED, TOOL_CALL_FAILED
from engine.scoring.documents import CaseScoreDocument
from engine.types import JSON
from regression.failures.classify import CLASSES, SEVERITIES, CaseFacts, EventFact, Failure, classify, is_cancelled
from runs.events import payload_hydrate
from runs.lookups import failed_q
from runs.models import CaseRun, CaseStatus, Lane, Run, RunEvent, ScoreStatus

SEVERITY_RANK = {"blocking": 0, "warning": 1, "info": 2}
EVENT_TYPES = (TOOL_CALL_FAILED, SANDBOX_EGRESS_DENIED)


class FailureFilterError(DomainError):
    """A filter value the review does not know (a 400); ``field`` names the query parameter."""


@dataclasses.dataclass(frozen=True)
class FailureFilters:
    lane: int | None = None
    failure_class: str = ""
    cluster: str = ""
    severity: str = ""

    @property
    def active(self) -> bool:
        return bool(self.lane or self.failure_class or self.cluster or self.severity)

    def query(self, **changes: Any) -> dict[str, str]:
        """The filters as query parameters (for links), with ``changes`` applied."""
        values = {"lane": self.lane or "", "class": self.failure_class, "cluster": self.cluster, "severity": self.severity}
        values.update(changes)
        return {k: str(v) for k, v in values.items() if v}


@dataclasses.dataclass
class CaseFailure:
    case_run_id: int
    case_key: str
    lane_id: int
    lane_label: str
    failure: Failure
    replay_url: str
    evidence_url: str


@dataclasses.dataclass
class Cluster:
    fingerprint: str
    failure_class: str
    title: str
    cases: list[CaseFailure]

    @property
    def class_label(self) -> str:
        return CLASSES[self.failure_class]

    @property
    def severity(self) -> str:
        return min((c.failure.severity for c in self.cases), key=SEVERITY_RANK.__getitem__, default="info")

    @property
    def lanes(self) -> list[str]:
        return sorted({c.lane_label for c in self.cases})

    @property
    def failed_validators(self) -> list[str]:
        return sorted({v["label"] for c in self.cases for v in c.failure.failed_validators})

    @property
    def failed_dimensions(self) -> list[str]:
        return sorted({d["key"] for c in self.cases for d in c.failure.failed_dimensions})


@dataclasses.dataclass
class FailureReview:
    run: Run
    filters: FailureFilters
    lanes: list[tuple[int, str]]
    all_clusters: list[Cluster]  # every cluster, unfiltered (the filter's choices, the counts)
    clusters: list[Cluster]  # what the filters keep, each with only the cases they keep
    cancelled_cases: int
    pending_cases: int

    @property
    def failed_cases(self) -> int:
        """Cases that failed (the count the run page's link shows, see ``failed_case_count``)."""
        return sum(c.failure.case_failed for cluster in self.all_clusters for c in cluster.cases)

    @property
    def info_cases(self) -> int:
        """Cases that passed but had failed checks (a recovered tool failure, a denied call…)."""
        return sum(not c.failure.case_failed for cluster in self.all_clusters for c in cluster.cases)

    @property
    def shown_cases(self) -> int:
        return sum(len(cluster.cases) for cluster in self.clusters)

    def counts(self, attribute: str, labels: Mapping[str, str]) -> list[tuple[str, str, int]]:
        found = Counter(getattr(c.failure, attribute) for cluster in self.all_clusters for c in cluster.cases)
        return [(key, label, found.get(key, 0)) for key, label in labels.items()]

    @property
    def by_class(self) -> list[tuple[str, str, int]]:
        return self.counts("failure_class", CLASSES)

    @property
    def by_severity(self) -> list[tuple[str, str, int]]:
        return self.counts("severity", SEVERITIES)


# -- filters --------------------------------------------------------------------------------------


def failure_filters_parse(query: Mapping[str, Any], *, lane_ids: set[int]) -> FailureFilters:
    """Lane, class and severity from the query string; an unknown value names its parameter."""
    lane_text = str(query.get("lane") or "").strip()
    lane: int | None = None
    if lane_text:
        try:
            lane = int(lane_text)
        except ValueError:
            raise FailureFilterError(f"lane must be the id of a lane of this run (got {lane_text!r}).", field="lane") from None
        if lane not in lane_ids:
            raise FailureFilterError(f"lane {lane} is not a lane of this run.", field="lane")
    failure_class = str(query.get("class") or "").strip()
    if failure_class and failure_class not in CLASSES:
        raise FailureFilterError(f"class must be one of {', '.join(CLASSES)} (got {failure_class!r}).", field="class")
    severity = str(query.get("severity") or "").strip()
    if severity and severity not in SEVERITIES:
        raise FailureFilterError(f"severity must be one of {', '.join(SEVERITIES)} (got {severity!r}).", field="severity")
    return FailureFilters(lane=lane, failure_class=failure_class, cluster=str(query.get("cluster") or "").strip(), severity=severity)


def _keep(case: CaseFailure, filters: FailureFilters) -> bool:
    return (
        (filters.lane is None or case.lane_id == filters.lane)
        and (not filters.failure_class or case.failure.failure_class == filters.failure_class)
        and (not filters.severity or case.failure.severity == filters.severity)
    )


def _filtered(clusters: list[Cluster], filters: FailureFilters) -> list[Cluster]:
    if filters.cluster and filters.cluster not in {c.fingerprint for c in clusters}:
        raise FailureFilterError(f"cluster {filters.cluster!r} is not a cluster of this run's failures.", field="cluster")
    kept = []
    for cluster in clusters:
        if filters.cluster and cluster.fingerprint != filters.cluster:
            continue
        cases = [c for c in cluster.cases if _keep(c, filters)]
        if cases:
            kept.append(dataclasses.replace(cluster, cases=cases))
    return kept


# -- reading the rows -----------------------------------------------------------------------------


def _candidates(run: Run) -> Q:
    """Case runs that may have failed something: failed or cancelled, not passed, or passed with a
    failed or unavailable validator, a security finding, a failed tool call or a denied egress."""
    summary = "case_score__document__validator_summary__"
    counts = "case_score__document__security__counts__"
    with_events = RunEvent.objects.filter(run=run, event_type__in=EVENT_TYPES, case_run__isnull=False).values("case_run_id")
    return (
        Q(status__in=[CaseStatus.FAILED, CaseStatus.CANCELLED])
        | Q(passed=False)
        | Q(**{f"{summary}fail__gt": 0})
        | Q(**{f"{summary}error__gt": 0})
        | Q(**{f"{summary}unavailable__gt": 0})
        | Q(**{f"{counts}warning__gt": 0})  # an unconfirmed adversarial finding (docs/security-evaluation.md §4)
        | Q(**{f"{counts}low__gt": 0})
        | Q(**{f"{counts}medium__gt": 0})
        | Q(**{f"{counts}high__gt": 0})
        | Q(**{f"{counts}critical__gt": 0})
        | Q(pk__in=with_events)
    )


class _CaseRow(TypedDict):
    pk: int
    case_key: str
    lane_id: int
    status: str
    stop_reason: str
    error: str
    provider_failure: JSON
    passed: bool | None
    score_status: str
    case_score__document: CaseScoreDocument | None


class _EventRow(TypedDict):
    pk: int
    case_run_id: int
    event_type: str
    event_id: str
    payload_ref: str
    tool: JSON  # a few payload fields (the stored file's when the payload is not inline)
    origin: JSON
    host: JSON
    content: JSON
    reason: JSON


def _case_rows(run: Run) -> list[_CaseRow]:
    rows = CaseRun.objects.filter(run=run).filter(_candidates(run)).order_by("lane_id", "position", "pk")
    values = rows.values(
        "pk", "case_key", "lane_id", "status", "stop_reason", "error", "provider_failure", "passed", "score_status", "case_score__document",
    )  # fmt: skip
    return cast(list[_CaseRow], [dict(row) for row in values])


def _tool_error(content: JSON) -> str:
    """The message of a failed tool call's result (``{"error": "…"}``, engine/tools/results.py)."""
    if not isinstance(content, str):
        return ""
    try:
        value = json.loads(content)
    except ValueError:
        return content[:300]
    message = value.get("error") if isinstance(value, dict) else None
    return message if isinstance(message, str) else content[:300]


def _event_facts(run: Run, case_run_ids: set[int]) -> dict[int, list[EventFact]]:
    values = (
        RunEvent.objects.filter(run=run, event_type__in=EVENT_TYPES, case_run__isnull=False)
        .order_by("case_run_id", "sequence_number")
        .values("pk", "case_run_id", "event_type", "event_id", "payload_ref",
                tool=KT("payload__tool_name"), origin=KT("payload__failure_origin"), host=KT("payload__host"),
                content=KT("payload__result__content"), reason=KT("payload__reason"))
    )  # fmt: skip
    rows = cast(list[_EventRow], [dict(row) for row in values])
    stored = [r["pk"] for r in rows if r["payload_ref"] and r["case_run_id"] in case_run_ids]
    if stored:  # payloads too large to store inline: read the stored file for the few fields
        full = {pk: payload_hydrate(p) for pk, p in RunEvent.objects.filter(pk__in=stored).values_list("pk", "payload")}
        for row in rows:
            payload = full.get(row["pk"])
            if isinstance(payload, dict):
                result = payload.get("result")
                content = result.get("content") if isinstance(result, dict) else None
                row.update(
                    {"tool": payload.get("tool_name"), "origin": payload.get("failure_origin"), "host": payload.get("host"),
                     "content": content, "reason": payload.get("reason")}
                )  # fmt: skip
    facts: dict[int, list[EventFact]] = {}
    for r in rows:
        message = _tool_error(r["content"]) if r["event_type"] == TOOL_CALL_FAILED else str(r["reason"] or "")
        fact = EventFact(r["event_type"], r["event_id"], str(r["tool"] or ""), str(r["origin"] or ""), str(r["host"] or ""), message[:300])
        facts.setdefault(r["case_run_id"], []).append(fact)
    return facts


def _facts(row: _CaseRow, events: list[EventFact]) -> CaseFacts:
    document = row["case_score__document"]
    return CaseFacts(
        status=row["status"],
        stop_reason=row["stop_reason"] or "",
        error=row["error"] or "",
        provider_failure=row["provider_failure"] if isinstance(row["provider_failure"], dict) else None,
        passed=row["passed"],
        scored=row["score_status"] != ScoreStatus.PENDING,
        document=document if isinstance(document, dict) else None,
        events=tuple(events),
    )


def case_replay_url(*, workspace_slug: str, run_id: int, case_run_id: int) -> str:
    return f"/w/{workspace_slug}/runs/{run_id}/cases/{case_run_id}/"


def case_evidence_url(*, replay_url: str, event_id: str) -> str:
    """The replay opened on the page that holds the event, scrolled to it."""
    return f"{replay_url}?event={quote(event_id, safe='')}#event-{event_id}" if event_id else replay_url


def _clusters(run: Run, lanes: dict[int, str]) -> tuple[list[Cluster], int]:
    rows = _case_rows(run)
    events = _event_facts(run, {r["pk"] for r in rows})
    clusters: dict[str, Cluster] = {}
    cancelled = 0
    slug = run.workspace.slug
    for row in rows:
        facts = _facts(row, events.get(row["pk"], []))
        failure = classify(facts)
        if failure is None:
            cancelled += is_cancelled(facts)
            continue
        replay = case_replay_url(workspace_slug=slug, run_id=run.pk, case_run_id=row["pk"])
        case = CaseFailure(
            case_run_id=row["pk"],
            case_key=row["case_key"],
            lane_id=row["lane_id"],
            lane_label=lanes.get(row["lane_id"], ""),
            failure=failure,
            replay_url=replay,
            evidence_url=case_evidence_url(replay_url=replay, event_id=failure.evidence_event_id),
        )
        cluster = clusters.setdefault(failure.fingerprint, Cluster(failure.fingerprint, failure.failure_class, failure.title, []))
        cluster.cases.append(case)
    ordered = sorted(clusters.values(), key=lambda c: (SEVERITY_RANK[c.severity], -len(c.cases), c.title))
    return ordered, cancelled


def failure_review(*, run: Run, query: Mapping[str, Any] | None = None) -> FailureReview:
    """The run's failure clusters, filtered by ``query`` (``lane``, ``class``, ``cluster``, ``severity``).

    Raises :class:`FailureFilterError` for a value the run does not have."""
    lanes = dict(Lane.objects.filter(run=run).order_by("lane_index").values_list("pk", "label"))
    filters = failure_filters_parse(query or {}, lane_ids=set(lanes))
    clusters, cancelled = _clusters(run, lanes)
    pending = CaseRun.objects.filter(run=run, status=CaseStatus.COMPLETED, score_status=ScoreStatus.PENDING).count()
    return FailureReview(
        run=run,
        filters=filters,
        lanes=list(lanes.items()),
        all_clusters=clusters,
        clusters=_filtered(clusters, filters),
        cancelled_cases=cancelled,
        pending_cases=pending,
    )


def failed_case_count(*, run: Run) -> int:
    """How many of the run's cases failed, cancelled ones aside: the count the run page's link
    shows, in one query; the same number as :attr:`FailureReview.failed_cases`."""
    return CaseRun.objects.filter(run=run).filter(failed_q()).count()
