"""The one per-process cache of pack-version manifests.

A pack version is immutable, so a worker reads each manifest once and keeps it, with a case index
and the evaluation spec, for every later case of every run on that version. The cache key holds
the manifest checksum as well as the primary key: a primary key can come back after a database is
recreated (tests, a reset dev database), a checksum with different content cannot.

The cache is bounded by versions and by cases (docs/performance.md "Memory at 5,000 cases"): a
full-size pack (1 MiB, about 2,500 cases) takes about 5 MB in a worker process, so 32 of them
would have taken 160 MB in every pool process. The least recently used versions are dropped
first; the version just read is always kept, whatever its size.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from typing import cast

from engine.scoring.spec import EvaluationSpec
from engine.types import JSONObject
from packs.models import PackVersion

MAX_VERSIONS = 32  # a worker rarely runs more versions at once
MAX_CASES = 10_000  # about four full-size packs: ~20 MB per process


@dataclasses.dataclass(frozen=True)
class PackManifest:
    manifest: JSONObject
    cases: dict[tuple[str, str], JSONObject]  # (input set key, case key) → the manifest's case

    @property
    def evaluation_spec(self) -> EvaluationSpec:
        """The spec as bundle/manifest.py stored it, validated at publish (engine/scoring/spec.py: its shape)."""
        spec = self.manifest.get("evaluation_spec")
        return cast(EvaluationSpec, spec) if isinstance(spec, dict) else {}

    def case(self, input_set_key: str, case_key: str) -> JSONObject | None:
        return self.cases.get((input_set_key, case_key))


_cache: OrderedDict[tuple[int, str | None], PackManifest] = OrderedDict()  # least recently used first
_lock = threading.Lock()


def _index(manifest: JSONObject) -> dict[tuple[str, str], JSONObject]:
    index: dict[tuple[str, str], JSONObject] = {}
    input_sets = manifest.get("input_sets")
    for input_set in input_sets if isinstance(input_sets, list) else []:
        cases = input_set.get("cases") if isinstance(input_set, dict) else None
        for case in cases if isinstance(cases, list) else []:
            if isinstance(case, dict) and isinstance(input_set, dict):
                index[(str(input_set.get("key")), str(case.get("case_key") or case.get("item_key")))] = case
    return index


def pack_manifest(*, pack_version_id: int, checksum: str | None = None) -> PackManifest:
    """The version's manifest from the cache; ``checksum`` (its ``manifest_checksum``) spares a query."""
    if checksum is None:
        checksum = PackVersion.objects.filter(pk=pack_version_id).values_list("manifest_checksum", flat=True).first()
    key = (pack_version_id, checksum)
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            return cached
    manifest = PackVersion.objects.filter(pk=pack_version_id).values_list("manifest", flat=True).first()
    manifest = manifest if isinstance(manifest, dict) else {}
    loaded = PackManifest(manifest=manifest, cases=_index(manifest))
    with _lock:
        cached = _cache.setdefault(key, loaded)  # another thread may have read it meanwhile: one copy kept
        _cache.move_to_end(key)
        cases = sum(len(entry.cases) for entry in _cache.values())
        while len(_cache) > 1 and (len(_cache) > MAX_VERSIONS or cases > MAX_CASES):
            _, dropped = _cache.popitem(last=False)
            cases -= len(dropped.cases)
    return cached


def pack_manifest_cache_clear() -> None:
    with _lock:
        _cache.clear()
