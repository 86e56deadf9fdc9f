"""The built-in pack library: the AgentClash catalog packs shipped in ``packs/library/`` (MIT)."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from bundle import process_bundle

LIBRARY_DIR = Path(__file__).resolve().parent / "library"
LICENSE_FILE = LIBRARY_DIR / "LICENSE.agentclash"


@dataclasses.dataclass(frozen=True)
class LibraryPack:
    slug: str
    name: str
    family: str
    description: str
    version_number: int
    execution_mode: str
    challenges_count: int
    cases_count: int
    filename: str
    source: str


@functools.lru_cache(maxsize=4)
def _load(signature: tuple[tuple[str, float], ...]) -> tuple[LibraryPack, ...]:
    packs = []
    for name, _mtime in signature:
        source = (LIBRARY_DIR / name).read_text(encoding="utf-8")
        result = process_bundle(source)
        if not result.valid or result.manifest is None:
            continue  # a broken library file is a test failure (test_library), not a page crash
        manifest = result.manifest
        pack = manifest["pack"]
        packs.append(
            LibraryPack(
                slug=pack["slug"],
                name=pack["name"],
                family=pack.get("family", ""),
                description=pack.get("description", ""),
                version_number=manifest["version"]["number"],
                execution_mode=manifest["version"].get("execution_mode") or "native",
                challenges_count=len(manifest.get("challenges") or []),
                cases_count=sum(len(s.get("cases") or []) for s in manifest.get("input_sets") or []),
                filename=name,
                source=source,
            )
        )
    return tuple(sorted(packs, key=lambda p: p.name.lower()))


def library_packs() -> tuple[LibraryPack, ...]:
    files = sorted(LIBRARY_DIR.glob("*.yaml"))
    return _load(tuple((f.name, f.stat().st_mtime) for f in files))


def library_pack_get(slug: str) -> LibraryPack | None:
    return next((p for p in library_packs() if p.slug == slug), None)


def library_license() -> str:
    try:
        return LICENSE_FILE.read_text(encoding="utf-8")
    except OSError:
        return ""
