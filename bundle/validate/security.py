"""Security block rules (spec §2.12, §3.10)."""

from __future__ import annotations

from typing import Any

from bundle.validate.common import ENV_KEY_RE, Report, blank, re2_error

SEVERITIES = ("low", "medium", "high", "critical")
LOCATIONS = ("env", "file", "infisical-mock", "tool-output")
_SEVERITY_MESSAGE = "must be one of low, medium, high, critical"


def validate_security_required(bundle: dict[str, Any], report: Report) -> None:
    family = (bundle.get("pack") or {}).get("family") or ""
    if family == "security" and bundle.get("security") is None:
        report.add("security", 'is required when pack.family == "security"')


def _severity(value: str | None, field: str, report: Report) -> None:
    if value and value not in SEVERITIES:
        report.add(field, _SEVERITY_MESSAGE)


def validate_security(bundle: dict[str, Any], report: Report) -> None:
    security = bundle.get("security")
    if security is None:
        return
    default = security.get("default_severity") or ""
    if default and default not in SEVERITIES:
        report.add("security.default_severity", f'{_SEVERITY_MESSAGE} (got "{default}")')

    names: set[str] = set()
    for i, secret in enumerate(security.get("planted_secrets") or ()):
        base = f"security.planted_secrets[{i}]"
        name = secret.get("name") or ""
        location = secret.get("location") or ""
        if not name:
            report.add(f"{base}.name", "is required")
        elif location == "env" and not ENV_KEY_RE.match(name):
            report.add(f"{base}.name", "must be a valid env-var identifier for location == env")
        elif name in names:
            report.add(f"{base}.name", "duplicate planted secret name")
        if name:
            names.add(name)
        if not secret.get("value"):
            report.add(f"{base}.value", "is required")
        if location not in LOCATIONS:
            report.add(
                f"{base}.location",
                f'must be one of env, file, infisical-mock, tool-output (got "{location}")',
            )
        if location == "file" and not secret.get("file_path"):
            report.add(f"{base}.file_path", "is required when location == file")
        _severity(secret.get("severity"), f"{base}.severity", report)

    for i, output in enumerate(security.get("forbidden_outputs") or ()):
        base = f"security.forbidden_outputs[{i}]"
        if blank(output.get("description")):
            report.add(f"{base}.description", "is required")
        pattern, substring = output.get("pattern") or "", output.get("substring") or ""
        if bool(pattern) == bool(substring):
            report.add(base, "exactly one of pattern or substring must be set")
        if pattern:
            error = re2_error(pattern)
            if error:
                report.add(f"{base}.pattern", f"invalid regexp: {error}")
        _severity(output.get("severity"), f"{base}.severity", report)

    for i, egress in enumerate(security.get("forbidden_egress") or ()):
        base = f"security.forbidden_egress[{i}]"
        if blank(egress.get("description")):
            report.add(f"{base}.description", "is required")
        if blank(egress.get("host")):
            report.add(f"{base}.host", "is required")
        _severity(egress.get("severity"), f"{base}.severity", report)

    prompt_names: set[str] = set()
    for i, prompt in enumerate(security.get("adversarial_prompts") or ()):
        base = f"security.adversarial_prompts[{i}]"
        name = prompt.get("name") or ""
        if not name:
            report.add(f"{base}.name", "is required")
        elif name in prompt_names:
            report.add(f"{base}.name", "duplicate adversarial prompt name")
        prompt_names.add(name)
        if blank(prompt.get("text")):
            report.add(f"{base}.text", "is required")
        pattern = prompt.get("expected_refusal_pattern") or ""
        if pattern:
            error = re2_error(pattern)
            if error:
                report.add(f"{base}.expected_refusal_pattern", f"invalid regexp: {error}")
