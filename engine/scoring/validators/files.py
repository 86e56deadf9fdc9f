"""Validators over post-execution captures: file_exists, file_content_match, file_json_schema,
directory_structure and postcondition (runtime.md §5.4)."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable

from engine.scoring.validators.base import (
    Outcome,
    PackError,
    ValidatorCall,
    binary,
    config_bool,
    register,
    strict_keys,
)
from engine.scoring.validators.structured import deep_equal, lookup, parse_path, schema_outcome, schema_validator
from engine.scoring.validators.text import compile_regex
from engine.types import JSON

CONDITIONS = ("exists", "not_exists", "contains", "not_contains", "regex_match", "json_path_match", "equals")


def capture_state(call: ValidatorCall) -> tuple[str, bool | None]:
    """(key, exists) for a file: target; exists is None when nothing was captured at all."""
    key = call.file_key()
    ex = call.extracted
    call.event_id = ex.verification_event_ids.get("file:" + key)
    if key in ex.captured_files:
        return key, bool(ex.captured_files[key].get("exists", True))
    if key in ex.directory_listings:
        return key, True
    return key, None


@register("file_exists")
def file_exists(call: ValidatorCall) -> Outcome:
    must_exist = config_bool(call.config, "must_exist", True)
    key, exists = capture_state(call)
    if exists is None:
        raise call.no_verification(f"no verification evidence for file:{key}")
    passed = exists == must_exist
    detail = "exists" if exists else "does not exist"
    return binary(passed, f"file:{key} {detail} (must_exist={str(must_exist).lower()})", must_exist, exists)


def _squash(text: str) -> str:
    return "".join(text.split())


@register("file_content_match")
def file_content_match(call: ValidatorCall) -> Outcome:
    call.file_key()
    # `mode` is accepted as an alias: the catalog swe-bug-fix pack spells it that way.
    mode = call.config.get("match_mode") or call.config.get("mode") or "contains"
    ignore_ws = config_bool(call.config, "ignore_whitespace")
    content, expected = call.actual(), call.expected()
    if mode == "regex":
        found = compile_regex(expected).search(content) is not None
        return binary(found, "pattern matched" if found else "pattern did not match", expected, content)
    if mode == "json_equal":
        try:
            want = json.loads(expected)
        except ValueError as exc:
            raise PackError(f"expected is not valid JSON: {exc}") from exc
        try:
            got = json.loads(content)
        except ValueError as exc:
            return binary(False, f"file is not valid JSON: {exc}", expected, content)
        same = deep_equal(got, want)
        return binary(same, "JSON equal" if same else "JSON differs", expected, content)
    a, e = (_squash(content), _squash(expected)) if ignore_ws else (content, expected)
    if mode == "contains":
        passed, detail = e in a, "contains expected text"
    elif mode == "not_contains":
        passed, detail = e not in a, "does not contain forbidden text"
    elif mode == "exact":
        passed, detail = a == e, "matches exactly"
    else:
        raise PackError(f"config.match_mode {mode!r} must be one of contains, exact, regex, not_contains, json_equal")
    return binary(passed, detail if passed else f"file check failed: {mode}", expected, content)


@register("file_json_schema")
def file_json_schema(call: ValidatorCall) -> Outcome:
    call.file_key()
    if "schema" not in call.config:
        raise PackError("config.schema is required")
    validator = schema_validator(call.config["schema"])
    return schema_outcome(validator, call.actual())


def _listing(call: ValidatorCall) -> tuple[set[str], set[str], list[str]]:
    """(known file paths, known directory paths, listed paths); both absolute and relative forms."""
    key = call.file_key()
    listing = call.extracted.directory_listings.get(key)
    call.event_id = call.extracted.verification_event_ids.get("file:" + key)
    if listing is None:
        if key in call.extracted.captured_files:
            raise PackError(f"file:{key} is a file capture, not a directory listing")
        raise call.no_verification(f"no directory listing for file:{key}")
    root = posixpath.normpath(str(listing.get("path") or "/workspace"))
    files: set[str] = set()
    dirs: set[str] = set()
    listed: list[str] = []
    entries = listing.get("entries")
    for item in entries if isinstance(entries, list) else []:
        entry = item if isinstance(item, dict) else {"path": item}
        path, relative_path = entry.get("path"), entry.get("relative_path")
        if not isinstance(path, str):
            continue
        absolute = path if path.startswith("/") else posixpath.join(root, path)
        relative = relative_path if isinstance(relative_path, str) and relative_path else posixpath.relpath(absolute, root)
        listed.append(absolute)
        (dirs if entry.get("type") == "directory" else files).update({absolute, relative})
        parent = posixpath.dirname(relative)
        while parent and parent != ".":
            dirs.update({parent, posixpath.join(root, parent)})
            parent = posixpath.dirname(parent)
    return files, dirs, sorted(listed)


@register("directory_structure")
def directory_structure(call: ValidatorCall) -> Outcome:
    strict_keys(call.config, {"required_files", "forbidden_files", "required_directories"})
    files, dirs, listed = _listing(call)

    def paths(name: str) -> list[str]:
        value = call.config.get(name) or []
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise PackError(f"config.{name} must be a list of paths")
        return [p for p in value if isinstance(p, str)]

    def norm(p: str) -> str:
        return posixpath.normpath(p)

    problems = [f"missing file {f}" for f in paths("required_files") if norm(f) not in files]
    problems += [f"forbidden file {f}" for f in paths("forbidden_files") if norm(f) in files]
    problems += [f"missing directory {d}" for d in paths("required_directories") if norm(d) not in dirs]
    return binary(not problems, "; ".join(problems) or "directory structure matches", call.config, [*listed])


def _string_value(value: JSON, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise PackError(f"config.value must be {what}")
    return value


def _post_contains(call: ValidatorCall, condition: str, value: JSON, content: str) -> Outcome:
    needle = _string_value(value)
    passed = (needle in content) == (condition == "contains")
    return binary(passed, f"{condition} {needle!r}: {'ok' if passed else 'failed'}", needle, content)


def _post_regex_match(call: ValidatorCall, condition: str, value: JSON, content: str) -> Outcome:
    pattern = _string_value(value, "a string regex pattern")
    found = compile_regex(pattern).search(content) is not None
    return binary(found, "pattern matched" if found else "pattern did not match", pattern, content)


def _post_json_path_match(call: ValidatorCall, condition: str, value: JSON, content: str) -> Outcome:
    if not call.config.get("json_path"):
        raise PackError("config.json_path is required")
    segments = parse_path(str(call.config["json_path"]))
    try:
        document = json.loads(content)
    except ValueError as exc:
        return binary(False, f"file is not valid JSON: {exc}", value, content)
    found, actual = lookup(document, segments)
    passed = found and deep_equal(actual, value)
    return binary(passed, f"{call.config['json_path']} {'equals' if passed else 'does not equal'} value", value, actual)


def _post_equals(call: ValidatorCall, condition: str, value: JSON, content: str) -> Outcome:
    if isinstance(value, str):
        return binary(content == value, "exact match" if content == value else "content differs", value, content)
    try:
        parsed = json.loads(content)
    except ValueError as exc:
        return binary(False, f"file is not valid JSON: {exc}", value, content)
    same = deep_equal(parsed, value)
    return binary(same, "JSON equal" if same else "JSON differs", value, content)


_CONTENT_CONDITIONS: dict[str, Callable[[ValidatorCall, str, JSON, str], Outcome]] = {
    "contains": _post_contains,
    "not_contains": _post_contains,
    "regex_match": _post_regex_match,
    "json_path_match": _post_json_path_match,
    "equals": _post_equals,
}


@register("postcondition")
def postcondition(call: ValidatorCall) -> Outcome:
    if not call.config_given or not call.config:
        raise PackError("postcondition config is required")
    strict_keys(call.config, {"condition", "value", "json_path"})
    condition = call.config.get("condition")
    if condition not in CONDITIONS:
        raise PackError(f"config.condition must be one of {', '.join(CONDITIONS)}")
    key, exists = capture_state(call)
    if condition in ("exists", "not_exists"):
        present = bool(exists)
        passed = present if condition == "exists" else not present
        return binary(passed, f"file:{key} {'exists' if present else 'does not exist'}", condition, present)
    return _CONTENT_CONDITIONS[condition](call, condition, call.config.get("value"), call.actual())
