"""Security block rules (spec §2.12, §3.10)."""

from __future__ import annotations

import posixpath
from typing import Any

from bundle.validate.common import ENV_KEY_RE, Report, blank, re2_error

SEVERITIES = ("low", "medium", "high", "critical")
LOCATIONS = ("env", "file", "infisical-mock", "tool-output")
WORKSPACE = "/workspace"
_SEVERITY_MESSAGE = "must be one of low, medium, high, critical"


def validate_security_required(bundle: dict[str, Any], report: Report) -> None:
    family = (bundle.get("pack") or {}).get("family") or ""
    if family == "security" and bundle.get("security") is None:
        report.add("security", 'is required when pack.family == "security"')


def validate_security(bundle: dict[str, Any], report: Report) -> None:
    security = bundle.get("security")
    if security is None:
        return
    default = security.get("default_severity") or ""
    if default and default not in SEVERITIES:
        report.add("security.default_severity", f'{_SEVERITY_MESSAGE} (got "{default}")')
    names: set[str] = set()
    for i, secret in enumerate(security.get("planted_secrets") or ()):
        _check_planted_secret(secret, f"security.planted_secrets[{i}]", names, report)
    for i, output in enumerate(security.get("forbidden_outputs") or ()):
        _check_forbidden_output(output, f"security.forbidden_outputs[{i}]", report)
    for i, egress in enumerate(security.get("forbidden_egress") or ()):
        _check_forbidden_egress(egress, f"security.forbidden_egress[{i}]", report)
    prompt_names: set[str] = set()
    for i, prompt in enumerate(security.get("adversarial_prompts") or ()):
        _check_adversarial_prompt(prompt, f"security.adversarial_prompts[{i}]", prompt_names, report)


def _check_planted_secret(secret: dict[str, Any], base: str, names: set[str], report: Report) -> None:
    name = secret.get("name") or ""
    location = secret.get("location") or ""
    problem = _secret_name_problem(name, location, names)
    if problem:
        report.add(f"{base}.name", problem)
    if name:
        names.add(name)
    if not secret.get("value"):
        report.add(f"{base}.value", "is required")
    if location not in LOCATIONS:
        report.add(f"{base}.location", f'must be one of env, file, infisical-mock, tool-output (got "{location}")')
    if location == "file" and not secret.get("file_path"):
        report.add(f"{base}.file_path", "is required when location == file")
    elif location == "file" and not _in_workspace(str(secret.get("file_path"))):
        report.add(f"{base}.file_path", f"must be inside {WORKSPACE} (the only writable place in this installation's sandboxes)")
    # infisical-mock is staged by the sandbox's egress proxy, which answers the mock vault's API
    # (engine/net/vault_mock.py): no background service in the sandbox.
    _check_severity(secret, base, report)


def _in_workspace(path: str) -> bool:
    path = path.strip()
    absolute = posixpath.normpath(path if path.startswith("/") else f"{WORKSPACE}/{path}")
    return absolute.startswith(WORKSPACE + "/")


def _secret_name_problem(name: str, location: str, names: set[str]) -> str | None:
    if not name:
        return "is required"
    if location == "env" and not ENV_KEY_RE.match(name):
        return "must be a valid env-var identifier for location == env"
    if name in names:
        return "duplicate planted secret name"
    return None


def _check_forbidden_output(output: dict[str, Any], base: str, report: Report) -> None:
    if blank(output.get("description")):
        report.add(f"{base}.description", "is required")
    pattern, substring = output.get("pattern") or "", output.get("substring") or ""
    if bool(pattern) == bool(substring):
        report.add(base, "exactly one of pattern or substring must be set")
    _check_regexp(pattern, f"{base}.pattern", report)
    _check_severity(output, base, report)


def _check_forbidden_egress(egress: dict[str, Any], base: str, report: Report) -> None:
    if blank(egress.get("description")):
        report.add(f"{base}.description", "is required")
    if blank(egress.get("host")):
        report.add(f"{base}.host", "is required")
    _check_severity(egress, base, report)


def _check_adversarial_prompt(prompt: dict[str, Any], base: str, names: set[str], report: Report) -> None:
    name = prompt.get("name") or ""
    if not name:
        report.add(f"{base}.name", "is required")
    elif name in names:
        report.add(f"{base}.name", "duplicate adversarial prompt name")
    names.add(name)
    if blank(prompt.get("text")):
        report.add(f"{base}.text", "is required")
    _check_regexp(prompt.get("expected_refusal_pattern") or "", f"{base}.expected_refusal_pattern", report)


def _check_severity(entry: dict[str, Any], base: str, report: Report) -> None:
    value = entry.get("severity")
    if value and value not in SEVERITIES:
        report.add(f"{base}.severity", _SEVERITY_MESSAGE)


def _check_regexp(pattern: str, field: str, report: Report) -> None:
    """An RE2 pattern (Go's dialect: no look-around, no back-references); empty means unset."""
    error = re2_error(pattern) if pattern else None
    if error:
        report.add(field, f"invalid regexp: {error}")
