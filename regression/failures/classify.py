"""Why one case failed: its failure class, the checks that failed, a fingerprint and a severity.

Pure Python over plain data (a case run's fields, its ``CaseScore.document`` and the few events
that matter), so the rules are tested without a database and read in one place. Precedence,
fingerprints and severities are explained in docs/failures-review.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable
from typing import TypedDict

from engine.events import SANDBOX_EGRESS_DENIED, TOOL_CALL_FAILED
from engine.modes.case import (
    STOP_AGENT_ERROR,
    STOP_CANCELLED,
    STOP_DEADLINE_EXCEEDED,
    STOP_MAX_TURNS,
    STOP_QUOTA_EXCEEDED,
    STOP_STEP_LIMIT,
    STOP_TIMEOUT,
    STOP_TOKEN_LIMIT,
    STOP_TOOL_LIMIT,
)
from engine.scoring.documents import CaseDimension, CaseScoreDocument, ValidatorDetail
from engine.scoring.security import BLOCKING_SEVERITIES, describe
from engine.types import JSON

SECURITY_FINDING = "security_finding"
POLICY_DENIAL = "policy_denial"
TIMEOUT = "timeout"
AGENT_ERROR = "agent_error"
RUN_ERROR = "run_error"
TOOL_FAILURE = "tool_failure"
VALIDATOR_ERROR = "validator_error"
WRONG_ANSWER = "wrong_answer"

# Highest precedence first: a case that shows several gets the first one.
CLASSES: dict[str, str] = {
    SECURITY_FINDING: "Security finding",
    POLICY_DENIAL: "Policy denial",
    TIMEOUT: "Timeout or limit",
    AGENT_ERROR: "Agent error",
    RUN_ERROR: "Run error",
    TOOL_FAILURE: "Tool failure",
    VALIDATOR_ERROR: "Validator error",
    WRONG_ANSWER: "Wrong answer",
}

BLOCKING = "blocking"
WARNING = "warning"
INFO = "info"
SEVERITIES: dict[str, str] = {BLOCKING: "Blocking", WARNING: "Warning", INFO: "Info"}

# The case ran out of time or of a budget the pack or the runtime profile set.
LIMIT_STOPS = frozenset(
    {STOP_TIMEOUT, STOP_DEADLINE_EXCEEDED, STOP_STEP_LIMIT, STOP_TOOL_LIMIT, STOP_TOKEN_LIMIT, STOP_MAX_TURNS, STOP_QUOTA_EXCEEDED}
)
POLICY_ORIGIN = "policy"
FAILED_STATES = frozenset({"error", "unavailable"})
# engine/scoring/strategies.py says this when a weighted or hybrid case failed only because its
# overall score fell below the scorecard's pass threshold: no single required check failed it.
_BELOW_OVERALL_THRESHOLD = re.compile(r"^score [0-9.]+ is below the pass threshold")


@dataclasses.dataclass(frozen=True)
class EventFact:
    """A ``tool.call.failed`` or ``sandbox.egress.denied`` event, reduced to what classifying reads."""

    event_type: str
    event_id: str
    tool_name: str = ""
    failure_origin: str = ""
    host: str = ""
    message: str = ""  # the tool's error message, the proxy's reason for refusing


@dataclasses.dataclass(frozen=True)
class CaseFacts:
    status: str  # the CaseRun status: completed | failed | cancelled (queued/running are never classified)
    stop_reason: str = ""
    error: str = ""
    provider_failure: dict[str, JSON] | None = None
    passed: bool | None = None
    scored: bool = True
    document: CaseScoreDocument | None = None  # the case's CaseScore.document (None: not scored)
    events: tuple[EventFact, ...] = ()


class FailedValidator(TypedDict):
    """A validator that failed or could not run, as the review shows it (from its ``ValidatorDetail``)."""

    key: str
    type: str
    label: str
    state: str | None
    verdict: str | None
    outcome_class: str | None
    reason: str
    evidence_event_id: str


class FailedDimension(TypedDict):
    """A dimension below its bar or not scored, as the review shows it (from its ``CaseDimension``)."""

    key: str
    state: str | None
    score: float | None
    pass_threshold: float | None
    gate: bool
    required: bool
    reason: str


@dataclasses.dataclass(frozen=True)
class Check:
    """One thing that failed: ``key`` is stable (fingerprints use it), ``label`` is for people."""

    key: str
    label: str
    reason: str = ""
    event_id: str = ""


@dataclasses.dataclass(frozen=True)
class Failure:
    failure_class: str
    severity: str
    fingerprint: str
    title: str
    reason: str
    checks: tuple[Check, ...]  # what the fingerprint is made of
    failed_validators: tuple[FailedValidator, ...]
    failed_dimensions: tuple[FailedDimension, ...]
    evidence_event_id: str
    case_failed: bool  # the case itself failed (else it passed with failed checks)

    @property
    def class_label(self) -> str:
        return CLASSES[self.failure_class]


def is_cancelled(facts: CaseFacts) -> bool:
    """Cancelled cases are not failures of the agent: the review counts them apart."""
    return facts.status == "cancelled" or facts.stop_reason == STOP_CANCELLED


def case_failed(facts: CaseFacts) -> bool:
    return facts.status == "failed" or facts.passed is False


def fingerprint(failure_class: str, check_keys: list[str] | tuple[str, ...]) -> str:
    """12 hex digits of the class and the sorted check keys: the same failure in any lane or case."""
    text = "\n".join([failure_class, *sorted(set(check_keys))])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# -- the checks a document and the events show ----------------------------------------------------


def _validators(document: CaseScoreDocument | None) -> list[ValidatorDetail]:
    return [v for v in (document.get("validator_details") if document else None) or [] if isinstance(v, dict)]


def _validator_label(v: ValidatorDetail) -> str:
    return f"{v.get('type') or 'validator'}({v.get('key')})"


def _validator_row(v: ValidatorDetail) -> FailedValidator:
    return {
        "key": str(v.get("key") or ""),
        "type": str(v.get("type") or ""),
        "label": _validator_label(v),
        "state": v.get("state"),
        "verdict": v.get("verdict"),
        "outcome_class": v.get("outcome_class"),
        "reason": str(v.get("reason") or ""),
        "evidence_event_id": v.get("evidence_event_id") or "",
    }


def failed_validators(document: CaseScoreDocument | None) -> list[FailedValidator]:
    """Validators that ran and failed, or could not run (error / unavailable)."""
    return [_validator_row(v) for v in _validators(document) if v.get("state") in FAILED_STATES or v.get("verdict") == "fail"]


def _dimension_failed(d: CaseDimension, strategy: str) -> bool:
    if d.get("state") in FAILED_STATES:
        return True
    score = d.get("score")
    if d.get("state") != "available" or not isinstance(score, (int, float)):
        return False
    threshold = d.get("pass_threshold")
    if threshold is None and strategy == "binary":
        threshold = 1.0
    if isinstance(threshold, (int, float)):
        return bool(score < threshold)
    return d.get("source") == "validators" and score < 1.0  # a validator in it failed


def failed_dimensions(document: CaseScoreDocument | None) -> list[FailedDimension]:
    """Dimensions that errored or were unavailable, scored below their threshold (a gate's, a
    thresholded one's, any under ``binary``), or are validator dimensions with a failed validator.
    Continuous dimensions with no threshold (latency, cost) are scores, not checks."""
    if not document:
        return []
    strategy = str(document.get("strategy") or "")
    rows: list[FailedDimension] = []
    for key, d in (document.get("dimensions") or {}).items():
        if isinstance(d, dict) and _dimension_failed(d, strategy):
            required = bool(d.get("gate")) or d.get("pass_threshold") is not None or strategy == "binary"
            rows.append(
                {
                    "key": str(key),
                    "state": d.get("state"),
                    "score": d.get("score"),
                    "pass_threshold": d.get("pass_threshold"),
                    "gate": bool(d.get("gate")),
                    "required": required,
                    "reason": str(d.get("reason") or ""),
                }
            )
    return rows


def _security_checks(document: CaseScoreDocument | None, *, blocking: bool) -> list[Check]:
    report = document.get("security") if document else None
    findings = report.get("findings") if isinstance(report, dict) else None
    checks = []
    for f in findings or []:
        if isinstance(f, dict) and (str(f.get("severity")) in BLOCKING_SEVERITIES) == blocking:
            subject = str(f.get("subject") or "")
            kind = str(f.get("kind") or "finding")
            checks.append(
                Check(
                    f"security:{kind}:{subject}",
                    f"{kind}({subject})" if subject else kind,
                    describe(f) or str(f.get("severity") or ""),  # names the secret or rule, never a value
                    str(f.get("event_id") or ""),
                )
            )
    return checks


def _policy_checks(events: tuple[EventFact, ...]) -> list[Check]:
    checks = []
    for e in events:
        if e.event_type == TOOL_CALL_FAILED and e.failure_origin == POLICY_ORIGIN:
            checks.append(Check(f"policy:tool:{e.tool_name}", f"tool {e.tool_name or '?'} denied", e.message, e.event_id))
        elif e.event_type == SANDBOX_EGRESS_DENIED:
            checks.append(Check(f"policy:egress:{e.host}", f"egress to {e.host or '?'} denied", e.message, e.event_id))
    return checks


def _tool_checks(events: tuple[EventFact, ...]) -> list[Check]:
    return [
        Check(f"tool:{e.tool_name}:{e.failure_origin or 'primitive'}", f"tool {e.tool_name or '?'} failed", e.message, e.event_id)
        for e in events
        if e.event_type == TOOL_CALL_FAILED and e.failure_origin != POLICY_ORIGIN
    ]


def _stop_check(facts: CaseFacts) -> Check:
    code = ""
    if isinstance(facts.provider_failure, dict) and facts.provider_failure.get("code"):
        code = str(facts.provider_failure["code"])
    stop = facts.stop_reason or "failed"
    key = f"stop:{stop}:{code}" if code else f"stop:{stop}"
    return Check(key, f"{stop} ({code})" if code else stop, facts.error[:300])


def _validator_checks(rows: list[FailedValidator], *, errored: bool) -> list[Check]:
    return [
        Check(f"validator:{r['key']}", r["label"], r["reason"], str(r["evidence_event_id"]))
        for r in rows
        if (r["state"] in FAILED_STATES) == errored
    ]


def _dimension_checks(rows: list[FailedDimension], *, errored: bool) -> list[Check]:
    """Dimensions below their bar (``errored=False``), or required ones that could not be scored."""
    if errored:
        return [Check(f"dimension:{r['key']}", r["key"], r["reason"]) for r in rows if r["state"] in FAILED_STATES and r["required"]]
    return [Check(f"dimension:{r['key']}", r["key"], r["reason"]) for r in rows if r["state"] not in FAILED_STATES]


# -- the class, in precedence order ---------------------------------------------------------------


def _overall_reason(facts: CaseFacts) -> str:
    return str((facts.document.get("overall_reason") if facts.document else None) or "")


def _class_and_checks(
    facts: CaseFacts, validators: list[FailedValidator], dimensions: list[FailedDimension]
) -> tuple[str, list[Check]] | None:
    document = facts.document
    ordered: tuple[tuple[str, Callable[[], list[Check]]], ...] = (
        (SECURITY_FINDING, lambda: _security_checks(document, blocking=True)),
        (POLICY_DENIAL, lambda: _policy_checks(facts.events)),
        (TIMEOUT, lambda: [_stop_check(facts)] if facts.status == "failed" and facts.stop_reason in LIMIT_STOPS else []),
        (AGENT_ERROR, lambda: [_stop_check(facts)] if facts.status == "failed" and facts.stop_reason == STOP_AGENT_ERROR else []),
        (RUN_ERROR, lambda: [_stop_check(facts)] if facts.status == "failed" else []),
        (TOOL_FAILURE, lambda: _tool_checks(facts.events)),
        (VALIDATOR_ERROR, lambda: _validator_checks(validators, errored=True) + _dimension_checks(dimensions, errored=True)),
        (WRONG_ANSWER, lambda: _validator_checks(validators, errored=False) or _dimension_checks(dimensions, errored=False)),
        (SECURITY_FINDING, lambda: _security_checks(document, blocking=False)),  # low / medium findings alone
    )
    for failure_class, find in ordered:
        checks = find()
        if checks:
            return failure_class, checks
    if case_failed(facts):  # failed for a reason no check names (e.g. a judge's low score under a threshold)
        reason = _overall_reason(facts) or "the case did not pass"
        return WRONG_ANSWER, [Check("overall", "overall verdict", reason)]
    return None


def _severity(facts: CaseFacts, failure_class: str, dimensions: list[FailedDimension]) -> str:
    if failure_class == POLICY_DENIAL or (failure_class == SECURITY_FINDING and case_failed(facts)):
        return BLOCKING
    if not case_failed(facts):
        return INFO
    if facts.status == "failed" or any(d["required"] for d in dimensions):
        return BLOCKING
    reason = _overall_reason(facts)
    return WARNING if _BELOW_OVERALL_THRESHOLD.match(reason) else BLOCKING


def _reason(facts: CaseFacts, checks: list[Check]) -> str:
    if facts.status == "failed" and facts.error:
        return facts.error[:300]
    for check in checks:
        if check.reason:
            return check.reason[:300]
    return _overall_reason(facts)[:300]


def title(failure_class: str, checks: list[Check] | tuple[Check, ...]) -> str:
    """``Wrong answer · exact_match(answer), regex(format)``: the class, then what failed."""
    labels = sorted({c.label for c in checks})
    shown = ", ".join(labels[:4]) + (f" +{len(labels) - 4} more" if len(labels) > 4 else "")
    return f"{CLASSES[failure_class]} · {shown}" if shown else CLASSES[failure_class]


def classify(facts: CaseFacts) -> Failure | None:
    """The case's failure, or None: it passed with nothing failed, was cancelled, or is not scored yet."""
    if is_cancelled(facts) or facts.status not in ("completed", "failed"):
        return None
    if facts.status == "completed" and not facts.scored:
        return None
    validators = failed_validators(facts.document)
    dimensions = failed_dimensions(facts.document)
    found = _class_and_checks(facts, validators, dimensions)
    if found is None:
        return None
    failure_class, checks = found
    unique = list({c.key: c for c in checks}.values())
    evidence = next((c.event_id for c in unique if c.event_id), "")
    return Failure(
        failure_class=failure_class,
        severity=_severity(facts, failure_class, dimensions),
        fingerprint=fingerprint(failure_class, [c.key for c in unique]),
        title=title(failure_class, unique),
        reason=_reason(facts, unique),
        checks=tuple(unique),
        failed_validators=tuple(validators),
        failed_dimensions=tuple(dimensions),
        evidence_event_id=evidence,
        case_failed=case_failed(facts),
    )
