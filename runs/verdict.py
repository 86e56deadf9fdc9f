"""Why a case passed or failed, at the top of its replay: the verdict, then each validator's result
with its reason and what it expected beside what it got, the differing words marked.

The numbers are the lane scorecard's (``scoring.presenters.case_verdicts``); this module only
orders them for a person reading one case (failed checks first) and adds the word marks.
"""

from __future__ import annotations

import dataclasses

from core.textdiff import WordDiff, word_diff
from runs.models import CaseRun
from scoring.presenters import ValidatorRow, case_verdicts

# What the two sides of a validator's comparison show before "show all" (characters).
SHOWN_CHARS = 4000


@dataclasses.dataclass
class ValidatorLine:
    key: str
    kind: str
    badge: str  # pass | fail | error | warn (the badge colour)
    label: str  # the verdict in words
    reason: str
    target: str
    marks: WordDiff | None  # expected vs got, when the validator compared two values and they differ
    expected_text: str
    actual_text: str
    evidence_url: str
    has_evidence_event: bool

    @property
    def failed(self) -> bool:
        return self.badge != "pass"


@dataclasses.dataclass
class CaseVerdict:
    state: str  # passed | failed | unscored | errored
    reason: str
    validators: list[ValidatorLine]
    checks_passed: int
    scorecard_url: str

    @property
    def failed_count(self) -> int:
        return len(self.validators) - self.checks_passed


def _line(row: ValidatorRow) -> ValidatorLine:
    unavailable = row.get("state") == "unavailable"
    verdict = str(row.get("verdict") or "")
    if unavailable:
        badge, label = "warn", "No evidence"
    elif verdict == "pass":
        badge, label = "pass", "Passed"
    elif verdict == "error":
        badge, label = "error", "Could not check"
    else:
        badge, label = "fail", "Failed"
    expected, actual = row["expected_text"][:SHOWN_CHARS], row["actual_text"][:SHOWN_CHARS]
    marks = word_diff(expected, actual) if badge != "pass" and (expected or actual) else None
    return ValidatorLine(
        key=str(row.get("key") or ""),
        kind=str(row.get("type") or ""),
        badge=badge,
        label=label,
        reason=str(row.get("reason") or ""),
        target=str(row.get("target") or ""),
        marks=marks if marks is not None and not marks.same else None,
        expected_text=expected,
        actual_text=actual,
        evidence_url=row["replay_url"],
        has_evidence_event=bool(row.get("evidence_event_id")),
    )


def case_verdict(case_run: CaseRun, *, workspace_slug: str, scorecard_url: str) -> CaseVerdict | None:
    """The case's verdict once it is scored (None before: the summary says "Scoring…")."""
    if case_run.score_status not in ("scored", "errored"):
        return None
    entry = case_verdicts(case_run, workspace_slug=workspace_slug)
    lines = [_line(row) for row in entry["validators"]]
    lines.sort(key=lambda line: not line.failed)  # failed checks first, each group in pack order
    if case_run.score_status == "errored":
        state = "errored"
    elif entry["passed"] is None:
        state = "unscored"
    else:
        state = "passed" if entry["passed"] else "failed"
    return CaseVerdict(
        state=state,
        reason=entry["overall_reason"] or case_run.error,
        validators=lines,
        checks_passed=sum(1 for line in lines if not line.failed),
        scorecard_url=scorecard_url,
    )
