"""``${…}`` placeholders in composed-tool args (runtime.md §2.2, pack-format §3.6)."""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
PREFIXES = ("json:", "query:", "path:")


class TemplateError(Exception):
    pass


def split_expr(expr: str) -> tuple[str, str]:
    for prefix in PREFIXES:
        if expr.startswith(prefix):
            return prefix[:-1], expr[len(prefix) :]
    return "", expr


def strings(template: Any, path: str = "") -> list[tuple[str, str]]:
    """Every string leaf with its args path."""
    out: list[tuple[str, str]] = []
    if isinstance(template, str):
        out.append((path, template))
    elif isinstance(template, dict):
        for k, v in template.items():
            out += strings(v, f"{path}.{k}")
    elif isinstance(template, list):
        for i, v in enumerate(template):
            out += strings(v, f"{path}[{i}]")
    return out


def check(template: Any, declared: set[str]) -> tuple[list[str], set[str]]:
    """Return (problems, referenced secret keys)."""
    problems: list[str] = []
    secrets: set[str] = set()
    for where, text in strings(template):
        rest = text
        while "${" in rest:
            start = rest.index("${")
            end = rest.find("}", start)
            if end < 0:
                problems.append(f"args{where}: unclosed placeholder")
                break
            expr = rest[start + 2 : end]
            rest = rest[end + 1 :]
            _, ref = split_expr(expr)
            if not ref:
                problems.append(f"args{where}: empty placeholder")
            elif ref == "parameters":
                pass
            elif ref.startswith("secrets."):
                key = ref[len("secrets.") :]
                if not key.strip():
                    problems.append(f"args{where}: unknown placeholder ${{{expr}}}")
                secrets.add(key)
            elif ref.split(".", 1)[0] not in declared:
                problems.append(f"args{where}: unknown placeholder ${{{expr}}}")
    return problems, secrets


def secret_keys(template: Any) -> set[str]:
    """The keys of every ``${secrets.KEY}`` (in any mode) in a template's strings."""
    keys: set[str] = set()
    for _, text in strings(template):
        for match in PLACEHOLDER.finditer(text):
            _, ref = split_expr(match.group(1))
            if ref.startswith("secrets."):
                keys.add(ref[len("secrets.") :])
    return keys


def _lookup(args: dict[str, Any], ref: str, declared: set[str]) -> tuple[bool, Any]:
    parts = ref.split(".")
    if parts[0] not in declared:
        return False, None
    value: Any = args
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            raise TemplateError(f'cannot resolve path "{ref}"')
        value = value[part]
    return True, value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _encode(mode: str, value: Any) -> str:
    if mode == "json":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if mode == "query":
        return urllib.parse.quote_plus(_text(value), safe="")
    if mode == "path":
        return urllib.parse.quote(_text(value), safe="")
    return _text(value)


def resolve(template: Any, args: dict[str, Any], declared: set[str], secrets: Mapping[str, str], *, strict: bool = True) -> Any:
    """Single pass: substituted values (incl. secrets) are never expanded again."""
    if isinstance(template, dict):
        return {k: resolve(v, args, declared, secrets, strict=strict) for k, v in template.items()}
    if isinstance(template, list):
        return [resolve(v, args, declared, secrets, strict=strict) for v in template]
    if not isinstance(template, str):
        return template
    whole, value = _resolve_whole(template, args, declared, strict=strict)
    if whole:
        return value
    return PLACEHOLDER.sub(lambda match: _substitute(match, args, declared, secrets, strict=strict), template)


def _resolve_whole(template: str, args: dict[str, Any], declared: set[str], *, strict: bool) -> tuple[bool, Any]:
    """A string that is exactly one placeholder of an argument keeps the JSON type (a documented
    deviation): ``(True, value)``; ``(False, None)`` when the string is substituted as text."""
    whole = PLACEHOLDER.fullmatch(template)
    if not whole:
        return False, None
    mode, ref = split_expr(whole.group(1))
    if ref == "parameters" and not mode:
        return True, args
    if mode or ref.startswith("secrets."):
        return False, None
    try:
        return _lookup(args, ref, declared)
    except TemplateError:
        if strict:
            raise
        return True, template


def _substitute(match: re.Match[str], args: dict[str, Any], declared: set[str], secrets: Mapping[str, str], *, strict: bool) -> str:
    """The text for one placeholder inside a string (unknown references stay as written)."""
    mode, ref = split_expr(match.group(1))
    if ref == "parameters":
        return _encode(mode or "json", args)
    if ref.startswith("secrets."):
        key = ref[len("secrets.") :]
        if key not in secrets:
            raise TemplateError(f'secret "{key}" is not available')
        return _encode(mode, secrets[key])
    try:
        found, value = _lookup(args, ref, declared)
    except TemplateError:
        if strict:
            raise
        return match.group(0)
    return _encode(mode, value) if found else match.group(0)
