"""Evidence references (runtime.md §5.3): turn ``final_output``, ``file:k``, ``case.*``… into values.

``resolve`` never raises: it returns a ``Resolved`` whose state is ``ok``, ``unavailable``
(the data is missing for this run), ``not_delivered`` (output the agent had to produce — its
final answer, a file it had to write — is missing and the run ended by the agent's
doing: see ``CaseEvidence.agent_accountable``; validators fail on it, judges give it the bottom of
their scale), ``not_applicable`` (the data cannot exist for this run,
e.g. ``transcript.from_mismatch`` of a conversation without a mismatch) or ``error`` (the
reference itself is not understood). Readers that do not know ``not_applicable`` treat it as
unavailable; judges skip (runtime.md §5.8 deviation, docs/scoring.md).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from typing import TypeGuard

from engine.scoring.evidence import CaseEvidence, Extracted, Turn, canonical_json, loose_string
from engine.types import JSON

MAX_INDIRECTION_HOPS = 8


@dataclasses.dataclass
class Resolved:
    state: str  # ok | unavailable | not_delivered | not_applicable | error
    value: str | None = None  # stringified value
    raw: JSON = None  # the value before stringification
    reason: str = ""
    event_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.state == "ok"


def ok(raw: JSON, event_id: str | None = None) -> Resolved:
    return Resolved("ok", stringify(raw), raw, "", event_id)


def unavailable(reason: str) -> Resolved:
    return Resolved("unavailable", reason=reason)


def not_applicable(reason: str) -> Resolved:
    return Resolved("not_applicable", reason=reason)


def error(reason: str) -> Resolved:
    return Resolved("error", reason=reason)


def stringify(value: JSON) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    return canonical_json(value)


def walk(value: JSON, path: list[str]) -> tuple[bool, JSON]:
    """Walk object keys and numeric array indices; JSON text is parsed on the way."""
    current = value
    for segment in path:
        if isinstance(current, str):
            try:
                current = json.loads(current)
            except ValueError:
                return False, None
        if isinstance(current, dict) and segment in current:
            current = current[segment]
        elif isinstance(current, list) and segment.isdigit() and int(segment) < len(current):
            current = current[int(segment)]
        else:
            return False, None
    return True, current


def _entries(container: JSON) -> dict[str, JSON]:
    """Case inputs/expectations arrive as a list of ``{key, …}`` items or as a plain map."""
    if isinstance(container, dict):
        return {str(k): v for k, v in container.items()}
    if isinstance(container, list):
        return {str(item["key"]): item for item in container if isinstance(item, dict) and "key" in item}
    return {}


def _is_item(value: JSON) -> TypeGuard[dict[str, JSON]]:
    return isinstance(value, dict) and "key" in value and bool({"value", "source", "artifact_key", "path", "kind"} & value.keys())


class _Resolver:
    def __init__(self, evidence: CaseEvidence, extracted: Extracted):
        self.evidence = evidence
        self.extracted = extracted

    # -- case items -----------------------------------------------------------------
    def missing_output(self, reason: str) -> Resolved:
        """Output the agent should have produced is missing: its failure when the run ended by its
        own doing, missing evidence when the harness stopped it (docs/scoring.md)."""
        if self.evidence.agent_accountable:
            return Resolved("not_delivered", reason=f"the agent did not deliver: {reason}")
        return unavailable(reason)

    def case(self) -> dict[str, JSON] | None:
        case = self.evidence.case
        return case if isinstance(case, dict) else None

    def item_value(self, item: JSON, hops: int = 0) -> Resolved:
        if not _is_item(item):
            return ok(item)
        if hops > MAX_INDIRECTION_HOPS:
            return error("expectation indirection exceeds 8 hops")
        if "value" in item:
            return ok(item["value"])
        source = str(item.get("source") or "").strip()
        if source.startswith("input:"):
            inputs = _entries((self.case() or {}).get("inputs"))
            key = source[len("input:") :].strip()
            if key not in inputs:
                return unavailable(f"case input {key!r} is missing")
            return self.item_value(inputs[key], hops + 1)
        if source.startswith("artifact:"):
            return self.artifact(source[len("artifact:") :].strip(), [])
        if item.get("artifact_key"):
            return self.artifact(str(item["artifact_key"]), [])
        if item.get("path"):
            return ok(item["path"])
        return unavailable(f"case item {item.get('key')!r} has no value")

    def case_section(self, section: str, path: list[str]) -> Resolved:
        case = self.case()
        if case is None:
            return unavailable("case evidence is unavailable")
        if section == "payload":
            found, value = walk(case.get("payload") or {}, path)
            return ok(value) if found else unavailable(f"case.payload.{'.'.join(path)} is missing")
        entries = _entries(case.get(section))
        if not path or path[0] not in entries:
            return unavailable(f"case.{section}.{'.'.join(path)} is missing")
        base = self.item_value(entries[path[0]])
        if not base.ok or len(path) == 1:
            return base
        found, value = walk(base.raw, path[1:])
        return ok(value) if found else unavailable(f"case.{section}.{'.'.join(path)} is missing")

    def artifact(self, key: str, fields: list[str]) -> Resolved:
        artifact = self.evidence.artifacts.get(key)
        if not isinstance(artifact, dict):
            return unavailable(f"artifact {key!r} is missing")
        if not fields:
            if artifact.get("content") is not None:
                return ok(artifact["content"])
            return ok(artifact.get("path")) if artifact.get("path") else unavailable(f"artifact {key!r} has no path")
        if fields[0] in ("key", "kind", "path", "media_type") and len(fields) == 1:
            value = artifact.get(fields[0], key if fields[0] == "key" else None)
            return ok(value) if value is not None else unavailable(f"artifact.{key}.{fields[0]} is missing")
        return error(f"artifact field {'.'.join(fields)!r} is not supported")

    # -- the rest -------------------------------------------------------------------
    def file(self, key: str) -> Resolved:
        ex = self.extracted
        event_id = ex.verification_event_ids.get("file:" + key)
        if key in ex.captured_files:
            captured = ex.captured_files[key]
            if not captured.get("exists", True):
                return self.missing_output(f"captured file {key!r} ({captured.get('path')}) does not exist")
            return Resolved("ok", str(captured.get("content") or ""), captured.get("content") or "", "", event_id)
        if key in ex.directory_listings:
            entries = ex.directory_listings[key].get("entries", [])
            return Resolved("ok", canonical_json(entries), entries, "", event_id)
        if self.evidence.agent_stopped:  # verification does not run after the agent failed the run
            return self.missing_output(f"no captured evidence for file:{key}")
        return unavailable(f"no captured evidence for file:{key}")

    def challenge_input(self) -> Resolved:
        if self.evidence.challenge_input is not None:
            return ok(self.evidence.challenge_input)
        case = self.case()
        if case is None:
            return unavailable("case evidence is unavailable")
        payload = case.get("payload")
        if payload in (None, {}, []):
            return unavailable("case payload is empty")
        text = loose_string(payload)
        return ok(text if text is not None else canonical_json(payload))

    def transcript(self, turns: list[Turn]) -> str:
        return "\n".join(f"{t.role}: {t.content}" for t in turns)

    # -- one rule per reference family ---------------------------------------------
    def final_output(self, ref: str) -> Resolved:
        ex = self.extracted
        if ex.final_output is None:
            return self.missing_output("final output is missing")
        if not ex.final_output.strip():
            return self.missing_output("final output is empty")
        return Resolved("ok", ex.final_output, ex.final_output, "", ex.final_output_event_id)

    def literal(self, ref: str) -> Resolved:
        return ok(ref[len("literal:") :])

    def file_ref(self, ref: str) -> Resolved:
        key = ref[len("file:") :].strip()
        return self.file(key) if key else error("file: reference needs a check key")

    def case_ref(self, ref: str) -> Resolved:
        if ref == "case.payload" or ref.startswith("case.payload."):
            section, path = "payload", ref.split(".")[2:]
        else:
            section, _, rest = ref[len("case.") :].partition(".")
            path = rest.split(".")
        if any(not p for p in path):
            return error(f"unknown evidence reference {ref!r}")
        return self.case_section(section, path)

    def artifact_ref(self, ref: str) -> Resolved:
        path = ref[len("artifact.") :].split(".")
        if any(not p for p in path):
            return error(f"unknown evidence reference {ref!r}")
        return self.artifact(path[0], path[1:])

    def silent(self) -> Resolved | None:
        """A conversation in which the agent never answered: its failure to deliver when the run
        ended by its doing (a judge of the user's lines alone would grade nothing the agent did)."""
        turns = self.extracted.turns
        if turns and not any(t.role == "assistant" and t.content.strip() for t in turns):
            return self.missing_output("the agent never answered in the conversation")
        return None

    def transcript_full(self, ref: str) -> Resolved:
        turns = self.extracted.turns
        if (silent := self.silent()) is not None:
            return silent
        return ok(self.transcript(turns)) if turns else unavailable("no transcript turns")

    def transcript_from_mismatch(self, ref: str) -> Resolved:
        turns = self.extracted.turns
        if (silent := self.silent()) is not None:
            return silent
        start = next((i for i, t in enumerate(turns) if t.mismatch), None)
        if start is None:
            # A conversation without a mismatch has nothing to recover from: not missing data.
            return not_applicable("no mismatch in the conversation") if turns else unavailable("no transcript turns")
        return ok(self.transcript(turns[start:]))

    def transcript_last_n(self, ref: str) -> Resolved:
        raw = ref[len("transcript.last_n:") :].strip()
        if not raw.isdigit() or int(raw) <= 0:
            return error(f"unknown evidence reference {ref!r}")
        turns = self.extracted.turns
        if (silent := self.silent()) is not None:
            return silent
        return ok(self.transcript(turns[-int(raw) :])) if turns else unavailable("no transcript turns")

    def turn_expectations(self, ref: str) -> Resolved:
        if not self.extracted.turn_expectations:
            return unavailable("no turn expectations recorded")
        return ok(self.extracted.turn_expectations)

    def resolve(self, ref: str) -> Resolved:
        ref = (ref or "").strip()
        exact = _EXACT.get(ref)
        if exact is not None:
            return exact(self, ref)
        for prefix, rule in _PREFIXED:
            if ref.startswith(prefix):
                return rule(self, ref)
        return error(f"unknown evidence reference {ref!r}")


_Rule = Callable[[_Resolver, str], Resolved]

# Exact references first, then prefixed families; no exact name starts with a listed prefix.
_EXACT: dict[str, _Rule] = {
    "final_output": _Resolver.final_output,
    "run.final_output": _Resolver.final_output,
    "challenge_input": lambda resolver, ref: resolver.challenge_input(),
    "case.payload": _Resolver.case_ref,
    "transcript.full": _Resolver.transcript_full,
    "transcript.from_mismatch": _Resolver.transcript_from_mismatch,
    "turn.expectations": _Resolver.turn_expectations,
}
_PREFIXED: tuple[tuple[str, _Rule], ...] = (
    ("literal:", _Resolver.literal),
    ("file:", _Resolver.file_ref),
    ("case.payload.", _Resolver.case_ref),
    ("case.inputs.", _Resolver.case_ref),
    ("case.expectations.", _Resolver.case_ref),
    ("artifact.", _Resolver.artifact_ref),
    ("transcript.last_n:", _Resolver.transcript_last_n),
)


def resolve(ref: str, evidence: CaseEvidence, extracted: Extracted) -> Resolved:
    try:
        return _Resolver(evidence, extracted).resolve(ref)
    except Exception as exc:  # noqa: BLE001 — scoring never raises
        return error(f"could not resolve {ref!r}: {exc}")
