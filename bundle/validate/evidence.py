"""Evidence references (spec §4.3) shared by validators and judges."""

from __future__ import annotations

_EXACT = frozenset(
    {
        "final_output",
        "run.final_output",
        "challenge_input",
        "case.payload",
        "transcript.full",
        "transcript.from_mismatch",
        "turn.expectations",
    }
)
_PATH_PREFIXES = ("case.payload.", "case.inputs.", "case.expectations.", "artifact.")


def is_evidence_reference(value: str) -> bool:
    value = value.strip()
    if value in _EXACT:
        return True
    if value.startswith("literal:"):
        return True
    if value.startswith("file:"):
        return bool(value[len("file:") :].strip())
    if value.startswith("transcript.last_n:"):
        count = value[len("transcript.last_n:") :].strip()
        return count.isdigit() and int(count) > 0
    for prefix in _PATH_PREFIXES:
        if value.startswith(prefix):
            path = value[len(prefix) :]
            return bool(path) and all(segment.strip() for segment in path.split("."))
    return False


_PACK_DATA_EXACT = frozenset({"challenge_input", "case.payload"})
_PACK_DATA_PREFIXES = ("case.", "artifact.", "literal:")


def is_pack_data(value: str) -> bool:
    """A reference to what the pack itself provides (never to anything the agent did)."""
    value = value.strip()
    return value in _PACK_DATA_EXACT or value.startswith(_PACK_DATA_PREFIXES)
