"""Who judges a run the CLI starts: ``--judge-deployment`` and ``--allow-missing-judges`` (and the
``evaluation.judge_deployments`` / ``evaluation.allow_missing_judges`` keys of ``ci.yaml``).

A choice is ``MODEL=NAME`` (deployment NAME answers the pack's LLM judge model MODEL, as written
in the pack) or a plain ``NAME`` (it answers every judge model no ``MODEL=NAME`` chose; one plain
NAME at most). Text is ``MODEL=NAME`` only when MODEL is one of the pack's judge models, so a
deployment whose name holds ``=`` still works. Models nobody chose resolve on the server (a
deployment of exactly that model, else the workspace's default judge); a model left without
one refuses the run unless missing judges are allowed. The server's refusal names its API fields;
:func:`refusal` says it with the CLI's words instead.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agentclash_cli.client import ApiError, CliError


@dataclasses.dataclass(frozen=True)
class Words:
    """How the command the user typed calls the two API fields."""

    choose: str
    allow: str


RUN_WORDS = Words(choose="--judge-deployment", allow="--allow-missing-judges")
CI_WORDS = Words(
    choose="evaluation.judge_deployments in ci.yaml (or --judge-deployment)",
    allow="evaluation.allow_missing_judges: true in ci.yaml (or --allow-missing-judges)",
)


def pack_judge_models(manifest: dict[str, Any]) -> list[str]:
    """Every model the pack's LLM judges name, as written, in order of first mention (the server's
    ``runs.services.resolve.pack_judge_models`` reads the same manifest the same way)."""
    spec = manifest.get("evaluation_spec") or {}
    models: list[str] = []
    for decl in (spec.get("llm_judges") if isinstance(spec, dict) else None) or []:
        if not isinstance(decl, dict):
            continue
        named = decl.get("models") or ([decl["model"]] if decl.get("model") else [])
        for model in named if isinstance(named, list) else []:
            text = str(model).strip()
            if text and text not in models:
                models.append(text)
    return models


def choices_map(choices: list[str], models: list[str], names: set[str], *, words: Words, pack: str) -> dict[str, str]:
    """``{judge model: deployment name}`` for the choices (``names``: the workspace's deployment names);
    CliError naming the flag when they do not fit the pack."""
    if not choices:
        return {}
    if not models:
        raise CliError(f"{words.choose}: pack {pack} has no LLM judges, so there is nothing to choose a judge for")
    chosen: dict[str, str] = {}
    plain: list[str] = []
    for text in (c.strip() for c in choices):
        model, sep, name = (part.strip() for part in text.partition("="))
        if sep and model in models and name:
            if model in chosen:
                raise CliError(f"{words.choose}: {model} is chosen twice")
            chosen[model] = name
        elif sep and text not in names:
            raise CliError(f"{words.choose}: {model!r} is not an LLM judge model of pack {pack} (its judge models: {', '.join(models)})")
        elif text:
            plain.append(text)
        else:
            raise CliError(f"{words.choose} needs a deployment name (or MODEL=NAME)")
    if len(plain) > 1:
        raise CliError(
            f"{words.choose}: give MODEL=NAME for each judge model when you choose several judges "
            f"(got {', '.join(repr(p) for p in plain)}; the pack's judge models: {', '.join(models)})"
        )
    for model in models:
        if plain and model not in chosen:
            chosen[model] = plain[0]
    return chosen


def run_fields(
    chosen: dict[str, str], deployments: dict[str, dict[str, Any]], *, allow_missing: bool, words: Words, workspace: str
) -> dict[str, Any]:
    """The run-create request's ``judge_deployments`` and ``allow_missing_judges``; ``deployments`` is name → API row."""
    missing = sorted({name for name in chosen.values() if name not in deployments})
    if missing:
        known = ", ".join(sorted(deployments)) or "none"
        raise CliError(f"{words.choose}: no deployment named {', '.join(repr(m) for m in missing)} in {workspace!r} (deployments: {known})")
    fields: dict[str, Any] = {}
    if chosen:
        fields["judge_deployments"] = {model: int(deployments[name]["id"]) for model, name in chosen.items()}
    if allow_missing:
        fields["allow_missing_judges"] = True
    return fields


def refusal(exc: ApiError, words: Words) -> CliError | None:
    """The server's refusal about judges in the CLI's words (None when it is about something else)."""
    body: dict[str, Any] = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    found = error.get("fields") if isinstance(error, dict) else None
    fields: dict[str, Any] = found if isinstance(found, dict) else {}
    if exc.code == "judge_unresolved":
        models = ", ".join(str(m) for m in body.get("models") or []) or "some judge models"
        return CliError(
            f"no judge deployment for {models} (LLM judge models of the pack): choose one with {words.choose} MODEL=NAME "
            f"(or NAME for every judge model), set a workspace default judge, or use {words.allow} to start without them "
            "(those judge dimensions are then unavailable)"
        )
    if "judge_deployments" in fields or "allow_missing_judges" in fields:
        detail = " ".join(str(m) for m in fields.get("judge_deployments") or fields.get("allow_missing_judges") or [exc.detail])
        detail = detail.replace("judge_deployments", words.choose).replace("allow_missing_judges", words.allow)
        return CliError(f"{words.choose}: {detail}")
    return None
