"""``.agentclash/ci.yaml``, the CI manifest (docs/ci.md): read and checked before anything runs;
every problem names its field (exit 4)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from agentclash_cli.client import CliError

DEFAULT_PATH = ".agentclash/ci.yaml"
DEFAULT_OUTPUT = "agentclash-results"
PROMOTION_POLICIES = ("disabled", "proposed")
REFRESH_MODES = ("if_stale", "never")
_TOP_KEYS = {"version", "workspace", "candidate", "evaluation", "baseline", "gate", "promotion", "output"}


@dataclasses.dataclass(frozen=True)
class CiConfig:
    candidate_deployment: str
    pack: str
    input_set: str | None
    suites: list[str]
    judge_deployments: list[str]
    allow_missing_judges: bool
    baseline_run: int | None
    baseline_deployment: str | None
    max_age_days: float
    refresh: str
    policy: str | dict[str, Any] | None
    policy_file: str | None
    promotion: str
    promotion_suite: str | None
    output: str
    workspace: str | None
    repeats: int = 1  # evaluation.repeats: trials of every case in each run (docs/ci.md)


MAX_REPEATS = 50


def check_repeats(value: Any, where: str) -> int:
    """``repeats`` for ``ci``: an integer from 1 to 50. ``ci`` runs the candidate and the baseline as
    separate one-lane runs, so adaptive trials (``"auto"``, which compare lanes of one run) do not apply."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, str) and value.strip().lower() == "auto":
        raise CliError(
            f'{where}: "auto" is not available in ci: the candidate and the baseline are separate runs, and adaptive '
            "trials compare lanes of one run; give a number of trials from 1 to 50"
        )
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPEATS:
        raise CliError(f"{where} must be an integer from 1 to {MAX_REPEATS} (trials of every case)")
    return value


def _section(doc: dict[str, Any], key: str, allowed: set[str], *, required: bool = False) -> dict[str, Any]:
    value = doc.get(key)
    if value is None:
        if required:
            raise CliError(f"ci.yaml: {key} is required")
        return {}
    if not isinstance(value, dict):
        raise CliError(f"ci.yaml: {key} must be a mapping")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise CliError(f"ci.yaml: {key}.{unknown[0]} is not a known field (known: {', '.join(sorted(allowed))})")
    return value


def _text(section: dict[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    value = section.get(key)
    if value is None or value == "":
        if required:
            raise CliError(f"ci.yaml: {where}.{key} is required")
        return None
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise CliError(f"ci.yaml: {where}.{key} must be a string")
    return str(value)


def _judges(evaluation: dict[str, Any]) -> tuple[list[str], bool]:
    """``evaluation.judge_deployments`` and ``evaluation.allow_missing_judges``."""
    allow_missing = evaluation.get("allow_missing_judges", False)
    if not isinstance(allow_missing, bool):
        raise CliError("ci.yaml: evaluation.allow_missing_judges must be true or false")
    return _judge_choices(evaluation.get("judge_deployments")), allow_missing


def _judge_choices(value: Any) -> list[str]:
    """``evaluation.judge_deployments``: a list of NAME / MODEL=NAME (as ``--judge-deployment``) or a mapping MODEL: NAME."""
    if value is None:
        return []
    if isinstance(value, dict):
        if not all(isinstance(k, str) and isinstance(v, str) and k.strip() and v.strip() for k, v in value.items()):
            raise CliError("ci.yaml: evaluation.judge_deployments maps each judge model to a deployment name")
        return [f"{model}={name}" for model, name in value.items()]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise CliError("ci.yaml: evaluation.judge_deployments must be a list of deployment names (or MODEL=NAME), or a mapping MODEL: NAME")
    return list(value)


def read_yaml_mapping(path: str | Path, shape: str) -> dict[str, Any]:
    """A YAML file whose top level is a mapping, or a CliError saying what is wrong (exit 4)."""
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise CliError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise CliError(f"{path} must be {shape}")
    return doc


def load_config(path: str | Path) -> CiConfig:
    """Read and check the manifest; every problem names its field (exit 4)."""
    doc = read_yaml_mapping(path, "a mapping")
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise CliError(f"ci.yaml: {unknown[0]} is not a known field (known: {', '.join(sorted(_TOP_KEYS))})")
    if doc.get("version", 1) != 1:
        raise CliError("ci.yaml: version must be 1")
    candidate = _section(doc, "candidate", {"deployment"}, required=True)
    evaluation = _section(
        doc, "evaluation", {"pack", "input_set", "suites", "judge_deployments", "allow_missing_judges", "repeats"}, required=True
    )
    baseline = _section(doc, "baseline", {"run", "deployment", "max_age_days", "refresh"}, required=True)
    gate = _section(doc, "gate", {"policy"})
    promotion = _section(doc, "promotion", {"policy", "suite"})

    suite_names = evaluation.get("suites") or []
    if not isinstance(suite_names, list) or not all(isinstance(s, str | int) and not isinstance(s, bool) for s in suite_names):
        raise CliError("ci.yaml: evaluation.suites must be a list of suite names")
    judge_choices, allow_missing = _judges(evaluation)
    run = baseline.get("run")
    if run is not None and (isinstance(run, bool) or not isinstance(run, int) or run <= 0):
        raise CliError("ci.yaml: baseline.run must be a run id (a positive number)")
    baseline_deployment = _text(baseline, "deployment", "baseline")
    if (run is None) == (baseline_deployment is None):
        raise CliError("ci.yaml: baseline needs exactly one of run or deployment")
    max_age = baseline.get("max_age_days", 7)
    if isinstance(max_age, bool) or not isinstance(max_age, int | float) or max_age <= 0:
        raise CliError("ci.yaml: baseline.max_age_days must be a positive number")
    refresh = baseline.get("refresh", "if_stale")
    if refresh not in REFRESH_MODES:
        raise CliError(f"ci.yaml: baseline.refresh must be one of {', '.join(REFRESH_MODES)}")
    policy = gate.get("policy")
    if policy is not None and not isinstance(policy, str | dict):
        raise CliError("ci.yaml: gate.policy must be a file path or a policy mapping")
    promotion_policy = promotion.get("policy", "disabled")
    if promotion_policy not in PROMOTION_POLICIES:
        raise CliError(f"ci.yaml: promotion.policy must be one of {', '.join(PROMOTION_POLICIES)}")
    promotion_suite = _text(promotion, "suite", "promotion") or (str(suite_names[0]) if suite_names else None)
    if promotion_policy == "proposed" and not promotion_suite:
        raise CliError("ci.yaml: promotion.policy proposed needs promotion.suite (or evaluation.suites)")
    repeats = check_repeats(evaluation.get("repeats", 1), "ci.yaml: evaluation.repeats")
    output = doc.get("output") or DEFAULT_OUTPUT
    if not isinstance(output, str):
        raise CliError("ci.yaml: output must be a folder path")
    return CiConfig(
        candidate_deployment=str(_text(candidate, "deployment", "candidate", required=True)),
        pack=str(_text(evaluation, "pack", "evaluation", required=True)),
        input_set=_text(evaluation, "input_set", "evaluation"),
        suites=[str(s) for s in suite_names],
        judge_deployments=judge_choices,
        allow_missing_judges=allow_missing,
        baseline_run=run,
        baseline_deployment=baseline_deployment,
        max_age_days=float(max_age),
        refresh=refresh,
        policy=policy if isinstance(policy, dict) else None,
        policy_file=policy if isinstance(policy, str) else None,
        promotion=promotion_policy,
        promotion_suite=promotion_suite,
        output=output,
        workspace=_text(doc, "workspace", "ci.yaml") if doc.get("workspace") else None,
        repeats=repeats,
    )
