"""What every command prints: ``--format text`` (for people) or ``--format json`` (for programs).

In JSON every command prints one JSON document on stdout (``packs validate``: one per file per
line, as ``validate_pack --json``), and an error is ``{"error": {"message", "exit_code"}}`` on
stdout as well as its line on stderr, so ``jq`` always has something to read.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

FORMATS = ("text", "json")


def write_json(value: Any, out: TextIO | None = None, *, indent: int | None = 2) -> None:
    out = out or sys.stdout
    out.write(json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=False, default=str) + "\n")
    out.flush()


def error_document(message: str, exit_code: int) -> dict[str, Any]:
    return {"error": {"message": message, "exit_code": exit_code}}


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Sequence[int] = ()) -> str:
    """A plain-text table: columns padded to their widest cell, ``right`` the right-aligned ones."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)]

    def line(cells: Sequence[str]) -> str:
        padded = [str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=False))]
        return "  ".join(padded).rstrip()

    return "\n".join([line(headers), *(line(row) for row in rows)]) + "\n"


def score(value: Any, digits: int = 3) -> str:
    """A score for people: ``0.667``, or ``—`` when there is none."""
    return f"{value:.{digits}f}" if isinstance(value, int | float) and not isinstance(value, bool) else "—"
