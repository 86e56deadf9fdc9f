"""``agentclash secret list | set KEY | delete KEY``: the workspace's secrets (docs/secrets.md).

Values are write-only: ``list`` shows keys, allowed hosts and who changed them when, never a
value (the API has none to give). ``set`` reads the value from standard input when it is not a
terminal (one trailing line break dropped, so ``echo "$TOKEN" | agentclash secret set KEY`` stores
the token), else from a hidden prompt; never from the command line, where it would stay in the
shell history and the process list. Setting and deleting need the admin role.
"""

from __future__ import annotations

import getpass
import re
import sys
from collections.abc import Callable
from typing import Any, TextIO
from urllib.parse import quote

from agentclash_cli.client import ApiError, Client, CliError
from agentclash_cli.output import table, write_json

KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")  # the server's rule (docs/secrets.md)
MAX_VALUE_BYTES = 64 * 1024
ON_ARGV = (
    "secret set never takes the value on the command line (it would stay in the shell history and the process list): "
    "pipe it on standard input or type it at the prompt"
)


def check_key(key: str) -> str:
    if not KEY.match(key):
        raise CliError(f"KEY must be letters, digits and _, not starting with a digit, at most 128 characters (got {key!r})")
    return key


def _path(client: Client, key: str = "") -> str:
    return client.ws(f"secrets/{quote(key, safe='')}" if key else "secrets")


def _refused(exc: ApiError, what: str, workspace: str) -> CliError:
    if exc.status == 403:
        return CliError(f"{what} needs the admin role in {workspace!r} ({exc.message})")
    return exc


def read_value(key: str, *, stdin: TextIO | None = None, prompt: Callable[[str], str] | None = None) -> str:
    """The value from standard input (not a terminal) or a hidden prompt (``getpass``)."""
    stdin = stdin or sys.stdin
    if stdin.isatty():
        try:
            value = (prompt or getpass.getpass)(f"Value for {key} (hidden): ")
        except EOFError:
            value = ""
    else:
        value = stdin.read()
        value = value[:-2] if value.endswith("\r\n") else value[:-1] if value.endswith("\n") else value
    if not value:
        raise CliError(f"no value for {key}: pipe it on standard input or type it at the prompt")
    if len(value.encode("utf-8")) > MAX_VALUE_BYTES:
        raise CliError(f"the value for {key} is larger than 64 KiB")
    return value


def secret_list(client: Client, *, as_json: bool, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    rows = list(client.paginate(_path(client)))
    if as_json:
        write_json(rows, out)
        return 0
    if not rows:
        out.write(f"no secrets in {client.config.workspace!r} (add one: agentclash secret set KEY)\n")
        return 0
    out.write(
        table(
            ["key", "allowed hosts", "updated", "by"],
            [
                [r["key"], ", ".join(r.get("allowed_hosts") or []) or "—", str(r.get("updated_at") or ""), r.get("updated_by") or "—"]
                for r in rows
            ],
        )
    )
    return 0


def secret_set(client: Client, key: str, *, allowed_hosts: list[str] | None, value: str, as_json: bool, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    body: dict[str, Any] = {"value": value}
    if allowed_hosts is not None:
        body["allowed_hosts"] = allowed_hosts
    try:
        response = client.put(_path(client, check_key(key)), body)
    except ApiError as exc:
        raise _refused(exc, "secret set", client.config.workspace) from None
    secret = response.json()
    created = response.status_code == 201
    if as_json:
        write_json({**secret, "created": created}, out)
    else:
        hosts = ", ".join(secret.get("allowed_hosts") or []) or "none (no tool may send it yet)"
        out.write(f"secret {secret['key']} {'created' if created else 'updated'} (allowed hosts: {hosts})\n")
    return 0


def secret_delete(client: Client, key: str, *, as_json: bool, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        client.delete(_path(client, check_key(key)))
    except ApiError as exc:
        if exc.status == 404:
            raise CliError(f"no secret {key} in {client.config.workspace!r}") from None
        raise _refused(exc, "secret delete", client.config.workspace) from None
    if as_json:
        write_json({"key": key, "deleted": True}, out)
    else:
        out.write(f"secret {key} deleted\n")
    return 0
