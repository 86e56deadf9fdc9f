"""Worker memory of one big data-tool result (not a test): ``query_json`` over a ~26 MB JSON file.

issue 23: one ``query_json`` returning ~25 MB grew the worker process by 226 MB, outside every
sandbox cap (the result was parsed, re-dumped and redacted as objects in the worker); spilling it
as text brought that to +69 MiB. The worker still reads an answer whole (about 2.6 times its size
at the peak), so answers are now bounded (``toolhost.MAX_OUTPUT_BYTES``, 8 MiB): the 26 MB result
is refused with a message saying how to narrow it, and the largest allowed one costs ~20 MiB.

Each measurement runs in its own process (peak RSS, VmHWM, only grows), alternating this checkout
and a baseline checkout (``--baseline /path/to/other/worktree``) so both see the same machine
load; the figures are medians, with the ratio this/baseline. The file is generated inside the
sandbox so the worker never holds it.

Run: .venv/bin/python bench/data_tool_rss.py [--baseline ../wtbase] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = 330_000  # ~26 MB of JSON
GENERATE = (
    "import json; json.dump([{'id': i, 'name': 'item-%d' % i, 'tags': ['a', 'b', 'c'], 'v': i * 1.5} "
    f"for i in range({ROWS})], open('/workspace/big.json', 'w'))"
)
CASES = {"whole (26 MB)": ".", "a slice (~7 MB)": ".[:90000]"}


def peak_mib() -> int:
    with open("/proc/self/status") as fh:
        return int(next(line for line in fh if line.startswith("VmHWM")).split()[1]) // 1024


def measure(repo: str, query_text: str) -> dict[str, object]:
    """One call in this process, with ``repo``'s engine: the peak RSS growth and what came back."""
    sys.path.insert(0, repo)
    from engine.sandbox import native
    from engine.tests.tools.support import Harness, manifest
    from engine.tools.primitives import query

    native.DEFAULT_DIR = os.path.join(repo, "var", "launcher")
    query.JQ_TIMEOUT = 300.0  # a loaded host must not turn the measurement into a timeout
    h = Harness(manifest(["file", "data"], shell=True), tmp=tempfile.mkdtemp(prefix="rss-bench-"))
    try:
        if h.sandbox.exec(["python3", "-c", GENERATE], timeout=300).exit_code != 0:
            raise SystemExit("could not generate the file")
        h.call("query_json", {"query": ".[0]", "file_path": "/workspace/big.json"})  # warm: imports, zygote
        before, t = peak_mib(), time.perf_counter()
        result = h.call("query_json", {"query": query_text, "file_path": "/workspace/big.json"})
        growth = peak_mib() - before
        return {"growth_mib": growth, "seconds": time.perf_counter() - t, "is_error": result.is_error, "content": result.content[:160]}
    finally:
        h.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one", nargs=2, metavar=("REPO", "QUERY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one[0], args.one[1])))
        return 0
    repos = {"this": HERE, **({"baseline": os.path.abspath(args.baseline)} if args.baseline else {})}
    print(f"load: {os.getloadavg()[0]:.1f} (1-min average), {os.cpu_count()} CPUs")
    for label, query_text in CASES.items():
        growth: dict[str, list[int]] = {name: [] for name in repos}
        shown: dict[str, str] = {}
        for _ in range(args.rounds):
            for name, repo in repos.items():  # interleaved: both see the same load
                out = subprocess.run([sys.executable, __file__, "--one", repo, query_text], capture_output=True, text=True, check=True)
                got = json.loads(out.stdout.strip().splitlines()[-1])
                growth[name].append(int(got["growth_mib"]))
                shown[name] = ("refused: " if got["is_error"] else "answered: ") + str(got["content"])[:90]
        medians = {name: statistics.median(values) for name, values in growth.items()}
        for name in repos:
            print(
                f"query_json {query_text!r} over the file, {label}, {name}: worker peak RSS +{medians[name]:.0f} MiB (runs {growth[name]})"
            )
            print(f"    {shown[name]}")
        if medians.get("baseline"):
            print(f"    ratio this/baseline: {medians['this'] / medians['baseline']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
