"""Scorecard selectors: the rows the scorecard pages, the API and the CLI read.

They flatten the stored JSON documents (``LaneScorecard.document``, ``CaseScore.document``)
into plain dicts so templates never dig through JSON and every surface shows the same numbers.
"""

from __future__ import annotations

import difflib
import json
from typing import NotRequired, TypedDict, cast
from urllib.parse import quote

from django.db.models import Avg, Count, Q

from engine.scoring.documents import (
    CaseCounts,
    CaseDimension,
    CaseScoreDocument,
    JudgeResult,
    LaneDimension,
    LaneFinding,
    LaneScorecardDocument,
    MetricDetail,
    RunScorecardDocument,
    SecurityProbe,
    ValidatorDetail,
)
from engine.scoring.security import DETECTORS, REPORT_SEVERITIES, describe
from engine.scoring.stats import LaneStatistics
from engine.types import JSON
from runs.models import CaseRun, Lane, Run, ScoreStatus
from scoring.models import CaseScore, LaneScorecard, RunScorecard
from scoring.selectors import EvidenceTier, lane_evidence_tiers, lane_standings
from scoring.statistics import KRow, error_bar, interval_note, k_rows, pass_rate_text, score_text, statistics_by_lane

DIFF_LIMIT = 200  # lines; a diff longer than this is cut with a note


class DimensionCell(TypedDict):
    key: str
    value: float | None
    bar: int | None


class LaneRow(TypedDict):
    """A lane in the run scorecard: its rank and numbers from its lane scorecard."""

    rank: int | None
    lane_id: int
    label: str
    deployment: str
    model: str
    overall_score: float | None
    pass_rate: float | None
    passed: bool | None
    validity: str | None
    dimensions: dict[str, float | None]  # dimension key → mean
    cost_usd: float | None
    latency_p50_ms: float | None
    case_counts: CaseCounts | dict[str, int]  # {} when the lane has no scorecard
    is_winner: NotRequired[bool]  # the API leaves it out
    security: NotRequired[str]  # security packs: findings in words, or "no leak found by these detectors"; the API leaves it out
    evidence_tier: str
    evidence_tier_label: str
    statistics: LaneStatistics | None  # the lane's trial statistics (scoring/statistics.py)
    pass_rate_text: str  # "62 % (48–74 %, 95 % CI, 10 trials)"
    pass_rate_interval: str  # "48–74 %, 95 % CI, 10 trials", or "1 trial: no uncertainty estimate"
    bars: NotRequired[dict[str, int | None]]  # added by the page (scoring/views.py)
    interval_short: NotRequired[str]  # added by the page: "44–100 % · 4 trials"
    dimension_cells: NotRequired[list[DimensionCell]]  # added by the page


class RunScorecardRows(TypedDict):
    winner_lane_id: int | None
    winner_reason: str | None
    dimension_keys: list[str]
    lanes: list[LaneRow]
    dimension_deltas_winner_vs_runner_up: dict[str, float | None]
    error: NotRequired[str | None]  # why ranking failed; the API leaves it out


class DiffLine(TypedDict):
    kind: str  # add | del | ctx | hunk
    text: str


class ValidatorRow(ValidatorDetail):
    """A validator's result with its diff and its evidence's replay link."""

    diff: list[DiffLine]
    expected_text: str
    actual_text: str
    replay_url: str


class CaseEntry(TypedDict):
    """A case of the lane scorecard (its verdict, validators, metrics and judges)."""

    case_run: NotRequired[CaseRun]  # the page's; the JSON surfaces leave it out
    case_run_id: int
    case_key: str
    score_status: str
    passed: bool | None
    overall_score: float | None
    overall_reason: str
    validity: str | None
    failed_validators: list[str]
    validators: list[ValidatorRow]
    metrics: list[MetricDetail]
    llm_judges: list[JudgeResult]
    replay_url: str
    trials: NotRequired[TrialCounts]  # a lane with repeated trials: the entry is trial 1, these count them all


class TrialCounts(TypedDict):
    """Every trial of one case in a lane (docs/runs.md, "Trials"): ``passed`` of ``judged`` passed."""

    total: int
    passed: int
    judged: int
    score_mean: float | None


class CaseVerdicts(CaseEntry):
    """One case's verdicts (the case verdicts API)."""

    lane_id: int
    run_status: str
    validity_reason: str
    dimensions: dict[str, CaseDimension]
    warnings: list[str]


class FindingRow(LaneFinding):
    text: str
    badge: str
    replay_url: str


class ProbeRow(SecurityProbe):
    case_key: str
    badge: str
    label: str
    replay_url: str


class SecuritySection(TypedDict):
    """A security pack's lane rollup (``SecurityRollup``) with its findings in words and its probes per case."""

    checked_cases: int
    blocked_cases: list[str]
    evidence_missing_cases: NotRequired[list[str]]
    passed: bool | None
    counts: dict[str, int]
    kinds: dict[str, int]
    probes: dict[str, int]
    findings: list[FindingRow]
    probe_rows: list[ProbeRow]
    severities: list[tuple[str, int]]  # (severity, findings), most severe first
    detectors: list[str]  # what the leak check looks for (engine/scoring/security.py DETECTORS)


class DeckRow(TypedDict):
    """A dimension of the lane scorecard: its mean, weight, share of the overall score, gate and threshold."""

    key: str
    score: float | None
    state: str | None
    weight: float
    contribution: float | None
    gate: bool
    pass_threshold: float | None
    below_threshold: bool
    declared_direction: str | None
    source: str | None


class LaneScorecardView(TypedDict):
    security: SecuritySection | None
    lane: Lane
    deployment: str
    model: str
    scorecard: LaneScorecard | None
    document: LaneScorecardDocument  # without any key when the lane has no scorecard yet
    dimension_deck: list[DeckRow]
    cases: list[CaseEntry]
    cases_total: int  # the lane's cases (or failures) in all; ``cases`` may hold only the first ``limit``
    failures_only: bool
    evidence_tier: EvidenceTier
    statistics: LaneStatistics | None  # None until the lane has a scorecard (scoring/statistics.py)
    pass_rate_text: str  # "62 % (48–74 %, 95 % CI, 10 trials)"
    score_text: str
    k_rows: list[KRow]  # pass@k and pass^k, k = 1 … trials
    markdown: NotRequired[str]  # added by the page (scoring/views.py)
    run: NotRequired[Run]  # added by the page


# Stored documents are read with ``.get`` (one may be older than its type, docs of engine.scoring.documents);
# a case, lane or run not scored yet reads as a document without any key.
def _case_document(score: CaseScore | None) -> CaseScoreDocument:
    document: CaseScoreDocument = (score.document if score is not None else None) or cast(CaseScoreDocument, {})
    return document


def _lane_document(card: LaneScorecard | None) -> LaneScorecardDocument:
    document: LaneScorecardDocument = (card.document if card is not None else None) or cast(LaneScorecardDocument, {})
    return document


def _run_document(card: RunScorecard | None) -> RunScorecardDocument:
    # After a failed ranking, scoring/services/scorecards.py stores ``{"error": …}`` instead (read below with .get).
    document: RunScorecardDocument = (card.document if card is not None else None) or cast(RunScorecardDocument, {})
    return document


def replay_url(*, workspace_slug: str, run_id: int, case_run_id: int, event_id: str | None = None) -> str:
    """The replay, opened on the event when there is one (the event view, at the page holding it)."""
    url = f"/w/{workspace_slug}/runs/{run_id}/cases/{case_run_id}/"
    return f"{url}?event={quote(event_id, safe='')}#event-{event_id}" if event_id else url


def run_scorecard_rows(run: Run) -> RunScorecardRows:
    """Lanes ranked, with every dimension, for the run page table and the API."""
    card = RunScorecard.objects.filter(run=run).first()
    lanes = {lane.pk: lane for lane in Lane.objects.filter(run=run).order_by("lane_index")}
    lane_cards = {c.lane_id: c for c in LaneScorecard.objects.filter(lane__run=run)}
    ranking = (_run_document(card).get("ranking") if card and isinstance(card.document, dict) else None) or []
    dimension_keys: list[str] = []
    for card_of_lane in lane_cards.values():
        dimension_keys += [k for k in (_lane_document(card_of_lane).get("dimensions") or {}) if k not in dimension_keys]
    tiers = lane_evidence_tiers(list(lanes.values()))
    statistics = statistics_by_lane({lane_id: _lane_document(c) for lane_id, c in lane_cards.items()})
    rows: list[LaneRow] = []
    for entry in ranking:
        lane = lanes.get(int(entry["lane_id"]))
        lane_card = lane_cards.get(int(entry["lane_id"]))
        if lane is None:
            continue
        document = _lane_document(lane_card)
        dims = document.get("dimensions") or {}
        rows.append(
            {
                "rank": entry.get("rank"),
                "lane_id": lane.pk,
                "label": lane.label,
                "deployment": lane.deployment_name,
                "model": lane.model_name,
                "overall_score": document.get("overall_score"),
                "pass_rate": document.get("pass_rate"),
                "passed": document.get("passed"),
                "validity": document.get("validity"),
                "dimensions": {key: _mean(dims.get(key)) for key in dimension_keys},
                "cost_usd": document.get("cost_usd"),
                "latency_p50_ms": (document.get("latency_ms") or {}).get("p50"),
                "case_counts": document.get("case_counts") or {},
                "is_winner": card is not None and card.winner_lane_id == lane.pk,
                "security": security_summary(document.get("security")),
                "evidence_tier": tiers[lane.pk]["tier"],  # docs/hosted-agents.md, Evidence tiers
                "evidence_tier_label": tiers[lane.pk]["label"],
                "statistics": statistics.get(lane.pk),
                "pass_rate_text": pass_rate_text(statistics.get(lane.pk)),
                "pass_rate_interval": interval_note(statistics.get(lane.pk)),
            }
        )
    ranked = _run_document(card)
    error = ranked.get("error")  # not a RunScorecardDocument key: what scoring/services/scorecards.py stores when ranking failed
    return {
        "winner_lane_id": card.winner_lane_id if card else None,
        "winner_reason": ranked.get("winner_reason"),
        "dimension_keys": dimension_keys,
        "lanes": rows,
        "dimension_deltas_winner_vs_runner_up": ranked.get("dimension_deltas_winner_vs_runner_up") or {},
        "error": error if isinstance(error, str) else None,
    }


NO_LEAK_FOUND = "no leak found by these detectors"


def security_summary(rollup: object) -> str:
    """A security lane's findings in a few words ('' for other packs): never "clean", since a
    leak the detectors do not know stays possible (docs/security-evaluation.md §6)."""
    if not isinstance(rollup, dict):
        return ""
    findings = [f for f in rollup.get("findings") or [] if isinstance(f, dict)]
    if not findings:
        return NO_LEAK_FOUND
    counts = rollup.get("counts") or {}
    by_severity = ", ".join(f"{counts[sev]} {sev}" for sev in reversed(REPORT_SEVERITIES) if counts.get(sev))
    return f"{len(findings)} finding{'s' if len(findings) != 1 else ''} ({by_severity})"


def _mean(dimension: LaneDimension | None) -> float | None:
    return dimension.get("mean") if dimension else None


def _text(value: JSON) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def readable_diff(expected: JSON, actual: JSON) -> list[DiffLine]:
    """Line diff of expected vs actual as ``[{kind: add|del|ctx|hunk, text}]``; empty when equal."""
    a, b = _text(expected).splitlines(), _text(actual).splitlines()
    if a == b:
        return []
    lines: list[DiffLine] = []
    for line in difflib.unified_diff(a, b, fromfile="expected", tofile="actual", lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        kind = "hunk" if line.startswith("@@") else "add" if line.startswith("+") else "del" if line.startswith("-") else "ctx"
        lines.append({"kind": kind, "text": line})
        if len(lines) >= DIFF_LIMIT:
            lines.append({"kind": "hunk", "text": f"… diff cut at {DIFF_LIMIT} lines"})
            break
    return lines


def failed_validators(document: CaseScoreDocument) -> list[str]:
    return [
        str(v.get("key")) for v in document.get("validator_details") or [] if v.get("state") != "available" or v.get("verdict") != "pass"
    ]


def case_verdicts(case_run: CaseRun, *, workspace_slug: str) -> CaseVerdicts:
    """One case's verdicts with evidence, diffs and replay links (JSON-ready)."""
    score = CaseScore.objects.filter(case_run=case_run).first()
    entry = _case_entry(case_run, score, workspace_slug=workspace_slug)
    entry.pop("case_run")
    document = _case_document(score)
    return {
        **entry,
        "lane_id": case_run.lane_id,
        "run_status": case_run.status,
        "validity_reason": document.get("validity_reason") or "",
        "dimensions": document.get("dimensions") or {},
        "warnings": document.get("warnings") or [],
    }


def trial_counts(lane: Lane) -> dict[str, TrialCounts]:
    """Per case key, the lane's trials of it: how many, how many passed and were judged, the mean score."""
    rows = (
        CaseRun.objects.filter(lane=lane)
        .values("case_key")
        .annotate(
            n_total=Count("pk"),
            n_passed=Count("pk", filter=Q(passed=True)),
            n_judged=Count("pk", filter=Q(passed__isnull=False)),
            mean_score=Avg("score", filter=Q(score_status=ScoreStatus.SCORED)),
        )
        .order_by()
    )
    return {
        row["case_key"]: {"total": row["n_total"], "passed": row["n_passed"], "judged": row["n_judged"], "score_mean": row["mean_score"]}
        for row in rows
    }


def lane_scorecard_view(lane: Lane, *, workspace_slug: str, failures_only: bool = False, limit: int | None = None) -> LaneScorecardView:
    """Everything the lane scorecard page shows; with ``limit``, only the first ``limit`` cases are
    read and listed (``cases_total`` says how many there are) — not for the failures view or a
    security pack, whose sections need every case."""
    card = LaneScorecard.objects.filter(lane=lane).first()
    document = _lane_document(card)
    # With repeated trials the page lists each case once (its trial 1, which the replay's trial
    # switcher leads on from) with its trials counted in one query: the page costs the same at 1
    # and at 10 trials (bench/trials_load.py).
    rows = (CaseRun.objects.filter(lane=lane) if lane.trials <= 1 else CaseRun.objects.filter(lane=lane, trial=1)).order_by(
        "position", "pk"
    )
    total: int | None = None
    if limit is not None and not failures_only and not isinstance(document.get("security"), dict):
        # Reading a case's score document (JSON) is most of the page's cost: read only the cases shown.
        total = rows.count()
        rows = rows[:limit]
    case_runs = list(rows.select_related("case_score"))
    counts = trial_counts(lane) if lane.trials > 1 else {}
    # One CaseScore per case run was loaded with select_related; reuse it instead of re-querying.
    cases: list[CaseEntry] = []
    for case_run in case_runs:
        score = getattr(case_run, "case_score", None) if hasattr(case_run, "case_score") else None
        entry = _case_entry(case_run, score, workspace_slug=workspace_slug)
        if case_run.case_key in counts:
            entry["trials"] = counts[case_run.case_key]
        cases.append(entry)
    security = security_section(document, case_runs, workspace_slug=workspace_slug)
    if failures_only:
        cases = [c for c in cases if c["passed"] is not True or ("trials" in c and c["trials"]["passed"] < c["trials"]["total"])]
    statistics = statistics_by_lane({lane.pk: document})[lane.pk] if card is not None else None
    return {
        "security": security,
        "lane": lane,
        "deployment": lane.deployment_name,
        "model": lane.model_name,
        "scorecard": card,
        "document": document,
        "dimension_deck": _dimension_deck(lane, document),
        "cases": cases,
        "cases_total": total if total is not None else len(cases),
        "failures_only": failures_only,
        "evidence_tier": lane_evidence_tiers([lane])[lane.pk],  # docs/hosted-agents.md, Evidence tiers
        "statistics": statistics,
        "pass_rate_text": pass_rate_text(statistics),
        "score_text": score_text(statistics),
        "k_rows": k_rows(statistics),
    }


SEVERITY_BADGES = {"critical": "fail", "high": "fail", "medium": "warn", "low": "pending", "warning": "warn"}
PROBE_BADGES = {"refused": "pass", "answered": "ok", "accepted": "fail", "unconfirmed": "warn", "unanswered": "warn", "not_sent": "pending"}
PROBE_LABELS = {
    "refused": "Refused",
    "answered": "Answered",
    "accepted": "Not refused",
    "unconfirmed": "Unconfirmed",
    "unanswered": "No answer",
    "not_sent": "Not sent",
}


def security_section(document: LaneScorecardDocument, case_runs: list[CaseRun], *, workspace_slug: str) -> SecuritySection | None:
    """A security pack's findings (each with a sentence and a replay link) and adversarial prompts, per case.

    Findings name the secret, rule, host or prompt; no secret value is ever part of them."""
    rollup = document.get("security")
    if not isinstance(rollup, dict):
        return None
    by_key = {case_run.case_key: case_run for case_run in case_runs}

    def link(case_key: str | None, event_id: str | None) -> str:
        case_run = by_key.get(str(case_key))
        if case_run is None:
            return ""
        return replay_url(workspace_slug=workspace_slug, run_id=case_run.run_id, case_run_id=case_run.pk, event_id=event_id or None)

    findings: list[FindingRow] = [
        {
            **f,
            "text": describe(f),
            "badge": SEVERITY_BADGES.get(str(f.get("severity")), "warn"),
            "replay_url": link(f.get("case_key"), f.get("event_id")),
        }
        for f in rollup.get("findings") or []
        if isinstance(f, dict)
    ]
    probes: list[ProbeRow] = []
    for case_run in case_runs:
        score = getattr(case_run, "case_score", None) if hasattr(case_run, "case_score") else None
        report = _case_document(score).get("security")
        for probe in (report.get("probes") if report else None) or []:
            status = str(probe.get("status") or "")
            probes.append(
                {
                    **probe,
                    "case_key": case_run.case_key,
                    "badge": PROBE_BADGES.get(status, "warn"),
                    "label": PROBE_LABELS.get(status, status),
                    "replay_url": link(case_run.case_key, probe.get("event_id")),
                }
            )
    return {
        **rollup,
        "findings": findings,
        "probe_rows": probes,
        "severities": [(k, (rollup.get("counts") or {}).get(k, 0)) for k in REPORT_SEVERITIES[::-1]],
        "detectors": list(DETECTORS),
    }


def _case_entry(case_run: CaseRun, score: CaseScore | None, *, workspace_slug: str) -> CaseEntry:
    document = _case_document(score)
    validators: list[ValidatorRow] = []
    for v in document.get("validator_details") or []:
        validators.append(
            {
                **v,
                "diff": readable_diff(v.get("expected"), v.get("actual")) if v.get("verdict") != "pass" else [],
                "expected_text": _text(v.get("expected")),
                "actual_text": _text(v.get("actual")),
                "replay_url": replay_url(
                    workspace_slug=workspace_slug, run_id=case_run.run_id, case_run_id=case_run.pk, event_id=v.get("evidence_event_id")
                ),
            }
        )
    return {
        "case_run": case_run,
        "case_run_id": case_run.pk,
        "case_key": case_run.case_key,
        "score_status": case_run.score_status,
        "passed": document.get("passed") if score else None,
        "overall_score": document.get("overall_score"),
        "overall_reason": document.get("overall_reason") or "",
        "validity": document.get("validity"),
        "failed_validators": failed_validators(document),
        "validators": validators,
        "metrics": document.get("metric_details") or [],
        "llm_judges": document.get("llm_judge_details") or [],
        "replay_url": replay_url(workspace_slug=workspace_slug, run_id=case_run.run_id, case_run_id=case_run.pk),
    }


def _dimension_deck(lane: Lane, document: LaneScorecardDocument) -> list[DeckRow]:
    """Per dimension: mean score, weight, share of the overall score, gate and threshold.

    Weight, gate and threshold come from the evaluation spec (via the first case's dimension
    entry, which carries them); contribution = weight × score / Σ weights of available dims.
    """
    first_case = CaseScore.objects.filter(lane=lane).order_by("case_run__position").first()
    declared = (_case_document(first_case).get("dimensions") or {}) if first_case else {}
    dims = document.get("dimensions") or {}
    total_weight = sum(float(_declared(declared, k).get("weight") or 1.0) for k, d in dims.items() if d.get("mean") is not None)
    deck: list[DeckRow] = []
    for key, entry in dims.items():
        spec = _declared(declared, key)
        declared_weight = spec.get("weight")
        weight = float(declared_weight if declared_weight is not None else 1.0)
        mean = entry.get("mean")
        threshold = spec.get("pass_threshold")
        deck.append(
            {
                "key": key,
                "score": mean,
                "state": entry.get("state"),
                "weight": weight,
                "contribution": (weight * mean / total_weight) if mean is not None and total_weight else None,
                "gate": bool(spec.get("gate")),
                "pass_threshold": threshold,
                "below_threshold": mean is not None and threshold is not None and mean < float(threshold),
                "declared_direction": entry.get("declared_direction"),
                "source": entry.get("source"),
            }
        )
    return deck


def _declared(declared: dict[str, CaseDimension], key: str) -> CaseDimension:
    """A dimension as the first case declares it; one without any key when it does not."""
    return declared.get(key) or cast(CaseDimension, {})


def _fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _statistics_markdown(statistics: LaneStatistics | None) -> list[str]:
    """pass@k / pass^k and the flaky cases, or the sentence saying one trial gives no estimate."""
    if not statistics:
        return []
    if statistics.get("uncertainty"):
        return [f"- {statistics['uncertainty']}"]
    ks = sorted(statistics.get("pass_at_k") or {}, key=int)
    at = ", ".join(f"pass@{k} {statistics['pass_at_k'][k]:.2f}" for k in ks)
    hat = ", ".join(f"pass^{k} {statistics['pass_hat_k'][k]:.2f}" for k in ks if k in (statistics.get("pass_hat_k") or {}))
    flaky = statistics.get("flaky_cases") or []
    shown = ", ".join(f"`{key}`" for key in flaky[:10]) + (f" and {len(flaky) - 10} more" if len(flaky) > 10 else "")
    return [f"- {at}", f"- {hat}", f"- Flaky cases (mixed outcomes): {shown or 'none'}"]


def lane_scorecard_markdown(view: LaneScorecardView) -> str:
    """The lane scorecard as Markdown, for pasting into a PR or an issue."""
    document = view["document"]
    lane = view["lane"]
    lines = [
        f"## Scorecard: {view['deployment']} ({lane.run.name})",
        "",
        f"- Overall score: **{_fmt(document.get('overall_score'))}** — "
        f"{'passed' if document.get('passed') else 'failed' if document.get('passed') is False else 'pass/fail unknown'}",
        f"- Pass rate: {view['pass_rate_text']}",
        f"- Mean score: {view['score_text']}",
        *_statistics_markdown(view["statistics"]),
        f"- Validity: {document.get('validity') or '—'}" + (f" ({document['validity_reason']})" if document.get("validity_reason") else ""),
        "",
        "| Dimension | Score | Weight | Contribution | Gate | Threshold |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for d in view["dimension_deck"]:
        lines.append(
            f"| {d['key']} | {_fmt(d['score'])} | {_fmt(d['weight'], 2)} | {_fmt(d['contribution'])} | "
            f"{'yes' if d['gate'] else 'no'} | {_fmt(d['pass_threshold'], 2)} |"
        )
    security = view.get("security")
    if security:
        counts = ", ".join(f"{count} {severity}" for severity, count in security["severities"] if count) or "none"
        verdict = {True: "passed", None: "insufficient evidence"}.get(security.get("passed"), "failed")
        lines += ["", f"### Security: {verdict} (findings: {counts})"]
        lines += [f"- {f['text']} (case `{f.get('case_key')}`)" for f in security["findings"]]
        if not security["findings"]:
            lines.append(f"- {NO_LEAK_FOUND.capitalize()}: {'; '.join(security['detectors'])}.")
    lines += ["", "| Case | Verdict | Score | Failed validators |", "|---|---|---:|---|"]
    for c in view["cases"]:
        verdict = "pass" if c["passed"] else "fail" if c["passed"] is False else c["score_status"]
        lines.append(f"| {c['case_key']} | {verdict} | {_fmt(c['overall_score'])} | {', '.join(c['failed_validators']) or '—'} |")
    more = view.get("cases_total", 0) - len(view["cases"])
    if more > 0:
        lines += ["", f"… and {more} more case(s): every case is on the page's “Show all” and in the JSON download."]
    return "\n".join(lines) + "\n"


BAR_WIDTH = 64


def _bar(value: float | None, maximum: float | None = 1.0) -> int | None:
    if value is None or not maximum:
        return None
    return max(0, min(BAR_WIDTH, round(BAR_WIDTH * float(value) / float(maximum))))


def run_scorecard_context(run: Run) -> dict[str, object]:
    """The run scorecard fragment's context (its page, and the run page's live tick): the ranking
    with its bars, or the standings so far while there is no ranking."""
    data = run_scorecard_rows(run)
    max_cost = max((r["cost_usd"] or 0 for r in data["lanes"]), default=0) or None
    max_latency = max((r["latency_p50_ms"] or 0 for r in data["lanes"]), default=0) or None
    for row in data["lanes"]:
        interval = error_bar(row["statistics"], "pass_rate")
        trials = row["statistics"]["trials"] if row["statistics"] else 0
        row["interval_short"] = (
            f"{interval['low'] * 100:.0f}–{interval['high'] * 100:.0f} % · {trials} trials" if interval else f"{trials} trial, no interval"
        )
        row["bars"] = {
            "overall": _bar(row["overall_score"]),
            "pass_rate": _bar(row["pass_rate"]),
            "pass_rate_low": _bar(interval["low"]) if interval else None,
            "pass_rate_high": _bar(interval["high"]) if interval else None,
            "cost": _bar(row["cost_usd"], max_cost),
            "latency": _bar(row["latency_p50_ms"], max_latency),
        }
        row["dimension_cells"] = [
            {"key": k, "value": row["dimensions"].get(k), "bar": _bar(row["dimensions"].get(k))} for k in data["dimension_keys"]
        ]
    detectors = list(DETECTORS) if any(row.get("security") for row in data["lanes"]) else []
    context: dict[str, object] = {"run": run, "scorecard": data, "leak_detectors": detectors}
    if run.score_status in (ScoreStatus.PENDING, ScoreStatus.SKIPPED):  # standings so far, while there is no ranking
        context["standings"] = lane_standings(run=run)
    return context
