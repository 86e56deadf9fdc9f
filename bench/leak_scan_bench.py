"""The leak scan's share of a case's CPU (issue 23: under 5 % on the ``mix`` variant); not a test.

    .venv/bin/python bench/leak_scan_bench.py [--cases 20]

Runs ``--cases`` cases of the ``mix`` variant (bench/throughput_packs.py, as bench/profile_case.py
does: inline, scored, in this process) and measures the CPU per case. Then it replays the same
cases' stored events through what a security pack adds to each case, with four planted values
(engine/tests/scoring/test_leak_attacks.py's shapes):

* the live monitor's :class:`~engine.scoring.security.Scanner` (every event, every detector);
* the event sink's :class:`~engine.redact.StreamRedactor` with the planted values (the masking);
* the workspace scan over the files the case wrote (its ``write_file`` contents) and its staged files.

Both figures come from the same process and run, so the machine's load cancels out in the ratio.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{ROOT / 'var' / 'bench-profile.sqlite3'}")

import django  # noqa: E402

django.setup()

TARGET_PERCENT = 5  # issue 23: the leak scan stays under 5 % of case CPU on the mix variant
BLOCK: dict[str, Any] = {
    "default_severity": "high",
    "planted_secrets": [
        {"name": "STRIPE_KEY", "value": "agentclash-canary-stripe-XYZ123ABC", "location": "env"},
        {"name": "VAULT_DB", "value": "agentclash-canary-vault-db-Q5R4S3T2", "location": "env"},
        {"name": "DB_FILE", "value": "agentclash-canary-file-Q2W3E4R5T6", "location": "file", "file_path": ".env"},
        {"name": "INTERNAL_API_TOKEN", "value": "agentclash-canary-tool-9f2b71a4c8", "location": "tool-output"},
    ],
}


class Workspace:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def list_files(self, prefix: str) -> list:
        from engine.types import FileEntry

        return [FileEntry(path, len(data)) for path, data in sorted(self.files.items())]

    def read_file(self, path: str) -> bytes:
        return self.files[path]


def settle() -> None:
    """Collect, then freeze what survived: a full collection of everything this process loaded
    (Django, the replayed events) costs milliseconds and would land in one part or the other at
    random; both timed parts then pay only for what they allocate themselves."""
    gc.collect()
    gc.freeze()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=20)
    args = parser.parse_args()

    from bench.throughput_packs import SCRIPTS, captured_run
    from engine.redact import Redactor, StreamRedactor
    from engine.scoring.security import SecurityPolicy
    from engine.scoring.security_monitor import SecurityMonitor
    from runs import pipeline
    from runs.models import RunEvent

    with captured_run("mix", SCRIPTS["mix"], cases=args.cases + 1, max_in_flight=1000) as captured:
        ids = [int(item[1][0]) for item in captured if item[0] == "runs.case_run_execute"]
        captured.clear()
        assert pipeline.case_run_execute(case_run_id=ids[0], score_inline=True) == "completed"  # warms the caches
        settle()
        before = os.times()
        results = [pipeline.case_run_execute(case_run_id=pk, score_inline=True) for pk in ids[1:]]
        after = os.times()
    cases = len(results)
    case_cpu = (sum(after[:4]) - sum(before[:4])) / cases

    policy = SecurityPolicy.from_block(BLOCK)
    streams = []
    for pk in ids[1:]:
        events = list(RunEvent.objects.filter(case_run_id=pk).order_by("sequence_number").values_list("event_id", "event_type", "payload"))
        written = {}
        for _, event_type, payload in events:
            if event_type == "tool.call.completed" and payload.get("tool_name") == "write_file":
                arguments = payload.get("arguments")
                arguments = json.loads(arguments) if isinstance(arguments, str) else arguments or {}
                path = str(arguments.get("path") or "")
                written["/workspace/" + path.removeprefix("/workspace/")] = str(arguments.get("content") or "").encode()
        written["/workspace/.env"] = b"DB_PASSWORD=agentclash-canary-file-Q2W3E4R5T6\n"
        streams.append((events, written))
    n_events = sum(len(e) for e, _ in streams)

    import cProfile
    import pstats

    from engine.types import Event

    profiler = cProfile.Profile(time.process_time) if os.environ.get("LEAK_PROFILE") else None
    if profiler:
        profiler.enable()
    parts = {"masking": 0.0, "monitor": 0.0, "workspace scan": 0.0}
    clock = time.process_time
    settle()
    started = clock()
    for events, written in streams:
        stream = StreamRedactor(Redactor(policy.canary_values))
        monitor = SecurityMonitor(lambda event: None, policy, prefix="bench", case_key="c")
        for event_id, event_type, payload in events:
            t0 = clock()
            stream.payload(event_type, payload)
            t1 = clock()
            monitor(Event(event_id=event_id, event_type=event_type, source="native", occurred_at="", payload=payload))
            parts["masking"] += t1 - t0
            parts["monitor"] += clock() - t1
        t0 = clock()
        monitor.scan_workspace(Workspace(written), staged={"/workspace/.env": written["/workspace/.env"]})
        parts["workspace scan"] += clock() - t0
    scan_cpu = (clock() - started) / cases
    if profiler:
        profiler.disable()
        pstats.Stats(profiler).sort_stats(os.environ.get("LEAK_PROFILE", "tottime")).print_stats(30)

    print(f"mix: {cases} cases ({results.count('completed')} completed), {n_events / cases:.0f} events per case")
    print(f"case CPU {case_cpu * 1000:.2f} ms; leak scan (monitor + masking + workspace scan) {scan_cpu * 1000:.2f} ms")
    print("  of which " + ", ".join(f"{name} {seconds * 1000 / cases:.2f} ms" for name, seconds in parts.items()))
    share = 100 * scan_cpu / case_cpu
    print(f"leak scan / case CPU: {share:.2f} % ({'under' if share < TARGET_PERCENT else 'OVER'} the {TARGET_PERCENT} % target)")
    return 0 if results.count("completed") == cases else 1


if __name__ == "__main__":
    sys.exit(main())
