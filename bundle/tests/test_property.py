from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundle import BundleResult, process_bundle

from .conftest import BASE

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12)
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12
)


def _paths(node: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, prefix + (index,))
    return out


PATHS = [p for p in _paths(BASE) if p]


def _check(result: BundleResult) -> None:
    assert isinstance(result, BundleResult)
    assert result.valid == (not result.errors)
    for error in result.errors:
        assert isinstance(error.field, str) and isinstance(error.message, str)
        assert "could not be processed" not in error.message, error.message


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), values)
def test_process_bundle_never_raises_on_mutated_bundles(path: tuple[str | int, ...], value: Any) -> None:
    bundle = copy.deepcopy(BASE)
    node: Any = bundle
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    _check(process_bundle(json.dumps(bundle)))


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_process_bundle_never_raises_on_random_text(text: str) -> None:
    _check(process_bundle(text))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_process_bundle_never_raises_on_random_bytes(data: bytes) -> None:
    _check(process_bundle(data))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 400), st.text(alphabet=":-[]{}&*!|>'\"#%@ \n\tab1", max_size=20))
def test_process_bundle_never_raises_on_spliced_yaml(offset: int, splice: str) -> None:
    text = (Path(__file__).resolve().parents[2] / "packs" / "demo" / "demo-file-fixes.yaml").read_text()
    offset = min(offset * 10, len(text))
    _check(process_bundle(text[:offset] + splice + text[offset:]))
