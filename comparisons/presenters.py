"""What the comparison pages show: a title people can read and, per diverging case, the two
final outputs side by side with the validators and judges whose verdict changed."""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterable
from typing import Literal, TypedDict

from comparisons.models import Comparison
from engine.scoring.documents import CaseScoreDocument, ComparisonSummary
from runs.models import CaseRun, Lane, Run

# A diff of two huge outputs would make the page unreadable and slow: compare the first part.
MAX_OUTPUT_CHARS = 20_000
MAX_DIFF_ROWS = 400
# Intraline highlighting only pays off for lines of a readable length.
MAX_INLINE_CHARS = 2_000
OPEN_BY_DEFAULT = 3
# Words and the spaces between them; below this similarity a line is shown as replaced whole.
WORD = re.compile(r"\s+|\w+|[^\w\s]")
SIMILAR_ENOUGH = 0.5

# Regressions first: they are what a reviewer opens a comparison for.
DivergenceKind = Literal["passed_to_failed", "completed_to_failed", "failed_to_passed", "failed_to_completed"]
DIVERGENCE_KINDS: list[tuple[DivergenceKind, str, str]] = [
    ("passed_to_failed", "passed → failed", "worse"),
    ("completed_to_failed", "completed → run failed", "worse"),
    ("failed_to_passed", "failed → passed", "better"),
    ("failed_to_completed", "run failed → completed", "better"),
]


def _side_name(run: Run, lane: Lane, *, by_lane: bool) -> str:
    return lane.label if by_lane else run.name


def comparison_title(comparison: Comparison) -> str:
    """``<candidate> vs <baseline>``: the agents when they differ, else the runs.

    Two lanes of one run, or two runs of different agents, read best by agent; the same agent
    in two runs (a new pack version, a changed prompt) reads best by run name.
    """
    same_run = comparison.baseline_run_id == comparison.candidate_run_id
    by_lane = same_run or comparison.baseline_lane.label != comparison.candidate_lane.label
    candidate = _side_name(comparison.candidate_run, comparison.candidate_lane, by_lane=by_lane)
    baseline = _side_name(comparison.baseline_run, comparison.baseline_lane, by_lane=by_lane)
    if candidate == baseline:  # two runs with the same name: their ids tell them apart
        candidate, baseline = f"{candidate} (#{comparison.candidate_run_id})", f"{baseline} (#{comparison.baseline_run_id})"
    return f"{candidate} vs {baseline}"


@dataclasses.dataclass(frozen=True)
class Segment:
    text: str
    changed: bool


@dataclasses.dataclass(frozen=True)
class Cell:
    kind: str  # same | del | add | pad
    segments: tuple[Segment, ...]


@dataclasses.dataclass(frozen=True)
class DiffRow:
    baseline: Cell
    candidate: Cell


PAD = Cell("pad", ())


def _plain(kind: str, line: str) -> Cell:
    return Cell(kind, (Segment(line, False),))


def _inline(left: str, right: str) -> tuple[Cell, Cell]:
    """Two changed lines with the changed words marked; lines with little in common stay whole."""
    if len(left) + len(right) > MAX_INLINE_CHARS:
        return _plain("del", left), _plain("add", right)
    old_words, new_words = WORD.findall(left), WORD.findall(right)
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    if matcher.ratio() < SIMILAR_ENOUGH:
        return _plain("del", left), _plain("add", right)
    old: list[Segment] = []
    new: list[Segment] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            old.append(Segment("".join(old_words[i1:i2]), False))
            new.append(Segment("".join(new_words[j1:j2]), False))
            continue
        if i2 > i1:
            old.append(Segment("".join(old_words[i1:i2]), True))
        if j2 > j1:
            new.append(Segment("".join(new_words[j1:j2]), True))
    return Cell("del", tuple(old)), Cell("add", tuple(new))


def side_by_side(baseline: str, candidate: str) -> tuple[list[DiffRow], bool]:
    """Rows of (baseline line, candidate line), aligned; True when the outputs were cut to fit."""
    truncated = len(baseline) > MAX_OUTPUT_CHARS or len(candidate) > MAX_OUTPUT_CHARS
    left = baseline[:MAX_OUTPUT_CHARS].splitlines() or [""]
    right = candidate[:MAX_OUTPUT_CHARS].splitlines() or [""]
    rows: list[DiffRow] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
        if op == "equal":
            rows.extend(DiffRow(_plain("same", line), _plain("same", line)) for line in left[i1:i2])
            continue
        old, new = left[i1:i2], right[j1:j2]
        for index in range(max(len(old), len(new))):
            if index < len(old) and index < len(new):
                rows.append(DiffRow(*_inline(old[index], new[index])))
            elif index < len(old):
                rows.append(DiffRow(_plain("del", old[index]), PAD))
            else:
                rows.append(DiffRow(PAD, _plain("add", new[index])))
    if len(rows) > MAX_DIFF_ROWS:
        rows, truncated = rows[:MAX_DIFF_ROWS], True
    return rows, truncated


@dataclasses.dataclass(frozen=True)
class VerdictChange:
    key: str
    kind: str  # validator | judge
    baseline_verdict: str
    candidate_verdict: str
    baseline_score: float | None
    candidate_score: float | None
    baseline_reason: str
    candidate_reason: str
    outcome: str  # better | worse | changed


class _Verdict(TypedDict):
    verdict: str
    score: float | None
    reason: str


_ABSENT: _Verdict = {"verdict": "absent", "score": None, "reason": ""}


def _verdicts(document: CaseScoreDocument | None) -> dict[tuple[str, str], _Verdict]:
    """(kind, key) → verdict, score, reason for the validators and LLM judges of a case score."""
    found: dict[tuple[str, str], _Verdict] = {}
    if not document:
        return found
    for detail in document.get("validator_details") or []:
        if isinstance(detail, dict) and detail.get("key"):
            verdict = str(detail.get("verdict") or detail.get("state") or "")
            found[("validator", str(detail["key"]))] = {
                "verdict": verdict,
                "score": detail.get("normalized_score"),
                "reason": str(detail.get("reason") or ""),
            }
    for judge in document.get("llm_judge_details") or []:
        if isinstance(judge, dict) and judge.get("judge_key"):
            score = judge.get("normalized_score")
            state = str(judge.get("state") or "")
            found[("judge", str(judge["judge_key"]))] = {
                "verdict": state if state != "available" else (f"{score:.2f}" if isinstance(score, int | float) else state),
                "score": score,
                "reason": str(judge.get("reason") or ""),
            }
    return found


def _rank(verdict: str, score: float | None) -> float:
    if isinstance(score, int | float):
        return float(score)
    return {"pass": 1.0, "fail": 0.0}.get(verdict, -1.0)


def verdict_changes(baseline: CaseScoreDocument | None, candidate: CaseScoreDocument | None) -> list[VerdictChange]:
    """Validators and judges whose verdict or score differs between the two case scores."""
    old, new = _verdicts(baseline), _verdicts(candidate)
    changes = []
    for kind, key in sorted(set(old) | set(new)):
        a = old.get((kind, key)) or _ABSENT
        b = new.get((kind, key)) or _ABSENT
        if a["verdict"] == b["verdict"] and a["score"] == b["score"]:
            continue
        before, after = _rank(a["verdict"], a["score"]), _rank(b["verdict"], b["score"])
        outcome = "better" if after > before else "worse" if after < before else "changed"
        changes.append(
            VerdictChange(
                key=key, kind=kind, baseline_verdict=a["verdict"], candidate_verdict=b["verdict"],
                baseline_score=a["score"], candidate_score=b["score"],
                baseline_reason=a["reason"], candidate_reason=b["reason"], outcome=outcome,
            )
        )  # fmt: skip
    return changes


@dataclasses.dataclass
class CaseSide:
    case_run: CaseRun | None
    url: str | None
    output: str | None  # None: no final output (the case failed or never answered)
    score: float | None
    passed: bool | None


@dataclasses.dataclass
class CaseDiff:
    case_key: str
    kind: str
    label: str
    direction: str  # better | worse
    baseline: CaseSide
    candidate: CaseSide
    rows: list[DiffRow]
    truncated: bool
    identical_outputs: bool
    changes: list[VerdictChange]
    open: bool


def _side(case_run: CaseRun | None, *, workspace_slug: str) -> CaseSide:
    if case_run is None:
        return CaseSide(None, None, None, None, None)
    score = getattr(case_run, "case_score", None)
    return CaseSide(
        case_run=case_run,
        url=f"/w/{workspace_slug}/runs/{case_run.run_id}/cases/{case_run.pk}/",
        output=case_run.final_output,
        score=score.overall_score if score is not None else case_run.score,
        passed=score.passed if score is not None else case_run.passed,
    )


def _document(case_run: CaseRun | None) -> CaseScoreDocument | None:
    score = getattr(case_run, "case_score", None) if case_run is not None else None
    if score is None:
        return None
    document: CaseScoreDocument = score.document
    return document


def divergent_keys(summary: ComparisonSummary | None) -> Iterable[tuple[str, str, str, str]]:
    """(case key, kind, label, better|worse) for every case the comparison's summary lists."""
    divergence = summary.get("case_divergence") if summary else None
    if not divergence:
        return
    for kind, label, direction in DIVERGENCE_KINDS:
        for case_key in divergence.get(kind) or []:
            yield str(case_key), kind, label, direction


def case_diffs(comparison: Comparison, *, workspace_slug: str) -> list[CaseDiff]:
    """One entry per diverging case, worse ones first; a single query loads both lanes' cases."""
    summary: ComparisonSummary | None = comparison.summary or None
    wanted = list(divergent_keys(summary))
    if not wanted:
        return []
    lanes = (comparison.baseline_lane_id, comparison.candidate_lane_id)
    # Trial 1 of each case (docs/runs.md, "Trials"): its replay link is the one that never changes.
    rows = CaseRun.objects.filter(lane_id__in=lanes, case_key__in=[key for key, *_ in wanted], trial=1).select_related("case_score")
    by_lane: dict[tuple[int, str], CaseRun] = {(row.lane_id, row.case_key): row for row in rows}
    diffs = []
    for index, (case_key, kind, label, direction) in enumerate(wanted):
        base = by_lane.get((comparison.baseline_lane_id, case_key))
        cand = by_lane.get((comparison.candidate_lane_id, case_key))
        baseline, candidate = _side(base, workspace_slug=workspace_slug), _side(cand, workspace_slug=workspace_slug)
        diff_rows, truncated = side_by_side(baseline.output or "", candidate.output or "")
        diffs.append(
            CaseDiff(
                case_key=case_key, kind=kind, label=label, direction=direction,
                baseline=baseline, candidate=candidate, rows=diff_rows, truncated=truncated,
                identical_outputs=(baseline.output or "") == (candidate.output or ""),
                changes=verdict_changes(_document(base), _document(cand)), open=index < OPEN_BY_DEFAULT,
            )
        )  # fmt: skip
    return diffs
