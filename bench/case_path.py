"""The modules one native case's path crosses, as the worker runs it (issue 21's "Done when").

    .venv/bin/python bench/case_path.py [--variant read|exec|mix] [--json] [--root /work/baseline]

Runs cases of a ``bench/throughput_packs.py`` variant in this process (no Celery, like
``bench/profile_case.py``): a first case warms imports and caches, the second runs under
``sys.setprofile`` in this thread only (the ticker and the sandbox threads are not traced).
Entry: ``runs.pipeline.case_run_execute`` (or ``runs.services.case_run_execute`` in older trees),
scored inline. A *stop* is a call into a project module (``frame.f_globals["__name__"]``) other
than the module of the nearest project frame below it; stops into the same module back to back
are one stop (one *entry*). Project = the apps below; ``engine/`` and ``bundle/`` are the kernel:
called, not crossed (the figures with them are printed for information only). A measurement:
it always exits 0 and ends with the ``CASE PATH`` line (on stderr with ``--json``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

APPS = frozenset(
    {"runs", "scoring", "regression", "comparisons", "packs", "artifacts", "infrastructure", "secrets_app", "workspaces", "core"}
)
KERNEL = frozenset({"engine", "bundle"})
DATABASE_LAYER = "runs.adapters"
VIEWS = {"project": APPS, "with_kernel": APPS | KERNEL}


class PathTracer:
    """Records, per view (a set of top-level packages), the project modules entered in order; and
    the case's *orchestration path*: the distinct calls project code makes into another project
    module (see :func:`orchestration`)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.owner: dict[FrameType, tuple[str | None, ...]] = {}  # live frame -> nearest project module, per view
        self.stops: dict[str, list[str]] = {name: [] for name in VIEWS}
        self.views = list(VIEWS.items())
        self.edges: list[tuple[str, str, str]] = []  # (caller module, callee module, callee function), first call order
        self.seen_edges: set[tuple[str, str, str]] = set()

    def _below(self, frame: FrameType) -> tuple[str | None, ...]:
        back = frame.f_back
        while back is not None and back not in self.owner:
            back = back.f_back  # frames older than the trace (this bench) own no project module
        return self.owner[back] if back is not None else (None,) * len(self.views)

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if threading.get_ident() != self.thread:
            return
        if event == "return":
            self.owner.pop(frame, None)
            return
        if event != "call":
            return
        module = frame.f_globals.get("__name__") or ""
        top = module.partition(".")[0]
        below, mine = self._below(frame), []
        self._edge(module, top, below, frame)
        for i, (name, packages) in enumerate(self.views):
            if top in packages:
                if module != below[i]:
                    self.stops[name].append(module)
                mine.append(module)
            else:
                mine.append(below[i])
        self.owner[frame] = tuple(mine)

    def _edge(self, module: str, top: str, below: tuple[str | None, ...], frame: FrameType) -> None:
        """A project → project call, made by project code (the kernel's nearest frame is below the
        caller's project frame, or absent: not a callback the kernel makes), into another module."""
        caller, kernel_caller = below[0], below[1]
        if top not in APPS or caller is None or caller == module or kernel_caller != caller:
            return
        if module.endswith(".models") or caller.endswith(".models"):
            return  # model fields and properties are data, not a step of the path
        if module.startswith(DATABASE_LAYER) or caller.startswith(DATABASE_LAYER):
            return  # the ORM's stand-in for the hot statements: the database layer, like Django's ORM
        edge = (caller, module, frame.f_code.co_qualname)
        if edge not in self.seen_edges:
            self.seen_edges.add(edge)
            self.edges.append(edge)


def orchestration(edges: list[tuple[str, str, str]]) -> list[str]:
    """The case's orchestration path: the callee modules of the distinct project → project calls, in
    first-call order. A call repeated per agent step (the same caller, callee and function) is one
    stop; calls the kernel makes back into project code (its event sink, cancel and deadline
    checks, once per step) are the kernel's loop, not the path; ``*.models`` are data."""
    return [callee for _, callee, _ in edges]


def summary(stops: list[str]) -> dict[str, Any]:
    """The figures of one view: the path with runs of one module collapsed, entries per module."""
    path: list[list[Any]] = []
    for module in stops:
        if path and path[-1][0] == module:
            path[-1][1] += 1
        else:
            path.append([module, 1])
    entries = Counter(module for module, _ in path)
    seen: set[str] = set()
    returns = []
    for module, _ in path:
        if module in seen:
            returns.append(module)
        seen.add(module)
    return {
        "path": path,
        "modules": len(entries),
        "stops": len(path),
        "crossing_calls": len(stops),
        "entries": dict(entries.most_common()),
        "max_entries": max(entries.values(), default=0),
        "over_twice": sorted(module for module, n in entries.items() if n > 2),
        "returns": len(returns),
        "returned_to": dict(Counter(returns).most_common()),
    }


def entry_point() -> Callable[..., str]:
    for name in ("runs.pipeline", "runs.services"):
        try:
            return getattr(importlib.import_module(name), "case_run_execute")  # noqa: B009
        except (ImportError, AttributeError):
            continue
    raise SystemExit("no case_run_execute in runs.pipeline or runs.services")


def _trace(execute: Callable[..., str], case_run_id: int) -> tuple[str, PathTracer]:
    tracer = PathTracer()
    sys.setprofile(tracer)
    try:
        result = execute(case_run_id=case_run_id, score_inline=True)
    finally:
        sys.setprofile(None)
        tracer.owner.clear()  # frames left by the trace hold their locals
    return result, tracer


def _figures(tracer: PathTracer) -> dict[str, Any]:
    edges = tracer.edges
    return {
        **{name: summary(stops) for name, stops in tracer.stops.items()},
        "orchestration": {**summary([str(edges[0][0]), *orchestration(edges)] if edges else []), "edges": edges},
    }


def measure(variant: str) -> dict[str, Any]:
    """A lane of three cases: the first warms imports and caches, the second is a case's path (the
    target), the third, the lane's last, also completes the lane and the run (for information)."""
    from bench.throughput_packs import SCRIPTS, captured_run

    execute = entry_point()
    with captured_run(variant, SCRIPTS[variant], cases=3, max_in_flight=1000) as captured:
        ids = sorted({int(item[1][0]) for item in captured if item[0] == "runs.case_run_execute"})
        lane = ids[: len(ids) // 2] if len(ids) >= 6 else ids  # captured_run races two lanes: take the first lane's cases
        warm = execute(case_run_id=lane[0], score_inline=True)
        result, middle = _trace(execute, lane[1])
        last_result, last = _trace(execute, lane[2])
    return {
        "variant": variant,
        "entry": f"{execute.__module__}.{execute.__qualname__}",
        "warm_case": warm,
        "case": result,
        **_figures(middle),
        "last_case": {"case": last_result, **_figures(last)},
    }


def report(name: str, figures: dict[str, Any], *, compact: bool = False) -> None:
    print(f"\n== {name} ==")
    steps = [module + (f" (x{calls})" if calls > 1 else "") for module, calls in figures["path"]]
    if compact:
        print(textwrap.fill(" > ".join(steps), width=140, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False))
    for i, step in enumerate([] if compact else steps, 1):
        print(f"  {i:3d}. {step}")
    print(f"distinct modules crossed: {figures['modules']}")
    print(f"stops: {figures['stops']} ({figures['crossing_calls']} crossing calls before collapsing runs of one module)")
    print("entries per module: " + ", ".join(f"{module} {n}" for module, n in figures["entries"].items()))
    print(f"modules entered more than twice: {', '.join(figures['over_twice']) or 'none'}")
    returned = ", ".join(f"{module} {n}" for module, n in figures["returned_to"].items())
    print(f"returns to a module already left: {figures['returns']}" + (f" ({returned})" if returned else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", choices=("read", "exec", "mix"), default="mix")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the tree to measure")
    args = parser.parse_args()
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    os.chdir(root)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{root / 'var' / 'bench-case-path.sqlite3'}")
    import django

    django.setup()
    figures = measure(args.variant)
    figures["root"], figures["database"] = str(root), django.db.connection.vendor
    project = figures["orchestration"]
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"{args.variant} case on {figures['database']} in {root}: entry {figures['entry']}, "
              f"warm-up case {figures['warm_case']}, traced case {figures['case']}")  # fmt: skip
        print("Project modules: " + ", ".join(sorted(APPS)) + ". The kernel (engine/, bundle/) is called, not crossed:")
        print("its modules are not stops, and a project module it calls back counts as entered from its project caller.")
        report("orchestration path of a case: distinct project-to-project calls (the target)", project)
        last = figures["last_case"]["orchestration"]
        report("the lane's last case, which also completes the lane and the run (for information)", last, compact=True)
        report("every entry into a project module, callbacks and repeats included (for information)", figures["project"], compact=True)
        report("with engine/ and bundle/ (for information)", figures["with_kernel"], compact=True)
    line = f"CASE PATH: {project['modules']} modules, max entries {project['max_entries']} (target: <= 12 modules, <= 2 entries)"
    print(line, file=sys.stderr if args.json else sys.stdout)  # --json: stdout stays one JSON document
    return 0


if __name__ == "__main__":
    try:
        main()
    except Exception as exc:  # a measurement: report, never fail
        print(f"case_path: could not measure: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("CASE PATH: not measured (target: <= 12 modules, <= 2 entries)")
    sys.exit(0)
