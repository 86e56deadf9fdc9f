"""The throughput bench's eval run by Inspect AI, for comparison (optional: Inspect AI is not a dependency).

    .venv/bin/python bench/peers/inspect_peer.py --samples 200 [--variant read|exec]
        [--inspect-python /path/to/venv-with-inspect/bin/python] [--agentclash-rate 105.3]

The same eval as ``bench/run_throughput.py``'s variant: one sample per note, a scripted model
(Inspect's ``mockllm`` with a function answering from the conversation, like AgentClash's
``scripted`` provider) that calls ``read_file`` five times (``read``) or ``bash`` with ``cat``
five times (``exec``), then submits the note; scored by exact match, every sample must score
correct. Inspect runs it in one process (asyncio, ``local`` sandbox: no isolation, unlike
AgentClash's bubblewrap) and writes its eval log; there is no database and no queue.

Printed: Inspect's samples/s and CPU per sample, AgentClash's engine alone on the same cases
(this process, no Celery, no DB: the baseline) and their ratio; with ``--agentclash-rate`` (the
``case executions/s`` that ``bench/run_throughput.py`` printed) also the full pipeline's ratio.

Inspect AI is installed separately (``pip install inspect-ai``, e.g. into a throwaway venv
given with ``--inspect-python``); without it this prints how to get it and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INSTALL_NOTE = (
    "Inspect AI is not installed, so there is nothing to compare against (it is optional, not a project dependency).\n"
    "To run the comparison:  python -m venv /tmp/inspect-venv && /tmp/inspect-venv/bin/pip install inspect-ai\n"
    "then:  .venv/bin/python bench/peers/inspect_peer.py --inspect-python /tmp/inspect-venv/bin/python"
)


def inspect_run(variant: str, samples: int, concurrency: int) -> dict[str, float | int | str]:
    """Run the eval with Inspect AI in this process (which must have it) and return its figures."""
    import inspect_ai  # type: ignore[import-not-found]
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample  # type: ignore[import-not-found]
    from inspect_ai.model import ModelOutput, ModelUsage, get_model  # type: ignore[import-not-found]
    from inspect_ai.scorer import exact  # type: ignore[import-not-found]
    from inspect_ai.solver import basic_agent  # type: ignore[import-not-found]
    from inspect_ai.tool import bash, tool  # type: ignore[import-not-found]
    from inspect_ai.util import sandbox  # type: ignore[import-not-found]

    @tool
    def read_file():
        async def execute(path: str) -> str:
            """Read a file of the sample's workspace.

            Args:
              path: the file's path
            """
            return await sandbox().read_file(path)

        return execute

    call_tool = "read_file" if variant == "read" else "bash"
    call_args = {"path": "notes.txt"} if variant == "read" else {"cmd": "cat notes.txt"}

    def scripted(messages, tools, tool_choice, config):
        step = sum(1 for m in messages if m.role == "assistant")
        if step < 5:
            output = ModelOutput.for_tool_call(model="scripted", tool_name=call_tool, tool_arguments=call_args)
        else:
            note = next(m.text for m in messages if m.role == "user").split("#")[-1].strip()
            output = ModelOutput.for_tool_call(model="scripted", tool_name="submit", tool_arguments={"answer": f"note number {note}"})
        # Word counts like AgentClash's scripted provider (and mockllm then does not fetch a tokenizer).
        words = sum(len(m.text.split()) for m in messages)
        output.usage = ModelUsage(input_tokens=words, output_tokens=4, total_tokens=words + 4)
        return output

    dataset = [
        Sample(input=f"Read notes.txt and submit its content. #{i}", target=f"note number {i}", files={"notes.txt": f"note number {i}"})
        for i in range(samples)
    ]
    tools = [read_file()] if variant == "read" else [bash()]
    task = Task(dataset=dataset, solver=basic_agent(tools=tools, max_attempts=1), scorer=exact(), sandbox="local")
    with tempfile.TemporaryDirectory(prefix="inspect-peer-") as log_dir:
        cpu_before, started = os.times(), time.perf_counter()
        logs = eval(
            task,
            model=get_model("mockllm/model", custom_outputs=scripted),
            log_dir=log_dir,
            max_samples=concurrency,
            display="none",
        )
        wall = time.perf_counter() - started
        cpu = sum(os.times()[:4]) - sum(cpu_before[:4])
    log = logs[0]
    accuracy = next(iter(log.results.scores[0].metrics.values())).value if log.results and log.results.scores else 0.0
    error = str(log.error.message)[:300] if log.error else ""
    return {
        "version": inspect_ai.__version__,
        "samples": samples,
        "wall": wall,
        "cpu": cpu,
        "accuracy": accuracy,
        "status": log.status,
        "error": error,
    }


def agentclash_engine_alone(variant: str, samples: int) -> dict[str, float]:
    """The same cases through AgentClash's engine alone (no Celery, no DB), on a scratch SQLite."""
    scratch = tempfile.mkdtemp(prefix="agentclash-peer-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.local")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch}/peer.sqlite3")
    os.environ.setdefault("MEDIA_ROOT", f"{scratch}/media")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path[:0] = [str(ROOT)]
    from django.core.management import call_command

    from bench.run_throughput import engine_only  # sets Django up
    from bench.throughput_packs import SCRIPTS, pack_yaml
    from runs.tests.factories import publish
    from workspaces.models import Workspace

    call_command("migrate", verbosity=0)
    tag = f"peer-{uuid.uuid4().hex[:8]}"  # a fresh workspace each time: the database may hold earlier runs' ones
    workspace = Workspace.objects.create(slug=tag, name=tag)
    version = publish(workspace, None, pack_yaml(variant, cases=samples, slug=tag))
    return engine_only(version, SCRIPTS[variant], samples)


def _inspect_figures(args: argparse.Namespace) -> dict | None:
    python = args.inspect_python or sys.executable
    probe = subprocess.run([python, "-c", "import inspect_ai"], capture_output=True)
    if probe.returncode != 0:
        return None
    command = [python, __file__, "--inspect-only", "--variant", args.variant, "--samples", str(args.samples)]
    out = subprocess.run([*command, "--concurrency", str(args.concurrency)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", choices=["read", "exec"], default="read")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4, help="Inspect's max_samples")
    parser.add_argument("--inspect-python", help="a Python that has inspect-ai (default: this one)")
    parser.add_argument("--agentclash-rate", type=float, help="case executions/s from bench/run_throughput.py, same variant")
    parser.add_argument("--inspect-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inspect_only:
        print(json.dumps(inspect_run(args.variant, args.samples, args.concurrency)))
        return 0
    peer = _inspect_figures(args)
    if peer is None:
        print(INSTALL_NOTE)
        return 0
    engine = agentclash_engine_alone(args.variant, args.samples)
    rate = peer["samples"] / peer["wall"]
    cpu = peer["cpu"] * 1000 / peer["samples"]
    print(f"{args.variant} variant, {args.samples} samples; baseline: AgentClash's engine alone on the same cases (this process)")
    print(f"{'':40} {'measured':>9} {'baseline':>9} {'ratio':>7}")
    print(
        f"{'Inspect AI ' + str(peer['version']) + ' samples/s (wall)':40} {rate:9.1f} {1 / engine['wall']:9.1f} {rate * engine['wall']:7.2f}"
    )
    print(f"{'Inspect AI CPU per sample (ms)':40} {cpu:9.1f} {engine['cpu'] * 1000:9.1f} {cpu / (engine['cpu'] * 1000):7.2f}")
    print(f"Inspect AI: {peer['status']}, accuracy {peer['accuracy']:.2f} (must be 1.00), max_samples={args.concurrency}, local sandbox")
    if peer.get("error"):
        print(f"Inspect AI error: {peer['error']}")
    if args.agentclash_rate:
        print(
            f"AgentClash full pipeline (Celery + DB, every event kept): {args.agentclash_rate:.1f} cases/s = {args.agentclash_rate / rate:.2f}x Inspect AI"
        )
    return 0 if peer["accuracy"] == 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
