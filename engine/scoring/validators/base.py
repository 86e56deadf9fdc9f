"""The validator registry and the shape every validator shares.

A validator is a function ``(call: ValidatorCall) -> Outcome`` registered with
``@register("type_name")``. It reads evidence through ``call.actual()`` / ``call.expected()``,
which raise ``Unavailable`` or ``PackError`` on missing or broken references, and raises
``PackError`` / ``InfraError`` for broken configs or infrastructure. ``run_validator`` turns
all of that into a ``ValidatorResult`` and never raises (runtime.md §5.4).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

from engine.scoring.documents import RegressionTag, ValidatorDetail
from engine.scoring.evidence import CaseEvidence, Extracted
from engine.scoring.references import Resolved, resolve
from engine.scoring.spec import ValidatorDeclaration
from engine.scoring.tiers import tier_gap
from engine.types import JSON

DISPLAY_LIMIT = 4000

OUTCOME_CLASSES = ("pass", "fail", "unavailable", "infra_error", "pack_error", "evaluator_error")


class Unavailable(Exception):
    """The evidence the validator needs is missing for this run."""


class NotDelivered(Exception):
    """The output the validator checks was the agent's to produce, and the agent did not produce it
    (``Resolved`` state ``not_delivered``): a failed check, not missing evidence."""


class PackError(Exception):
    """The pack is wrong: bad config, bad regex, unparseable expected value, unknown reference."""


class EvaluatorError(Exception):
    """The validator could not judge the output (e.g. an unparseable boolean answer)."""


class InfraError(Exception):
    """Verification infrastructure failed (e.g. the sandbox could not run the test command)."""


_SCALARS = (str, int, float, bool, type(None))


def copied(value: JSON) -> JSON:
    """``value`` for a document: a container is deep-copied, a scalar kept. A scoring record's
    ``as_dict`` copies only its container fields, without ``dataclasses.asdict``'s walk of every
    scalar (a case's score document builds a few dozen of these)."""
    return value if isinstance(value, _SCALARS) else copy.deepcopy(value)


@dataclasses.dataclass
class Outcome:
    passed: bool
    score: float
    reason: str = ""
    expected: JSON = None
    actual: JSON = None
    event_id: str | None = None


@dataclasses.dataclass
class ValidatorResult:
    key: str
    type: str
    verdict: str  # pass | fail | error  ("fail" with state unavailable when evidence is missing)
    state: str  # available | unavailable | error
    outcome_class: str
    normalized_score: float | None
    reason: str
    target: str = ""
    expected_from: str | None = None
    expected: JSON = None
    actual: JSON = None
    evidence_event_id: str | None = None
    regression: RegressionTag | None = None

    def as_dict(self) -> ValidatorDetail:
        return {
            "key": self.key,
            "type": self.type,
            "verdict": self.verdict,
            "state": self.state,
            "outcome_class": self.outcome_class,
            "normalized_score": self.normalized_score,
            "reason": self.reason,
            "target": self.target,
            "expected_from": self.expected_from,
            "expected": copied(self.expected),
            "actual": copied(self.actual),
            "evidence_event_id": self.evidence_event_id,
            "regression": copy.deepcopy(self.regression),
        }


class ValidatorCall:
    def __init__(self, declaration: ValidatorDeclaration, evidence: CaseEvidence, extracted: Extracted):
        self.declaration = declaration
        self.key = str(declaration.get("key") or "")
        self.type = str(declaration.get("type") or "")
        self.target = str(declaration.get("target") or "").strip()
        expected_from = declaration.get("expected_from")
        self.expected_from = str(expected_from).strip() if expected_from not in (None, "") else None
        config = declaration.get("config")
        self.config: dict[str, JSON] = config if isinstance(config, dict) else {}
        self.config_given = config is not None
        self.evidence = evidence
        self.extracted = extracted
        self.event_id: str | None = None

    def resolve(self, ref: str) -> Resolved:
        return resolve(ref, self.evidence, self.extracted)

    def _take(self, ref: str, what: str) -> Resolved:
        resolved = self.resolve(ref)
        if resolved.state == "error":
            raise PackError(f"{what}: {resolved.reason}")
        if resolved.state == "not_delivered":
            raise NotDelivered(f"{what}: {resolved.reason}")
        if not resolved.ok:  # unavailable, or not applicable to this run
            raise Unavailable(f"{what} unavailable: {resolved.reason}")
        return resolved

    def actual(self) -> str:
        resolved = self._take(self.target, "target")
        self.event_id = self.event_id or resolved.event_id
        return resolved.value or ""

    def expected(self) -> str:
        if self.expected_from is None:
            raise PackError("expected_from is required")
        return self._take(self.expected_from, "expected").value or ""

    def no_verification(self, reason: str) -> Exception:
        """What to raise when post-execution verification left no result: it does not run after
        the agent failed the run (its failure to deliver), otherwise the harness lost it."""
        if self.evidence.agent_stopped:
            return NotDelivered(f"the agent did not deliver: {reason}")
        return Unavailable(reason)

    def file_key(self) -> str:
        if not self.target.startswith("file:") or not self.target[5:].strip():
            raise PackError("target must use the file: prefix")
        return self.target[5:].strip()


ValidatorFn = Callable[[ValidatorCall], Outcome]
REGISTRY: dict[str, ValidatorFn] = {}


def register(*types: str) -> Callable[[ValidatorFn], ValidatorFn]:
    def decorate(fn: ValidatorFn) -> ValidatorFn:
        for name in types:
            REGISTRY[name] = fn
        return fn

    return decorate


def _display(value: JSON) -> JSON:
    if isinstance(value, str) and len(value) > DISPLAY_LIMIT:
        return value[:DISPLAY_LIMIT] + "…"
    return value


def _regression(declaration: ValidatorDeclaration) -> RegressionTag | None:
    case_id = declaration.get("regression_case_id")
    if not case_id:
        return None
    return {
        "regression_case_id": case_id,
        "suite_id": declaration.get("regression_suite_id"),
        "severity": declaration.get("regression_severity") or "blocking",
    }


def run_validator(declaration: ValidatorDeclaration, evidence: CaseEvidence, extracted: Extracted) -> ValidatorResult:
    call = ValidatorCall(declaration if isinstance(declaration, dict) else {}, evidence, extracted)
    result = ValidatorResult(
        key=call.key,
        type=call.type,
        verdict="error",
        state="error",
        outcome_class="evaluator_error",
        normalized_score=None,
        reason="",
        target=call.target,
        expected_from=call.expected_from,
        regression=_regression(call.declaration),
    )
    fn = REGISTRY.get(call.type)
    try:
        if fn is None:
            raise PackError(f"unsupported validator type {call.type!r}")
        if gap := tier_gap(call.declaration, evidence.evidence_tier):
            raise Unavailable(gap)
        outcome = fn(call)
    except NotDelivered as exc:
        result.verdict, result.state, result.outcome_class = "fail", "available", "fail"
        result.normalized_score, result.reason = 0.0, str(exc)
    except Unavailable as exc:
        result.verdict, result.state, result.outcome_class = "fail", "unavailable", "unavailable"
        result.reason = str(exc)
    except PackError as exc:
        result.outcome_class, result.reason = "pack_error", str(exc)
    except InfraError as exc:
        result.outcome_class, result.reason = "infra_error", str(exc)
    except EvaluatorError as exc:
        result.outcome_class, result.reason = "evaluator_error", str(exc)
    except Exception as exc:  # noqa: BLE001 — scoring never raises
        result.outcome_class, result.reason = "evaluator_error", f"{type(exc).__name__}: {exc}"
    else:
        score = min(1.0, max(0.0, float(outcome.score)))
        result.verdict = "pass" if outcome.passed else "fail"
        result.state, result.outcome_class = "available", result.verdict
        result.normalized_score = score
        result.reason = outcome.reason
        result.expected, result.actual = _display(outcome.expected), _display(outcome.actual)
        result.evidence_event_id = outcome.event_id or call.event_id
        return result
    result.evidence_event_id = call.event_id
    return result


def binary(passed: bool, reason: str, expected: JSON = None, actual: JSON = None) -> Outcome:
    return Outcome(passed=passed, score=1.0 if passed else 0.0, reason=reason, expected=expected, actual=actual)


def config_float(
    config: dict[str, JSON], name: str, default: float, *, lo: float | None = None, hi: float | None = None, clamp: bool = False
) -> float:
    value = config.get(name, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PackError(f"config.{name} must be a number")
    value = float(value)
    if clamp:
        return min(hi if hi is not None else value, max(lo if lo is not None else value, value))
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise PackError(f"config.{name} must be between {lo:g} and {hi:g}")
    return value


def config_bool(config: dict[str, JSON], name: str, default: bool = False) -> bool:
    value = config.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise PackError(f"config.{name} must be a boolean")
    return value


def strict_keys(config: dict[str, JSON], allowed: set[str]) -> None:
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise PackError(f"config has unknown field {unknown[0]!r}")
