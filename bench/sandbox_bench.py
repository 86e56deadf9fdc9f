"""Sandbox start and round-trip benchmark (not a test): cold sandboxes versus warm ones and the
persistent launcher channel, measured in the same run, p50/p95 in milliseconds.

Rows (issue 16, item 2; docs/engine-safety.md "Warm sandboxes and the persistent channel"):

- first command: ``create_sandbox`` + ``exec ["true"]``. Baseline: a cold sandbox (bwrap +
  launcher + cgroup started by the first command). New: a pre-started one-use sandbox handed out
  by the warm pool (``SANDBOX_WARM_POOL`` >= 1). ``first command``: the refill (pre-start of the
  next sandbox) has finished before the command, as when the case's first model call comes
  before its first command; ``refill beside``: hand-out and command at once, the refill running
  beside them; ``back to back``: cases with no time between them (hand-out waits for the
  pre-start still in flight).                                                target: < 5 ms
- exec round trip: ``exec ["true"]``. Baseline: a cold start per call. New: over the launcher's
  persistent SEQPACKET channel.
- read_file round trip: ``ToolSet.execute(read_file)`` of a 1 KiB file: host side, fd-confined
  (openat2), no process at all, so no baseline row.                         target: < 1 ms
- cat round trip: reading the same file from inside the sandbox (``exec cat``). Baseline: a cold
  start per call.
- data tool round trip: ``search_files`` (a fork of the launcher running the toolhost). Baseline:
  a cold start per call.
- zygote start: ``python3 -I -S`` importing what the data tools' zygote (``zygote.py``) imports,
  outside bwrap. Baseline: the modules of the Python launcher before issue 16 (``json``,
  ``socket``, ``signal``, ``ctypes``, ``array``…). New: the C modules it imports now (``_socket``,
  ``_signal``, ``_ctypes``, ``marshal``…).
- destroy: ``sandbox.destroy()`` (kill, cgroup, tmpfs, directory), reported.
- CPU per zygote start: user + system time of the two import rows' interpreters (mean).
- PID 1 start (docs/engine-safety.md "The native launcher"): wall and CPU of a minimal bwrap
  running the native launcher (``launcher.c``, exiting at its argument check). Baseline: the same
  bwrap running ``true``; the difference is what PID 1's start costs.

Run: .venv/bin/python bench/sandbox_bench.py [--n 20] [--launcher-dir var/launcher]  (needs bubblewrap; root for the cgroup
and tmpfs workspace). The machine may be shared: compare rows of the same run.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.sandbox import LocalSandbox, SandboxConfig, SandboxSettings, create_sandbox, native, pool
from engine.sandbox.bwrap import bwrap_path
from engine.tools import build_toolset
from engine.types import ToolCall

MANIFEST = {"tool_policy": {"allowed_tool_kinds": [], "allow_shell": True}}
COLD = SandboxSettings(warm_sandboxes=0)
WARM = SandboxSettings(warm_sandboxes=1)


def ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1e3, p95 * 1e3


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def new_sandbox(settings: SandboxSettings) -> LocalSandbox:
    return create_sandbox(SandboxConfig.from_manifest(MANIFEST), settings=settings)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # microseconds, unlike os.times' 10 ms ticks
    return usage.ru_utime + usage.ru_stime


def cold_per_call(n: int, call: Callable[[LocalSandbox], object], destroys: list[float] | None = None) -> list[float]:
    """A new cold sandbox per call, timed from its creation to the end of ``call``."""
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        sandbox = new_sandbox(COLD)
        sandbox.write_file("data.txt", b"x" * 1024)
        call(sandbox)
        samples.append(time.perf_counter() - start)
        spent = timed(sandbox.destroy)
        if destroys is not None:
            destroys.append(spent)
    return samples


def warm_first(n: int, *, mode: str) -> list[float]:
    """``mode``: ``idle`` (the refill finished before hand-out, and the timed first command follows
    hand-out after the refill finished too, as when a model call comes first), ``handout`` (hand-out
    + first command at once, the refill starting beside it) or ``back_to_back`` (no time between
    cases: hand-out waits for the pre-start still in flight)."""
    fill = pool.POOL.checkout(SandboxConfig.from_manifest(MANIFEST), base_dir=None, settings=WARM)
    fill.exec(["true"])  # a shape whose cases run commands gets spares (pool.py)
    fill.destroy()
    samples = []
    for _ in range(n):
        if mode != "back_to_back":
            pool.POOL.wait_ready()
        start = time.perf_counter()
        sandbox = new_sandbox(WARM)
        if mode == "idle":
            spent = time.perf_counter() - start
            pool.POOL.wait_ready()
            start = time.perf_counter() - spent
        sandbox.exec(["true"])
        samples.append(time.perf_counter() - start)
        sandbox.destroy()
    pool.POOL.close()
    return samples


def persistent(n: int) -> dict[str, list[float]]:
    sandbox = new_sandbox(COLD)
    try:
        sandbox.write_file("data.txt", b"x" * 1024)
        toolset = build_toolset(MANIFEST, sandbox=sandbox, secrets={})
        read = ToolCall(id="r", name="read_file", arguments='{"path": "data.txt"}')
        search = ToolCall(id="s", name="search_files", arguments='{"pattern": "*.txt"}')
        for warmup in (lambda: sandbox.exec(["true"]), lambda: toolset.execute(read), lambda: toolset.execute(search)):
            warmup()
        return {
            "exec": [timed(lambda: sandbox.exec(["true"])) for _ in range(n)],
            "read_file": [timed(lambda: toolset.execute(read)) for _ in range(n)],
            "cat": [timed(lambda: sandbox.exec(["cat", "/workspace/data.txt"])) for _ in range(n)],
            "search_files": [timed(lambda: toolset.execute(search)) for _ in range(n)],
        }
    finally:
        sandbox.destroy()


def pid1_start(n: int, binary: str) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU (bwrap and everything it reaps) of a minimal bwrap running ``true`` and the
    native launcher's start (it exits at its argument check, after ``prctl``). The difference to
    ``true`` is what PID 1's start costs."""
    bwrap = bwrap_path() or "bwrap"
    base = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/usr", "/usr"]
    for name in ("bin", "lib", "lib64", "sbin"):
        path = "/" + name
        base += (
            ["--symlink", os.readlink(path), path] if os.path.islink(path) else (["--ro-bind", path, path] if os.path.isdir(path) else [])
        )
    base += ["--proc", "/proc", "--dev", "/dev", "--ro-bind", binary, "/launcher", "--as-pid-1", "--"]
    python = SandboxSettings().python
    commands = {
        "true": ["/usr/bin/true"],
        "native": ["/launcher", "-1", "0", python, "/none", "00"],
    }
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in commands}
    for _ in range(n):
        for name, command in commands.items():
            before = children_cpu()
            wall = timed(
                functools.partial(subprocess.run, base + command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            )
            out[name][0].append(wall)
            out[name][1].append(children_cpu() - before)
    return out


def cold_tool(sandbox: LocalSandbox) -> None:
    build_toolset(MANIFEST, sandbox=sandbox, secrets={}).execute(ToolCall(id="s", name="search_files", arguments='{"pattern": "*.txt"}'))


OLD_IMPORTS = "import array, ctypes, json, os, resource, select, signal, socket, sys, time"
NEW_IMPORTS = "import _ctypes, _signal, _socket, marshal, os, resource, select, sys, time"


def launcher_imports(n: int, imports: str) -> tuple[list[float], list[float]]:
    """Wall time and CPU time of ``python -I -S -c imports``, per start."""
    python = SandboxSettings().python
    wall, cpu = [], []
    for _ in range(n):
        before = children_cpu()
        wall.append(timed(lambda: subprocess.run([python, "-I", "-S", "-c", imports], check=True)))
        cpu.append(children_cpu() - before)
    return wall, cpu


def mean_ms(samples: list[float]) -> float:
    return statistics.fmean(samples) * 1e3


def row(label: str, base: list[float] | None, new: list[float], target: str = "") -> None:
    new50, new95 = ms(new)
    if base is None:
        print(f"{label:<30} {'':>17} {new50:8.2f} {new95:8.2f} {'':>7}  {target}")
        return
    b50, b95 = ms(base)
    print(f"{label:<30} {b50:8.2f} {b95:8.2f} {new50:8.2f} {new95:8.2f} {b50 / new50:6.1f}x  {target}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="samples per row (default 20)")
    parser.add_argument(
        "--launcher-dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "var", "launcher")
    )
    args = parser.parse_args()
    n = args.n
    if bwrap_path() is None:
        print("bubblewrap is not installed: nothing to measure")
        return 1
    native.DEFAULT_DIR = args.launcher_dir
    if native.launcher_binary(args.launcher_dir) is None:
        print("the native launcher cannot be built here: no sandbox can start")
        return 1
    starts = pid1_start(n * 2, native.launcher_binary(args.launcher_dir) or "")
    destroys: list[float] = []
    cold_first = cold_per_call(n, lambda s: s.exec(["true"]), destroys)
    warm_idle = warm_first(n, mode="idle")
    warm_handout = warm_first(n, mode="handout")
    warm_racing = warm_first(n, mode="back_to_back")
    steady = persistent(n * 5)
    cold_read = cold_per_call(n, lambda s: s.exec(["cat", "/workspace/data.txt"]))
    cold_search = cold_per_call(n, cold_tool)
    (old_imports, old_cpu), (new_imports, new_cpu) = launcher_imports(n, OLD_IMPORTS), launcher_imports(n, NEW_IMPORTS)
    print(f"{'ms (p50 / p95)':<30} {'base p50':>8} {'base p95':>8} {'new p50':>8} {'new p95':>8} {'ratio':>7}")
    row("first command", cold_first, warm_idle, "target < 5 ms")
    row("first command, refill beside", cold_first, warm_handout)
    row("first command, back to back", cold_first, warm_racing)
    row("exec true round trip", cold_first, steady["exec"])
    row("read_file round trip (host)", None, steady["read_file"], "target < 1 ms")
    row("cat round trip", cold_read, steady["cat"])
    row("search_files round trip", cold_search, steady["search_files"])
    row("zygote python + imports", old_imports, new_imports)
    print(f"CPU per zygote start (mean): {mean_ms(old_cpu):.1f} ms before, {mean_ms(new_cpu):.1f} ms now")
    row("destroy", None, destroys)
    print(f"\n{'PID 1 start (bwrap)':<30} {'true p50':>8} {'true p95':>8} {'nat p50':>8} {'nat p95':>8} {'ratio':>7}")
    row("bwrap + native PID 1: wall", starts["true"][0], starts["native"][0])
    row("bwrap + native PID 1: CPU", starts["true"][1], starts["native"][1])
    print(f"pool: {pool.POOL.stats}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
