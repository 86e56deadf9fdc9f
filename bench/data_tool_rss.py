"""Worker memory of one big data-tool result (not a test): ``query_json`` of a ~26 MB JSON file.

issue 23: one ``query_json`` returning ~25 MB grew the worker process by 226 MB, outside every
sandbox cap (the result was parsed, re-dumped and redacted as objects in the worker). Results past
the inline limit now go to the spill file as text. This prints the growth of the worker's peak RSS
(VmHWM) over the call; the file is generated inside the sandbox so the worker never holds it.

Run: .venv/bin/python bench/data_tool_rss.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.sandbox import native
from engine.tests.tools.support import Harness, manifest
from engine.tools.primitives import query

LAUNCHER_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "var", "launcher")
ROWS = 330_000  # ~26 MB of JSON
GENERATE = (
    "import json; json.dump([{'id': i, 'name': 'item-%d' % i, 'tags': ['a', 'b', 'c'], 'v': i * 1.5} "
    f"for i in range({ROWS})], open('/workspace/big.json', 'w'))"
)


def peak_mib() -> int:
    with open("/proc/self/status") as fh:
        return int(next(line for line in fh if line.startswith("VmHWM")).split()[1]) // 1024


def main() -> int:
    native.DEFAULT_DIR = LAUNCHER_DIR
    query.JQ_TIMEOUT = 300.0  # a loaded host must not turn the measurement into a timeout
    h = Harness(manifest(["file", "data"], shell=True), tmp=tempfile.mkdtemp(prefix="rss-bench-"))
    try:
        if h.sandbox.exec(["python3", "-c", GENERATE], timeout=300).exit_code != 0:
            print("could not generate the file")
            return 1
        size = len(h.sandbox.read_file("/workspace/big.json"))
        h.call("query_json", {"query": ".[0]", "file_path": "/workspace/big.json"})  # warm: imports, zygote
        before = peak_mib()
        t = time.perf_counter()
        result = h.call("query_json", {"query": ".", "file_path": "/workspace/big.json"})
        after = peak_mib()
        print(f"query_json '.' over {size / 1e6:.1f} MB: worker peak RSS {before} -> {after} MiB (+{after - before} MiB), "
              f"{time.perf_counter() - t:.1f} s, {len(result.content)} characters returned")  # fmt: skip
    finally:
        h.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
