"""What the CLI tests share (constants and the result of one invocation)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO_PROMPT_PACK = REPO / "packs" / "demo" / "demo-prompt-eval.yaml"
GOOD = "Good agent (prompt eval)"
SLOPPY = "Sloppy agent (prompt eval)"


@dataclasses.dataclass
class Result:
    code: int
    out: str
    err: str
