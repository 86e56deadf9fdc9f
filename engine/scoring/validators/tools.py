"""tool_call_assertion: assertions over the successful tool calls of the run (§5.4)."""

from __future__ import annotations

import dataclasses
from collections import Counter

from engine.scoring.evidence import canonical_json
from engine.scoring.validators.base import Outcome, PackError, ValidatorCall, binary, register, strict_keys
from engine.scoring.validators.structured import deep_equal
from engine.types import JSON

ALLOWED = {"tool_name", "must_call", "count", "min_count", "max_count", "arguments_contain", "ordered_tools", "order_mode"}


def subset_match(expected: JSON, actual: JSON) -> bool:
    """Recursive subset: objects by key, arrays as unordered sub-multisets, scalars by equality."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and subset_match(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return False
        remaining = list(actual)
        for item in expected:
            index = next((i for i, cand in enumerate(remaining) if subset_match(item, cand)), None)
            if index is None:
                return False
            remaining.pop(index)
        return True
    return deep_equal(expected, actual)


def _count(config: dict[str, JSON], name: str) -> int | None:
    value = config.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PackError(f"config.{name} must be greater than or equal to 0")
    return value


def _is_subsequence(wanted: list[str], seen: list[str]) -> bool:
    it = iter(seen)
    return all(any(name == w for name in it) for w in wanted)


@dataclasses.dataclass(frozen=True)
class _Spec:
    tool_name: JSON
    must_call: JSON
    arguments: dict[str, JSON] | None
    count: int | None
    min_count: int | None
    max_count: int | None
    ordered: list[str] | None
    order_mode: str | None

    @property
    def has_count(self) -> bool:
        return self.count is not None or self.min_count is not None or self.max_count is not None


def _check_counts(count: int | None, min_count: int | None, max_count: int | None) -> None:
    if count is not None and (min_count is not None or max_count is not None):
        raise PackError("config.count cannot be combined with min_count or max_count")
    if min_count is not None and max_count is not None and min_count > max_count:
        raise PackError("config.min_count must be less than or equal to max_count")


def _check_order(ordered: JSON, order_mode: JSON) -> tuple[list[str] | None, str | None]:
    """``ordered_tools`` and ``order_mode``, checked."""
    if order_mode is not None and order_mode not in ("subsequence", "exact"):
        raise PackError('config.order_mode must be "subsequence" or "exact"')
    if order_mode is not None and not ordered:
        raise PackError("config.ordered_tools is required when order_mode is set")
    if ordered is not None and (not isinstance(ordered, list) or any(not isinstance(t, str) or not t for t in ordered)):
        raise PackError("config.ordered_tools entries must be non-empty tool names")
    names = [t for t in ordered if isinstance(t, str)] if isinstance(ordered, list) else None
    return names, order_mode if isinstance(order_mode, str) else None


def _parse_spec(call: ValidatorCall) -> _Spec:
    config = call.config
    if not call.config_given:
        raise PackError("tool_call_assertion config is required")
    if call.target != "tool_calls":
        raise PackError('target must be "tool_calls" for tool_call_assertion validators')
    strict_keys(config, ALLOWED)
    count, min_count, max_count = _count(config, "count"), _count(config, "min_count"), _count(config, "max_count")
    _check_counts(count, min_count, max_count)
    arguments = config.get("arguments_contain")
    if arguments is not None and not isinstance(arguments, dict):
        raise PackError("config.arguments_contain must be a JSON object")
    ordered, order_mode = _check_order(config.get("ordered_tools"), config.get("order_mode"))
    spec = _Spec(config.get("tool_name"), config.get("must_call"), arguments, count, min_count, max_count, ordered, order_mode)
    if not any([spec.tool_name, spec.must_call is not None, spec.has_count, arguments is not None, ordered]):
        raise PackError("config must declare at least one tool call assertion")
    return spec


def _presence(spec: _Spec) -> JSON:
    if spec.must_call is not None:
        return spec.must_call
    if spec.has_count:
        return None
    return True if (spec.tool_name or spec.arguments is not None) else None


def _presence_failures(spec: _Spec, n: int, what: str) -> list[str]:
    presence = _presence(spec)
    if presence is True and n == 0:
        return [f"expected a successful call to {what}"]
    if presence is False and n > 0:
        return [f"expected no call to {what}, saw {n}"]
    return []


def _count_failures(spec: _Spec, n: int, what: str) -> list[str]:
    failures: list[str] = []
    if spec.count is not None and n != spec.count:
        failures.append(f"expected exactly {spec.count} call(s) to {what}, saw {n}")
    if spec.min_count is not None and n < spec.min_count:
        failures.append(f"expected at least {spec.min_count} call(s) to {what}, saw {n}")
    if spec.max_count is not None and n > spec.max_count:
        failures.append(f"expected at most {spec.max_count} call(s) to {what}, saw {n}")
    return failures


def _order_failures(spec: _Spec, names: list[str]) -> list[str]:
    if not spec.ordered:
        return []
    mode = spec.order_mode or "subsequence"
    in_order = names == spec.ordered if mode == "exact" else _is_subsequence(spec.ordered, names)
    return [] if in_order else [f"tool order {names} does not satisfy {mode} {spec.ordered}"]


@register("tool_call_assertion")
def tool_call_assertion(call: ValidatorCall) -> Outcome:
    spec = _parse_spec(call)
    successful = [t for t in call.extracted.tool_trace if not t.failed]
    matching = [
        t
        for t in successful
        if (not spec.tool_name or t.tool_name == spec.tool_name) and (spec.arguments is None or subset_match(spec.arguments, t.arguments))
    ]
    if matching:
        call.event_id = matching[0].event_id
    n = len(matching)
    what = f"{spec.tool_name or 'any tool'}" + (f" with arguments ⊇ {canonical_json(spec.arguments)}" if spec.arguments else "")
    names = [t.tool_name for t in successful]
    failures = _presence_failures(spec, n, what) + _count_failures(spec, n, what) + _order_failures(spec, names)
    actual: dict[str, JSON] = {"matching_calls": n, "successful_tools": [*names], "tool_counts": {**Counter(names)}}
    return binary(not failures, "; ".join(failures) or f"tool call assertions hold ({n} matching call(s))", call.config, actual)
