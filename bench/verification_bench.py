"""CPU per case of a code check: in the sandbox the agent left (before issue 22) against the
sandbox restarted fresh for the checkers (``engine/sandbox/verification.py``, now).

    .venv/bin/python bench/verification_bench.py [--n 50] [--launcher-dir var/launcher]

Each sample is one case of ``bench/throughput_packs.py``'s ``mix`` pack without the agent loop: a
sandbox with the staged files and the answer, one command (the agent's), then the pack's
``code_execution`` check, then destroy. ``in place``: the test command run with ``sh -lc`` in
that sandbox, as verification did before; ``fresh``: ``run_post_execution`` (captures, then the
restart and the check); ``fresh, no pack files``: the same without read-only files to stage.
CPU is this process's and its children's (bwrap, the launcher, the commands), interleaved sample
by sample so the machine's drift hits every variant alike. Needs bubblewrap and root.

``bare bwrap`` is the floor under ``fresh``'s extra cost: one bubblewrap lifetime with the
sandbox's namespaces, ``/usr``, ``/proc``, ``/dev`` and a tmpfs, running ``true`` — no launcher,
uid shim, cgroup, seccomp filter, skeleton or workspace. Its line shows its own CPU, not a
difference (docs/performance.md, "Seventh pass").
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.throughput_packs import SOLUTION, pack_yaml  # noqa: E402
from engine.sandbox import LocalSandbox, SandboxConfig, SandboxSettings  # noqa: E402
from engine.sandbox.bwrap import BIN_DIRS, bwrap_features, bwrap_path  # noqa: E402
from engine.scoring.verification import run_post_execution  # noqa: E402

STAGED = {
    "/workspace/notes.txt": b"note number 0",
    **{
        f"/workspace/agentclash/{name}.json": b"{}"
        for name in ("run-context", "challenges", "challenge-input-set", "challenge-pack-manifest")
    },
}


def cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@functools.cache
def bare_bwrap_argv() -> list[str]:
    """A bwrap lifetime with the sandbox's namespaces and its cheapest mounts, running ``true``."""
    exe = bwrap_path() or "bwrap"
    links = [arg for name in BIN_DIRS if os.path.islink("/" + name) for arg in ("--symlink", os.readlink("/" + name), "/" + name)]
    dirs = [
        arg
        for name in BIN_DIRS
        if os.path.isdir("/" + name) and not os.path.islink("/" + name)
        for arg in ("--ro-bind", "/" + name, "/" + name)
    ]
    userns = ["--disable-userns"] if "--disable-userns" in bwrap_features(exe) else []
    return [
        exe, "--unshare-user", *userns, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--unshare-net", "--die-with-parent", "--new-session", "--as-pid-1",
        "--ro-bind", "/usr", "/usr", *links, *dirs, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
        "--remount-ro", "/", "--", "/usr/bin/true",
    ]  # fmt: skip


def sample(variant: str, spec: Any, settings: SandboxSettings, base_dir: str) -> float:
    started = cpu()
    if variant == "bare bwrap":
        subprocess.run(bare_bwrap_argv(), check=True, env={})
        return cpu() - started
    sandbox = LocalSandbox(SandboxConfig(allow_shell=True), base_dir=base_dir, settings=settings)
    try:
        sandbox.stage_files(STAGED)
        sandbox.write_file("/workspace/solution.py", SOLUTION.encode())
        sandbox.exec(["true"])  # the agent's command: the sandbox's launcher is running
        if variant == "in place":
            command = spec["validators"][2]["config"]["test_command"]
            assert sandbox.exec(["sh", "-lc", command], cwd="/workspace", timeout=30).exit_code == 0
        else:
            staged = STAGED if variant == "fresh" else {}
            out: Any = run_post_execution(spec, sandbox, {}, checker_files=staged)
            assert out["code_executions"]["tests_pass"]["exit_code"] == 0, out
    finally:
        sandbox.destroy()
    return cpu() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=50, help="samples per variant")
    parser.add_argument("--launcher-dir", default=str(ROOT / "var" / "launcher"))
    parser.add_argument("--base-dir", default="/tmp/agentclash-sandboxes")
    args = parser.parse_args()
    spec = yaml.safe_load(pack_yaml("mix", cases=1, slug="verification-bench"))["version"]["evaluation_spec"]
    settings = SandboxSettings(launcher_dir=args.launcher_dir)
    variants = ("in place", "fresh", "fresh, no pack files", "bare bwrap")
    samples: dict[str, list[float]] = {variant: [] for variant in variants}
    for i in range(args.n + 3):
        for variant in variants:
            seconds = sample(variant, spec, settings, args.base_dir)
            if i >= 3:  # warm-up
                samples[variant].append(seconds * 1000)
    before = statistics.median(samples["in place"])
    print(f"{'variant':22} {'CPU/case p50':>12} {'mean':>7} {'vs in place':>12}  (ms; {args.n} samples each)")
    for variant in variants:
        median = statistics.median(samples[variant])
        versus = f"{median - before:+11.2f}" if variant != "bare bwrap" else f"{'(its own)':>11}"
        print(f"{variant:22} {median:12.2f} {statistics.mean(samples[variant]):7.2f} {versus}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
