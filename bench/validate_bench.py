"""Bundle validation benchmark (not a test): prints figures and ratios.

Targets: process_bundle on a ~1 MB pack (5,000 cases, 50 composed tools) within 3x a bare
``yaml.load(Loader=CSafeLoader)`` of the same text; the whole 23-pack corpus in < 1 s.

Run: .venv/bin/python bench/validate_bench.py
"""

from __future__ import annotations

import glob
import os
import sys
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bundle import process_bundle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def generate_pack(cases: int = 5000, tools: int = 50) -> str:
    lines = [
        "pack:",
        "  slug: bench-pack",
        "  name: Bench pack",
        "  family: coding",
        "version:",
        "  number: 1",
        "  execution_mode: native",
        "  tool_policy:",
        "    allowed_tool_kinds: [file, network]",
        "  evaluation_spec:",
        "    name: bench",
        "    version_number: 1",
        "    judge_mode: deterministic",
        "    validators:",
        "      - key: exact",
        "        type: exact_match",
        "        target: final_output",
        "        expected_from: case.expectations.answer",
        "    scorecard:",
        "      dimensions: [correctness]",
        "tools:",
        "  custom:",
    ]
    for t in range(tools):
        primitive = "read_file" if t % 5 == 0 else f"tool_{t - 1}"
        lines += [
            f"    - name: tool_{t}",
            f"      description: Composed tool number {t}",
            "      parameters:",
            "        type: object",
            "        properties:",
            "          path: {type: string}",
            "          limit: {type: integer, minimum: 1}",
            "        required: [path]",
            "      implementation:",
            f"        primitive: {primitive}",
            "        args:",
            '          path: "${path}"',
        ]
    lines += [
        "challenges:",
        "  - key: solve",
        "    title: Solve the case",
        "    category: bench",
        "    difficulty: easy",
        "    instructions: Answer {{question}} precisely.",
        "input_sets:",
        "  - key: main",
        "    name: Main set",
        "    cases:",
    ]
    for c in range(cases):
        lines += [
            "      - challenge_key: solve",
            f"        case_key: case-{c:05d}",
            f"        payload: {{question: What is {c} plus {c}?}}",
            "        expectations:",
            f'          - {{key: answer, kind: text, value: "{2 * c}"}}',
        ]
    return "\n".join(lines) + "\n"


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    text = generate_pack()
    print(f"generated pack: {len(text.encode()) / 1024:.0f} KiB, 5000 cases, 50 composed tools")
    result = process_bundle(text)
    assert result.valid, result.errors[:5]
    baseline = best_of(5, lambda: yaml.load(text, Loader=yaml.CSafeLoader))
    ours = best_of(5, lambda: process_bundle(text))
    print(f"yaml.load(CSafeLoader):   {baseline * 1000:8.1f} ms")
    print(f"process_bundle:           {ours * 1000:8.1f} ms")
    print(f"ratio:                    {ours / baseline:8.2f}  (target <= 3)")

    files = sorted(
        glob.glob(os.path.join(ROOT, "packs/library/*.yaml")) + glob.glob(os.path.join(ROOT, "packs/tests/data/examples/*.yaml"))
    )
    sources = [open(path, "rb").read() for path in files]
    corpus = best_of(5, lambda: [process_bundle(source) for source in sources])
    print(f"corpus ({len(files)} packs):       {corpus * 1000:8.1f} ms  (target < 1000 ms)")


if __name__ == "__main__":
    main()
