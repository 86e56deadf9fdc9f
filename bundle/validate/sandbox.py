"""``version.sandbox`` (spec §2.4, §3.7).

Env-var values are a run-time rule in the reference (§7 item 1): publish accepts ``${…}`` in them
and every run of the pack then fails when it builds its sandbox. We refuse them at publish, with
the run's own wording (docs/pack-format-differences.md).
"""

from __future__ import annotations

import re
from typing import Any

from bundle.validate.common import ENV_KEY_RE, Report, is_cidr

APT_PACKAGE_RE = re.compile(r"[a-z0-9][a-z0-9.+\-]+\Z")


def validate_sandbox(bundle: dict[str, Any], report: Report) -> None:
    sandbox = (bundle.get("version") or {}).get("sandbox")
    if sandbox is None:
        return
    for i, cidr in enumerate(sandbox.get("network_allowlist") or ()):
        if not is_cidr(_without_port(cidr)):
            report.add(f"version.sandbox.network_allowlist[{i}]", "must be a valid CIDR (e.g. 10.0.0.0/8)")
    # Sorted: the reference iterates a Go map (nondeterministic order).
    env_vars = sandbox.get("env_vars") or {}
    for key in sorted(env_vars):
        if not ENV_KEY_RE.match(key):
            report.add(f"version.sandbox.env_vars[{key}]", "key must match [A-Za-z_][A-Za-z0-9_]*")
        problem = env_value_problem(env_vars[key])
        if problem:
            report.add(f"version.sandbox.env_vars[{key}]", problem)
    for i, package in enumerate(sandbox.get("additional_packages") or ()):
        if not APT_PACKAGE_RE.match(package):
            report.add(f"version.sandbox.additional_packages[{i}]", "must be a valid apt package name")


def env_value_problem(value: Any) -> str | None:
    """Why runs refuse this env-var value (engine/sandbox/base.py ``_env_vars``), or None: any
    ``${`` at all, wherever it sits in the value, closed or not."""
    text = "" if value is None else str(value)
    start = text.find("${")
    if start == -1:
        return None
    if "${secrets." in text.replace(" ", ""):
        return "cannot carry secrets — use http_request headers instead (sandbox env_vars are literal strings)"
    end = text.find("}", start)
    shown = text[start : end + 1] if end != -1 and end - start < 60 else text[start : start + 40]
    return f'must be a literal string (sandbox env_vars must be literal strings): "{shown}" is never expanded, and runs refuse it'


def _without_port(entry: str) -> str:
    """Our extension (docs/engine-safety.md, Network): ``CIDR:port`` or ``[IPv6 CIDR]:port``
    limits the entry to one port. Returns the CIDR part, or "" when the port is malformed."""
    if entry.startswith("["):
        inner, sep, rest = entry[1:].partition("]")
        if not sep or (rest and not _is_port(rest[1:] if rest.startswith(":") else "")):
            return ""
        return inner
    if entry.count(":") == 1:
        cidr, _, port = entry.partition(":")
        return cidr if _is_port(port) else ""
    return entry


def _is_port(text: str) -> bool:
    return text.isdigit() and 0 < int(text) < 65536
