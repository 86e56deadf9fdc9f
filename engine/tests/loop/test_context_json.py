"""The first user message's context is the full context's JSON, the manifest's part encoded once."""

from __future__ import annotations

import json
from typing import Any

from engine.jsoncache import DumpCache
from engine.modes.case import CaseRequest, Limits
from engine.modes.context import _MANIFEST_SLOT, benchmark_context, benchmark_context_json

MANIFEST = {
    "pack": {"slug": "demo", "name": "Démo", "tags": ["a", "b"], "empty": {}, "none": []},
    "version": {"number": 3},
    "tools": {"allowed": ["read_file"], "custom": [{"name": "t", "implementation": {"args": {"x": "${x}"}}}]},
    "challenges": [{"key": "c1", "instructions": "line one\nline two", "expectations": ["hidden"]}],
    "evaluation_spec": {"validators": [{"key": "v"}]},
    "input_sets": [{"key": "default", "cases": [{"case_key": "k1", "expectations": ["hidden-answer"]}]}],
    "security": {"planted": []},
}


def _request(manifest: dict, **case) -> CaseRequest:
    return CaseRequest(
        execution_mode="native", run_id="1", lane_id="2", case_key="k1", event_id_prefix="p", model="m",
        manifest=manifest, challenge={"key": "c1", "instructions": "go"},
        case={"case_key": "k1", "inputs": [{"key": "q", "value": case.get("value", "what?")}]},
        deployment_config={"temperature": 0, "nested": {"list": [1, {"a": None}]}},
    )  # fmt: skip


LIMITS = Limits(max_iterations=5, max_tool_calls=0, step_timeout_seconds=60, run_timeout_seconds=0)


def test_the_spliced_text_is_exactly_the_whole_context_dumped():
    manifests: tuple[dict[str, Any], ...] = (MANIFEST, {}, {"pack": {}})
    for manifest in manifests:
        request = _request(manifest)
        expected = json.dumps(benchmark_context(request, LIMITS), indent=2, sort_keys=True, default=str)
        assert benchmark_context_json(request, LIMITS) == expected
        assert benchmark_context_json(request, LIMITS) == expected  # from the cache


def test_a_case_value_that_looks_like_the_slot_is_left_alone():
    request = _request(MANIFEST, value=_MANIFEST_SLOT)
    expected = json.dumps(benchmark_context(request, LIMITS), indent=2, sort_keys=True, default=str)
    assert benchmark_context_json(request, LIMITS) == expected


def test_another_manifest_object_is_encoded_again():
    first = benchmark_context_json(_request(dict(MANIFEST)), LIMITS)
    changed = {**MANIFEST, "pack": {"slug": "other"}}
    second = benchmark_context_json(_request(changed), LIMITS)
    assert '"other"' in second and '"other"' not in first


def test_the_dump_cache_keys_by_identity_and_forgets_the_oldest():
    cache: DumpCache[str] = DumpCache(size=2)
    calls = []

    def dump(value):
        calls.append(value)
        return json.dumps(value)

    a, b, c = {"a": 1}, {"a": 1}, {"c": 3}
    assert cache.get(a, dump) == cache.get(a, dump) == '{"a": 1}'
    assert len(calls) == 1
    cache.get(b, dump)  # equal but another object: encoded again
    cache.get(c, dump)  # a is now the oldest and forgotten
    cache.get(a, dump)
    assert len(calls) == 4
