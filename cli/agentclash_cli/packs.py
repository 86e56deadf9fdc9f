"""``agentclash packs validate|publish``: the server validates, the output matches ``validate_pack``.

Exit codes: 0 valid (published), 1 invalid (or a conflicting publish), 4 usage error (unreadable
file, no access, server unreachable) — 4 like every other command's usage error (``manage.py
validate_pack`` says 2, which the gate commands use for ``warn``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from agentclash_cli.client import USAGE, ApiError, Client, CliError

MAX_BUNDLE_BYTES = 1024 * 1024  # the server's limit (spec pack-format.md §1.1)
YAML_HEADERS = {"Content-Type": "text/yaml; charset=utf-8"}


def error_line(error: dict[str, Any]) -> str:
    """``field message (line N)``, exactly as ``validate_pack`` prints it."""
    text = f"{error['field']} {error['message']}" if error.get("field") else str(error["message"])
    return f"{text} (line {error['line']})" if error.get("line") else text


def warning_line(warning: dict[str, Any]) -> str:
    return "warning: " + error_line({"field": warning.get("path"), "message": warning["message"], "line": warning.get("line")})


def read_bundles(names: list[str]) -> list[tuple[str, bytes]]:
    sources = []
    for name in names:
        try:
            sources.append((name, Path(name).read_bytes()))
        except OSError as exc:
            raise CliError(f"{name}: cannot read file: {exc.strerror or exc}", USAGE) from None
    return sources


def bundle_body(raw: bytes) -> bytes:
    """The file as UTF-8 text (a byte-order mark dropped), like the server's own file reader."""
    return raw.decode("utf-8-sig", errors="replace").encode()


def validate_one(client: Client, raw: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(errors, warnings) from the server's validate endpoint."""
    if len(raw) > MAX_BUNDLE_BYTES:  # the same words as the server's own check
        return [{"field": "", "message": f"bundle is larger than 1 MiB ({len(raw)} bytes)", "line": None}], []
    try:
        body = client.request("POST", client.ws("packs/validate"), content=bundle_body(raw), headers=YAML_HEADERS).json()
    except ApiError as exc:
        if exc.status == 400 and isinstance(exc.body, dict) and exc.body.get("valid") is False:
            return list(exc.body.get("errors") or []), list(exc.body.get("warnings") or [])
        raise CliError(exc.message, USAGE) from None
    except CliError as exc:
        raise CliError(exc.message, USAGE) from None
    return [], list(body.get("warnings") or [])


def validate(client: Client, files: list[str], *, as_json: bool, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    sources = read_bundles(files)
    any_invalid = False
    for name, raw in sources:
        errors, warnings = validate_one(client, raw)
        any_invalid = any_invalid or bool(errors)
        if as_json:
            out.write(json.dumps({"file": name, "valid": not errors, "errors": errors, "warnings": warnings}, ensure_ascii=False) + "\n")
            continue
        counted = f" ({len(warnings)} warning{'s' if len(warnings) != 1 else ''})" if warnings else ""
        out.write(f"{name}: {'invalid' if errors else 'valid'}{counted}\n")
        for error in errors:
            out.write(f"  {error_line(error)}\n")
        for warning in warnings:
            out.write(f"  {warning_line(warning)}\n")
    out.flush()
    return 1 if any_invalid else 0


def _refusal(name: str, raw: bytes, exc: ApiError) -> dict[str, Any] | None:
    """An invalid, conflicting or too large bundle (exit 1): its stderr text and its JSON; None for anything else."""
    payload = exc.body if isinstance(exc.body, dict) else {}
    errors: list[dict[str, Any]]
    if exc.status == 400 and payload.get("valid") is False:
        errors = list(payload.get("errors") or [])
        text = f"{name}: invalid\n" + "".join(f"  {error_line(error)}\n" for error in errors)
    elif exc.status == 409:
        errors = [{"field": "", "message": exc.detail, "line": None}]
        text = f"{name}: {exc.code}: {exc.detail}\n"
    elif exc.status == 413:
        errors = [{"field": "", "message": f"bundle is larger than 1 MiB ({len(raw)} bytes)", "line": None}]
        text = f"{name}: invalid\n  bundle is larger than 1 MiB ({len(raw)} bytes)\n"
    else:
        return None
    return {"file": name, "published": False, "code": exc.code, "errors": errors, "text": text}


def publish(client: Client, file: str, *, as_json: bool, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    ((name, raw),) = read_bundles([file])
    try:
        body = client.request(
            "POST", client.ws("packs/publish"), content=bundle_body(raw), headers={**YAML_HEADERS, **client.idempotency_headers()}
        ).json()
    except ApiError as exc:
        refused = _refusal(name, raw, exc)
        if refused is None:
            raise CliError(exc.message, USAGE) from None
        err.write(refused["text"])
        if as_json:  # the same refusal for programs: {"file", "published": false, "code", "errors"}
            out.write(json.dumps({k: v for k, v in refused.items() if k != "text"}, ensure_ascii=False) + "\n")
        return 1
    except CliError as exc:
        raise CliError(exc.message, USAGE) from None
    if as_json:
        out.write(json.dumps(body, ensure_ascii=False) + "\n")
    else:
        out.write(
            f"Published {body['pack_slug']} v{body['version_number']} (pack {body['pack_id']}, version {body['pack_version_id']}, "
            f"checksum {body['manifest_checksum']})\n"
        )
        for warning in body.get("warnings") or []:
            out.write(f"  {warning_line(warning)}\n")
    return 0
