"""CPU and first-command time of a cold sandbox, as started now against the ways it was started before.

    .venv/bin/python bench/sandbox_start_bench.py [--n 100] [--rounds 3] [--launcher-dir var/launcher]

Each sample: a cold sandbox (native launcher), ``exec ["true"]`` (the first command: timed), four
``exec ["cat", "/etc/hostname"]``, destroy. CPU is this process's and its children's (bwrap, the
launcher, the commands: ``RUSAGE_SELF`` + ``RUSAGE_CHILDREN``) per sandbox. Layouts, interleaved
round by round so the machine's drift hits them alike:

- ``now``: the root skeleton (``engine/sandbox/rootfs.py``) and the uid dropped by the native
  launcher's ``--as-uid`` mode;
- ``per-file binds``: every file bound one by one (no skeleton), the shim kept;
- ``setpriv``: the skeleton kept, util-linux ``setpriv`` to drop the uid;
- ``before``: per-file binds and ``setpriv`` (the tree before both changes).

Printed per layout: first-command p50/p95 and CPU per sandbox, each with its ratio to ``before``.
Needs bubblewrap and root (the sandbox's own uid); a shared machine makes every figure noisier.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.sandbox import SandboxConfig, SandboxSettings, bwrap, create_sandbox, native, rootfs  # noqa: E402

SETTINGS = SandboxSettings(launcher="native")


def cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def layout(name: str) -> Callable[[ExitStack], None]:
    def enter(stack: ExitStack) -> None:
        if name in ("per-file binds", "before"):
            stack.enter_context(mock.patch.object(rootfs, "skeleton_path", lambda directory, entries: None))
        if name in ("setpriv", "before"):
            stack.enter_context(mock.patch.object(bwrap, "uid_shim_fd", lambda settings, binary=None: None))

    return enter


def sample(n: int) -> tuple[list[float], float]:
    first = []
    before = cpu()
    for _ in range(n):
        start = time.perf_counter()
        sandbox = create_sandbox(SandboxConfig(allow_shell=True), settings=SETTINGS)
        try:
            sandbox.exec(["true"])
            first.append(time.perf_counter() - start)
            for _ in range(4):
                sandbox.exec(["cat", "/etc/hostname"])
        finally:
            sandbox.destroy()
    return first, (cpu() - before) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="sandboxes per layout and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--launcher-dir", default=str(ROOT / "var" / "launcher"))
    args = parser.parse_args()
    if bwrap.bwrap_path() is None or os.geteuid() != 0:
        print("needs bubblewrap and root: nothing to measure")
        return 1
    native.DEFAULT_DIR = args.launcher_dir
    if native.launcher_binary(args.launcher_dir) is None:
        print("the native launcher cannot be built here: nothing to measure")
        return 1
    names = ["now", "per-file binds", "setpriv", "before"]
    firsts: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm-up: builds each layout's skeleton once
        with ExitStack() as stack:
            layout(name)(stack)
            sample(3)
    for round_no in range(args.rounds):
        for name in names if round_no % 2 == 0 else reversed(names):
            with ExitStack() as stack:
                layout(name)(stack)
                first, spent = sample(args.n)
            firsts[name] += first
            cpus[name].append(spent)
    base_first = statistics.median(firsts["before"])
    base_cpu = statistics.mean(cpus["before"])
    print(f"{'layout':<16} {'first p50':>9} {'first p95':>9} {'ratio':>6} {'CPU/sandbox':>11} {'ratio':>6}  (ms; 1 + 4 exec each)")
    for name in names:
        ordered = sorted(firsts[name])
        p50, p95 = statistics.median(ordered), ordered[round(0.95 * (len(ordered) - 1))]
        spent = statistics.mean(cpus[name])
        rounds = ", ".join(f"{c * 1e3:.2f}" for c in cpus[name])
        print(
            f"{name:<16} {p50 * 1e3:9.2f} {p95 * 1e3:9.2f} {p50 / base_first:6.2f} {spent * 1e3:11.2f} {spent / base_cpu:6.2f}  rounds: {rounds}"
        )
    print("baseline: 'before' (per-file binds and setpriv), measured in the same run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
