"""Engine tool-layer benchmarks (not tests): prints figures and ratios against bare baselines.

(a) read_file of a 1 KiB file through ToolSet.execute vs open().read()   target: overhead <= 50 µs
(b) exec ["true"] in the bubblewrap sandbox vs subprocess.run(["true"])  target: ratio <= 3

Run: .venv/bin/python bench/engine_bench.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.sandbox import SandboxConfig, create_sandbox
from engine.tools import build_toolset
from engine.types import ToolCall


def per_call(fn, n: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def main() -> int:
    manifest = {"tool_policy": {"allowed_tool_kinds": [], "allow_shell": True}}
    sandbox = create_sandbox(SandboxConfig.from_manifest(manifest))
    try:
        toolset = build_toolset(manifest, sandbox=sandbox, secrets={"API_TOKEN": "bench-secret-value"})
        sandbox.write_file("data.txt", b"x" * 1024)
        host = sandbox.host_path("data.txt")
        call = ToolCall(id="b", name="read_file", arguments='{"path": "data.txt"}')

        def bare_read() -> None:
            with open(host, "rb") as fh:
                fh.read()

        n = 5000
        tool = per_call(lambda: toolset.execute(call), n)
        bare = per_call(bare_read, n)
        print(f"(a) read_file 1 KiB via toolset: {tool * 1e6:8.1f} µs/call")
        print(f"    bare open().read():          {bare * 1e6:8.1f} µs/call")
        print(f"    overhead: {(tool - bare) * 1e6:.1f} µs (target <= 50 µs)  ratio {tool / bare:.1f}x")

        if shutil.which("bwrap") is None:
            print("(b) skipped: bubblewrap not installed")
            return 0
        m = 300
        sandboxed = per_call(lambda: sandbox.exec(["true"]), m)
        baseline = per_call(lambda: subprocess.run(["true"], check=False), m)
        print(f"(b) exec ['true'] in bwrap sandbox: {sandboxed * 1e3:7.3f} ms/call")
        print(f"    bare subprocess.run(['true']):  {baseline * 1e3:7.3f} ms/call")
        print(f"    ratio {sandboxed / baseline:.2f} (target <= 3)")
        start = time.perf_counter()
        fresh = create_sandbox(SandboxConfig())
        fresh.exec(["true"])
        first = time.perf_counter() - start
        fresh.destroy()
        print(f"    first exec of a new sandbox (starts bwrap + launcher): {first * 1e3:.1f} ms")
    finally:
        sandbox.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
