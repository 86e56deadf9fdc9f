"""``agentclash apply FILE``: create or update the provider accounts, runtime profiles and
deployments a YAML file declares, so a laptop or a CI job needs no clicks (docs/ci.md, "apply").

Objects are matched by name. A missing one is created; an existing one is changed only in the
fields the file states (others stay as they are), and only when they differ, so applying the
same file again changes nothing and says ``unchanged``. Nothing is deleted or archived. The
whole file is checked before the first write: unknown fields, names, references between the
sections, and credentials, which are only ever ``workspace-secret://KEY`` references to secrets
that exist (``agentclash secret set KEY`` stores one); the file never holds a key itself.
A server refusal names the file's field (``deployments[1].model: …``).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from agentclash_cli.ci_config import read_yaml_mapping
from agentclash_cli.client import ApiError, Client, CliError
from agentclash_cli.output import table, write_json

CREDENTIAL = re.compile(r"^workspace-secret://([A-Za-z_][A-Za-z0-9_]{0,127})$")
TRIMMED = {"name", "provider_key", "credential_reference", "base_url", "model", "endpoint_url", "execution_target"}
CREDENTIAL_WORDS = {"api_key", "apikey", "key", "token", "secret", "password", "credential"}


@dataclasses.dataclass(frozen=True)
class Kind:
    section: str
    noun: str
    path: str
    fields: tuple[str, ...]
    required: tuple[str, ...]
    refs: tuple[tuple[str, str], ...] = ()  # (file field, section it names an object of)


ACCOUNT_FIELDS = (
    "name",
    "provider_key",
    "credential_reference",
    "base_url",
    "max_concurrent_calls",
    "requests_per_minute",
    "tokens_per_minute",
)
PROFILE_FIELDS = (
    "name", "execution_target", "max_iterations", "max_tool_calls", "step_timeout_seconds", "run_timeout_seconds",
    "max_in_flight_cases", "allow_shell", "allow_network", "max_workspace_bytes",
)  # fmt: skip
DEPLOYMENT_FIELDS = (
    "name", "provider_account", "runtime_profile", "model", "system_prompt", "output_schema", "deployment_config",
    "is_default_judge", "endpoint_url",
)  # fmt: skip
KINDS = (
    Kind("provider_accounts", "provider account", "provider-accounts", ACCOUNT_FIELDS, ("name", "provider_key")),
    Kind("runtime_profiles", "runtime profile", "runtime-profiles", PROFILE_FIELDS, ("name", "execution_target")),
    Kind(
        "deployments",
        "deployment",
        "deployments",
        DEPLOYMENT_FIELDS,
        ("name", "provider_account", "runtime_profile", "model"),
        refs=(("provider_account", "provider_accounts"), ("runtime_profile", "runtime_profiles")),
    ),
)


@dataclasses.dataclass
class Change:
    kind: Kind
    index: int
    name: str
    action: str  # created | updated | unchanged (with --dry-run: create | update | unchanged)
    fields: list[str]
    id: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind.noun, "name": self.name, "action": self.action, "fields": self.fields, "id": self.id}


def secret_key(reference: Any) -> str | None:
    """KEY of ``workspace-secret://KEY`` (None for anything else)."""
    found = CREDENTIAL.match(reference.strip()) if isinstance(reference, str) else None
    return found.group(1) if found else None


def _where(kind: Kind, index: int, field: str = "") -> str:
    return f"{kind.section}[{index}]" + (f".{field}" if field else "")


def _check_entry(kind: Kind, index: int, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise CliError(f"{_where(kind, index)} must be a mapping of fields")
    for field in entry:
        if str(field).lower() in CREDENTIAL_WORDS or str(field).lower().endswith(("api_key", "_token", "_secret", "password")):
            raise CliError(
                f"{_where(kind, index, str(field))}: apply never sends a credential; store it with `agentclash secret set KEY` "
                "and write credential_reference: workspace-secret://KEY"
            )
        if field not in kind.fields:
            raise CliError(f"{_where(kind, index, str(field))} is not a known field (known: {', '.join(kind.fields)})")
    for field in kind.required:
        if entry.get(field) in (None, ""):
            raise CliError(f"{_where(kind, index, field)} is required")
    if not isinstance(entry["name"], str) or not entry["name"].strip():
        raise CliError(f"{_where(kind, index, 'name')} must be a non-empty string")
    reference = entry.get("credential_reference")
    if reference not in (None, "") and secret_key(reference) is None:
        raise CliError(f"{_where(kind, index, 'credential_reference')} must be workspace-secret://KEY, a reference to a workspace secret")
    return entry


def load(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """The file's sections, checked on their own (names unique, fields known, credentials as references)."""
    doc = read_yaml_mapping(path, "a mapping with provider_accounts, runtime_profiles and/or deployments")
    known = {"version", *(k.section for k in KINDS)}
    if unknown := sorted(set(doc) - known):
        raise CliError(f"{unknown[0]} is not a known field (known: {', '.join(sorted(known))})")
    if doc.get("version", 1) != 1:
        raise CliError("version must be 1")
    sections: dict[str, list[dict[str, Any]]] = {}
    for kind in KINDS:
        entries = doc.get(kind.section) or []
        if not isinstance(entries, list):
            raise CliError(f"{kind.section} must be a list")
        sections[kind.section] = [_check_entry(kind, i, e) for i, e in enumerate(entries)]
        names = [e["name"].strip() for e in sections[kind.section]]
        if dupes := sorted({n for n in names if names.count(n) > 1}):
            raise CliError(f"{kind.section}: {dupes[0]!r} is declared twice")
    judges = [e["name"] for e in sections["deployments"] if e.get("is_default_judge") is True]
    if len(judges) > 1:
        raise CliError(f"deployments: only one deployment can be is_default_judge: true (got {', '.join(judges)})")
    return sections


def _norm(field: str, value: Any) -> Any:
    if isinstance(value, str) and field in TRIMMED:
        value = value.strip()
    if field == "base_url" and isinstance(value, str):
        value = value.rstrip("/")
    if field == "deployment_config" and value is None:
        value = {}
    return value


class Applier:
    def __init__(self, client: Client, sections: dict[str, list[dict[str, Any]]], *, dry_run: bool) -> None:
        self.client, self.sections, self.dry_run = client, sections, dry_run
        self.existing: dict[str, dict[str, dict[str, Any]]] = {}

    def read(self) -> None:
        """Every existing object by name (archived ones too: names stay taken), and the secrets referenced."""
        for kind in KINDS:
            rows = self.client.paginate(self.client.ws(kind.path), include_archived="true")
            self.existing[kind.section] = {row["name"]: row for row in rows}
        wanted = {(i, key) for i, e in enumerate(self.sections["provider_accounts"]) if (key := secret_key(e.get("credential_reference")))}
        if wanted:
            secrets = {row["key"] for row in self.client.paginate(self.client.ws("secrets"))}
            for index, key in sorted(wanted):
                if key not in secrets:
                    raise CliError(
                        f"{_where(KINDS[0], index, 'credential_reference')}: workspace secret {key} does not exist in "
                        f"{self.client.config.workspace!r}; set it first: agentclash secret set {key}"
                    )
        for kind in KINDS:
            for index, entry in enumerate(self.sections[kind.section]):
                row = self.existing[kind.section].get(entry["name"].strip())
                if row is not None and row.get("status") == "archived":
                    raise CliError(
                        f"{_where(kind, index, 'name')}: the {kind.noun} {entry['name']!r} exists but is archived; rename it in the file"
                    )
                for field, section in kind.refs:
                    name = str(entry[field]).strip()
                    declared = any(e["name"].strip() == name for e in self.sections[section])
                    found = self.existing[section].get(name)
                    if not declared and (found is None or found.get("status") == "archived"):
                        raise CliError(
                            f"{_where(kind, index, field)}: no {field.replace('_', ' ')} named {name!r} in the file or the workspace"
                        )

    def _desired(self, kind: Kind, entry: dict[str, Any]) -> dict[str, Any]:
        """The API's input: references by name become ``…_id``; None where the object is yet to be created (dry run)."""
        body = {field: _norm(field, value) for field, value in entry.items()}
        for field, section in kind.refs:
            row = self.existing[section].get(str(body.pop(field)).strip())
            body[f"{field}_id"] = row["id"] if row else None
        return body

    def _api_fields(self, kind: Kind, index: int, exc: ApiError) -> CliError:
        body = exc.body if isinstance(exc.body, dict) else {}
        fields = (body.get("error") or {}).get("fields") if isinstance(body.get("error"), dict) else None
        if isinstance(fields, dict) and fields:
            field, messages = next(iter(fields.items()))
            name = str(field).removesuffix("_id") if str(field).removesuffix("_id") in kind.fields else str(field)
            text = " ".join(map(str, messages)) if isinstance(messages, list) else str(messages)
            return CliError(f"{_where(kind, index, name if name in kind.fields else '')}: {text}")
        return CliError(f"{_where(kind, index)}: {exc.message}")

    def one(self, kind: Kind, index: int, entry: dict[str, Any]) -> Change:
        name = entry["name"].strip()
        desired = self._desired(kind, entry)
        current = self.existing[kind.section].get(name)
        if current is None:
            changed = sorted(desired)
            action = "create" if self.dry_run else "created"
        else:
            changed = sorted(f for f, v in desired.items() if _norm(f, current.get(f)) != v)
            action = ("update" if self.dry_run else "updated") if changed else "unchanged"
        change = Change(kind, index, name, action, [f.removesuffix("_id") for f in changed], current["id"] if current else None)
        if self.dry_run or action == "unchanged":
            return change
        try:
            if current is None:
                row = self.client.post(self.client.ws(kind.path), desired)
            else:
                row = self.client.patch(self.client.ws(f"{kind.path}/{current['id']}"), {f: desired[f] for f in changed})
        except ApiError as exc:
            raise self._api_fields(kind, index, exc) from None
        self.existing[kind.section][name] = row
        change.id = row["id"]
        return change

    def apply(self) -> list[Change]:
        self.read()
        return [self.one(kind, i, entry) for kind in KINDS for i, entry in enumerate(self.sections[kind.section])]


def report(changes: list[Change], *, file: str, dry_run: bool, as_json: bool, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if as_json:
        write_json({"file": file, "dry_run": dry_run, "changes": [c.as_json() for c in changes]}, out)
        return 0
    if not changes:
        out.write(f"{file}: nothing declared\n")
        return 0
    rows = [[c.kind.noun, c.name, c.action, ", ".join(c.fields) if c.action != "unchanged" else "", str(c.id or "—")] for c in changes]
    out.write(table(["kind", "name", "action", "fields", "id"], rows))
    return 0
