"""User-simulator warnings: phases that never start, actors this installation cannot run, and
``llm`` actors that need a simulator deployment at run time.

A multi-turn pack repeats the same phases in many cases, so each kind of warning is given once,
at its first occurrence, with a count of the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bundle.validate.common import Report

LLM = "llm"
_VALID_ACTORS = ("scripted", "llm", "human")


class _Once:
    """Collects (path, message) per kind; reports the first with "and N more"."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[str, str, int]] = {}

    def add(self, kind: str, path: str, message: str) -> None:
        first = self.seen.get(kind)
        self.seen[kind] = (path, message, 1) if first is None else (first[0], first[1], first[2] + 1)

    def flush(self, report: Report) -> None:
        for path, message, count in self.seen.values():
            more = f" (and {count - 1} more phase{'s' if count > 2 else ''} like it)" if count > 1 else ""
            report.add(path, message + more)


def lint_simulators(
    bundle: dict[str, Any],
    actors: frozenset[str],
    can_fire: Callable[[dict[str, Any], int], bool],
    report: Report,
) -> None:
    once = _Once()
    supported = ", ".join(sorted(actors))
    for s, input_set in enumerate(bundle.get("input_sets") or ()):
        for c, case in enumerate(input_set.get("cases") or ()):
            simulator = case.get("user_simulator")
            phases = simulator.get("phases") if isinstance(simulator, dict) else None
            for p, phase in enumerate(phases or ()):
                if not isinstance(phase, dict):
                    continue
                base = f"input_sets[{s}].cases[{c}].user_simulator.phases[{p}]"
                actor = (phase.get("actor") or "").strip()
                trigger = (phase.get("trigger") or "").strip()
                if actor not in _VALID_ACTORS:
                    continue  # an error already
                if not can_fire(phase, p):
                    once.add(
                        f"skipped:{trigger}",
                        f"{base}.trigger",
                        f'"{trigger}" never fires in an unattended run: this {actor} phase is always skipped',
                    )
                elif actor not in actors:
                    once.add(
                        f"unsupported:{actor}",
                        f"{base}.actor",
                        f'"{actor}" cannot run on this installation (it runs {supported} actors): runs of this pack are refused',
                    )
                elif actor == LLM:
                    once.add(
                        "llm",
                        f"{base}.actor",
                        '"llm" phases need a simulator deployment (a model that plays the user), chosen when a run starts',
                    )
    once.flush(report)
