"""Validators that can never pass, alone or beside another one (issue 22 item 9).

Each finding is reported on the validator and handed to ``bundle.lint.verdicts``, which works out
what it does to the case: a ``Finding`` with one key never passes; with two keys, the two never
pass together (one of them always fails).

- ``exact_match``/``normalized_match`` of a ``literal:`` against a target another validator needs
  to be a JSON object or array (``json_schema`` or ``file_json_schema`` with ``type: object``,
  ``json_path_match`` on ``$.field``) or JSON at all: the literal is not one, and no normalisation
  turns it into one (the deep-research pack compared its JSON report with the word "confidence").
  A one-word literal against the whole output, without such a validator, is only suspicious: it
  passes for exactly that answer.
- ``regex_match`` with a ``literal:`` pattern that matches no text at all (bundle.lint.regex_reach),
  or that RE2 does not compile (a pack error in every case, at scoring time).
- ``rouge_score`` with ``variant: rouge-2`` against one-word references: the score is always 0.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from bundle.lint.regex_reach import can_never_match
from bundle.validate.common import Report, re2_error
from bundle.validate.composed_tools import schema_problem

SPEC = "version.evaluation_spec"
EQUALITY_TYPES = frozenset({"exact_match", "normalized_match"})
OUTPUT_TARGETS = frozenset({"final_output", "run.final_output"})
LITERAL = "literal:"
# What normalized_match does without a pipeline (engine/scoring/validators/similarity.py).
DEFAULT_PIPELINE = ("trim", "lowercase", "collapse_whitespace")
# The characters a JSON object/array always has, and the normalisation steps that remove them
# (engine/scoring/validators/textnorm.py: strip_punctuation drops every P and S character,
# strip_formatting drops ",()[]").
SHAPES = {"object": ("{", frozenset({"strip_punctuation"})), "array": ("[", frozenset({"strip_punctuation", "strip_formatting"}))}
_ONE_WORD = re.compile(r"\S+\Z")
_PATH_OBJECT = re.compile(r"\$\s*(\.[A-Za-z_-]|\[\s*['\"])")
_PATH_ARRAY = re.compile(r"\$\s*\[\s*\d")
_DEFAULT_ROUGE_THRESHOLD = 0.3  # engine/scoring/validators/overlap.py


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    """Validators (by key) that cannot all pass in any case, and why, in words."""

    keys: tuple[str, ...]
    reason: str


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _target(validator: dict[str, Any]) -> str:
    target = _text(validator.get("target"))
    return "final_output" if target in OUTPUT_TARGETS else target


def _literal(validator: dict[str, Any]) -> str | None:
    """The expected text of a ``literal:`` reference, as the scorer reads it."""
    expected = _text(validator.get("expected_from"))
    return expected[len(LITERAL) :] if expected.startswith(LITERAL) else None


def _described(target: str) -> str:
    return "the whole final output" if target == "final_output" else f'"{target}"'


def _shape_needed(validator: dict[str, Any]) -> str | None:
    """``object``/``array`` when this validator passes only for a JSON object/array, ``json`` when
    only for some JSON document, else None."""
    kind = validator.get("type")
    if kind == "file_json_schema":
        config = validator.get("config")
        schema = config.get("schema") if isinstance(config, dict) else None
        declared = schema.get("type") if isinstance(schema, dict) else None
        return declared if declared in SHAPES else "json" if isinstance(schema, dict) else None
    literal = _literal(validator)
    if literal is None:
        return None
    if kind == "json_schema":
        try:
            schema = json.loads(literal)
        except ValueError:
            return None  # a pack error at scoring (lint_literal_errors), not a constraint
        declared = schema.get("type") if isinstance(schema, dict) else None
        return declared if declared in SHAPES else "json"
    if kind == "json_path_match":
        path = literal.strip()
        if not path.startswith("$"):
            try:
                spec = json.loads(path)
            except ValueError:
                return None
            path = _text(spec.get("path")) if isinstance(spec, dict) else ""
        if _PATH_OBJECT.match(path):
            return "object"
        return "array" if _PATH_ARRAY.match(path) else "json"
    return None


def _pipeline(validator: dict[str, Any]) -> list[str]:
    if validator.get("type") == "exact_match":
        return []
    config = validator.get("config")
    config = config if isinstance(config, dict) else {}
    steps = config.get("pipeline", config.get("normalizations"))
    return list(DEFAULT_PIPELINE) if steps is None else [s for s in steps if isinstance(s, str)] if isinstance(steps, list) else []


def _can_equal_shape(validator: dict[str, Any], literal: str, shape: str) -> bool:
    """Whether some JSON document of ``shape`` can equal ``literal`` under the validator's normalisation."""
    steps = _pipeline(validator)
    if shape == "json":
        if steps:
            return True  # a pipeline may turn any literal into what a JSON text normalises to
        try:
            json.loads(literal)
        except ValueError:
            return False
        return True
    mark, removers = SHAPES[shape]
    if removers & set(steps):
        return True
    if not steps:
        try:
            parsed = json.loads(literal)
        except ValueError:
            return False
        return isinstance(parsed, dict) if shape == "object" else isinstance(parsed, list)
    return mark in literal  # trim, lowercase, whitespace, articles, sorting: the mark survives all of them


def _one_word_tip(literal: str, target: str) -> str:
    word = literal.strip()
    where = "the output" if target == "final_output" else f'"{target}"'
    return f'. To check that {where} mentions "{word}", use type: contains' if _ONE_WORD.match(word) else ""


def find_never_passing(validators: list[tuple[int, dict[str, Any]]], report: Report) -> list[Finding]:
    """Warn on each validator that cannot pass (alone or beside another); return the findings."""
    findings: list[Finding] = []
    shaped = [(i, v, shape) for i, v in validators if (shape := _shape_needed(v))]
    for i, validator in validators:
        key = _text(validator.get("key")) or f"#{i + 1}"
        base = f"{SPEC}.validators[{i}]"
        if validator.get("type") in EQUALITY_TYPES:
            finding = _equality(i, key, validator, shaped, base, report)
        elif validator.get("type") == "regex_match":
            finding = _regex(key, _literal(validator), f"{base}.expected_from", report)
        elif validator.get("type") == "rouge_score":
            finding = _rouge(key, validator, base, report)
        else:
            finding = None
        if finding is not None:
            findings.append(finding)
    return findings


def _equality(
    i: int, key: str, validator: dict[str, Any], shaped: list[tuple[int, dict[str, Any], str]], base: str, report: Report
) -> Finding | None:
    literal = _literal(validator)
    if literal is None:
        return None
    target = _target(validator)
    for j, other, shape in shaped:
        if j == i or _target(other) != target or _can_equal_shape(validator, literal, shape):
            continue
        other_key = _text(other.get("key")) or f"#{j + 1}"
        what = "a JSON document" if shape == "json" else f"a JSON {shape}"
        report.add(
            f"{base}.expected_from",
            f'compares {_described(target)} with "{literal.strip()}", which can never be {what}, but validator "{other_key}" passes '
            f"only when {_described(target)} is {what}: the two can never pass together{_one_word_tip(literal, target)}",
        )
        return Finding((key, other_key), f'validators "{key}" and "{other_key}" can never pass together')
    if target == "final_output" and _ONE_WORD.match(literal.strip()):
        report.add(
            f"{base}.expected_from",
            f'compares the whole final output with the single word "{literal.strip()}": it passes only when the agent answers with '
            "exactly that word. To check that the output mentions it, use type: contains",
        )
    return None


def _regex(key: str, pattern: str | None, path: str, report: Report) -> Finding | None:
    if pattern is None or re2_error(pattern) is not None:
        return None  # not a literal, or a pack error at scoring (lint_literal_errors)
    if not can_never_match(pattern):
        return None
    report.add(
        path,
        f'"{pattern}" can never match any text (an anchor such as ^, $, \\A or \\z stands where the text cannot start or end, or a '
        "character class holds no character): this validator can never pass",
    )
    return Finding((key,), f'validator "{key}" can never pass (its pattern matches nothing)')


def _references(literal: str) -> list[str]:
    """A JSON array of strings is a list of references (engine/scoring/validators/overlap.py)."""
    if literal.strip().startswith("["):
        try:
            parsed = json.loads(literal)
        except ValueError:
            return [literal]
        if isinstance(parsed, list) and parsed and all(isinstance(r, str) for r in parsed):
            return parsed
    return [literal]


def _rouge(key: str, validator: dict[str, Any], base: str, report: Report) -> Finding | None:
    literal = _literal(validator)
    config = validator.get("config")
    config = config if isinstance(config, dict) else {}
    threshold = config.get("threshold")
    threshold = _DEFAULT_ROUGE_THRESHOLD if threshold is None else threshold
    if literal is None or config.get("variant") != "rouge-2" or not isinstance(threshold, (int, float)) or threshold <= 0:
        return None
    if not all(len(reference.split()) == 1 for reference in _references(literal)):
        return None
    where = f"{base}.config.threshold" if "threshold" in config else f"{base}.config.variant"
    report.add(
        where,
        f"no score can reach {threshold:g}: ROUGE-2 counts pairs of consecutive words and the expected text has a single word, "
        "so every answer scores 0 (use rouge-1 or rouge-l)",
    )
    return Finding((key,), f'validator "{key}" can never pass (its ROUGE-2 score is always 0)')


def lint_literal_errors(validators: list[tuple[int, dict[str, Any]]], report: Report) -> None:
    """``literal:`` expectations the scorer cannot read: a pack error in every case, at run time."""
    for i, validator in validators:
        literal = _literal(validator)
        if literal is None:
            continue
        problem = None
        if validator.get("type") == "regex_match":
            problem = re2_error(literal)
        elif validator.get("type") in ("json_schema", "json_path_match") and not literal.strip().startswith("$"):
            problem = _json_problem(literal, schema=validator.get("type") == "json_schema")
        if problem:
            report.add(
                f"{SPEC}.validators[{i}].expected_from",
                f"cannot be read ({problem}): the validator is a pack error in every case, found only when cases are scored",
            )


def _json_problem(literal: str, *, schema: bool) -> str | None:
    try:
        parsed = json.loads(literal)
    except json.JSONDecodeError as exc:
        return f"not valid JSON: {exc.msg} at character {exc.pos}"
    if not schema:
        return None
    if not isinstance(parsed, (dict, bool)):
        return "a JSON schema must be an object"
    problem = schema_problem(json.dumps(parsed, sort_keys=True))
    if problem is None:
        return None
    return problem.replace("must be a valid JSON Schema: ", "not a valid JSON schema: ", 1).replace(
        "must resolve as a valid JSON Schema: ", "not a JSON schema that resolves: ", 1
    )
