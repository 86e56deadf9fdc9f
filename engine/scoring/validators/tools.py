"""tool_call_assertion: assertions over the successful tool calls of the run (§5.4)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.scoring.evidence import canonical_json
from engine.scoring.validators.base import Outcome, PackError, ValidatorCall, binary, register, strict_keys
from engine.scoring.validators.structured import deep_equal

JSON = Any
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


@register("tool_call_assertion")
def tool_call_assertion(call: ValidatorCall) -> Outcome:
    config = call.config
    if not call.config_given:
        raise PackError("tool_call_assertion config is required")
    if call.target != "tool_calls":
        raise PackError('target must be "tool_calls" for tool_call_assertion validators')
    strict_keys(config, ALLOWED)
    count, min_count, max_count = _count(config, "count"), _count(config, "min_count"), _count(config, "max_count")
    if count is not None and (min_count is not None or max_count is not None):
        raise PackError("config.count cannot be combined with min_count or max_count")
    if min_count is not None and max_count is not None and min_count > max_count:
        raise PackError("config.min_count must be less than or equal to max_count")
    tool_name = config.get("tool_name")
    must_call = config.get("must_call")
    arguments = config.get("arguments_contain")
    if arguments is not None and not isinstance(arguments, dict):
        raise PackError("config.arguments_contain must be a JSON object")
    ordered = config.get("ordered_tools")
    order_mode = config.get("order_mode")
    if order_mode is not None and order_mode not in ("subsequence", "exact"):
        raise PackError('config.order_mode must be "subsequence" or "exact"')
    if order_mode is not None and not ordered:
        raise PackError("config.ordered_tools is required when order_mode is set")
    if ordered is not None and (not isinstance(ordered, list) or any(not isinstance(t, str) or not t for t in ordered)):
        raise PackError("config.ordered_tools entries must be non-empty tool names")
    has_count = count is not None or min_count is not None or max_count is not None
    if not any([tool_name, must_call is not None, has_count, arguments is not None, ordered]):
        raise PackError("config must declare at least one tool call assertion")

    successful = [t for t in call.extracted.tool_trace if not t.failed]
    matching = [
        t for t in successful if (not tool_name or t.tool_name == tool_name) and (arguments is None or subset_match(arguments, t.arguments))
    ]
    if matching:
        call.event_id = matching[0].event_id
    n = len(matching)
    what = f"{tool_name or 'any tool'}" + (f" with arguments ⊇ {canonical_json(arguments)}" if arguments else "")
    failures: list[str] = []
    presence = must_call if must_call is not None else (None if has_count else (True if (tool_name or arguments is not None) else None))
    if presence is True and n == 0:
        failures.append(f"expected a successful call to {what}")
    if presence is False and n > 0:
        failures.append(f"expected no call to {what}, saw {n}")
    if count is not None and n != count:
        failures.append(f"expected exactly {count} call(s) to {what}, saw {n}")
    if min_count is not None and n < min_count:
        failures.append(f"expected at least {min_count} call(s) to {what}, saw {n}")
    if max_count is not None and n > max_count:
        failures.append(f"expected at most {max_count} call(s) to {what}, saw {n}")
    names = [t.tool_name for t in successful]
    if ordered:
        in_order = names == ordered if (order_mode or "subsequence") == "exact" else _is_subsequence(ordered, names)
        if not in_order:
            failures.append(f"tool order {names} does not satisfy {order_mode or 'subsequence'} {ordered}")
    actual = {"matching_calls": n, "successful_tools": names, "tool_counts": dict(Counter(names))}
    return binary(not failures, "; ".join(failures) or f"tool call assertions hold ({n} matching call(s))", config, actual)
