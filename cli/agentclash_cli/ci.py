"""``agentclash ci validate|run``: the CI manifest ``.agentclash/ci.yaml`` (docs/ci.md).

``ci run`` runs the candidate deployment on the pack, finds (or runs) the baseline, compares,
gates, writes result/run/scorecard/comparison/gate JSON into the output folder and exits with
the gate's code (0 pass, 1 fail, 2 warn, 3 insufficient evidence; 4 a usage or setup error).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import yaml

from agentclash_cli import suites
from agentclash_cli.client import ApiError, Client, CliError
from agentclash_cli.gate import append_step_summary, evaluate, markdown_summary, read_policy, write_json
from agentclash_cli.runs import PackRef, follow, resolve_deployments, resolve_input_set, resolve_pack_version, wait_for_scorecard

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


def load_config(path: str | Path) -> CiConfig:
    """Read and check the manifest; every problem names its field (exit 4)."""
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise CliError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise CliError(f"{path} must be a mapping")
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise CliError(f"ci.yaml: {unknown[0]} is not a known field (known: {', '.join(sorted(_TOP_KEYS))})")
    if doc.get("version", 1) != 1:
        raise CliError("ci.yaml: version must be 1")
    candidate = _section(doc, "candidate", {"deployment"}, required=True)
    evaluation = _section(doc, "evaluation", {"pack", "input_set", "suites"}, required=True)
    baseline = _section(doc, "baseline", {"run", "deployment", "max_age_days", "refresh"}, required=True)
    gate = _section(doc, "gate", {"policy"})
    promotion = _section(doc, "promotion", {"policy", "suite"})

    suite_names = evaluation.get("suites") or []
    if not isinstance(suite_names, list) or not all(isinstance(s, str | int) and not isinstance(s, bool) for s in suite_names):
        raise CliError("ci.yaml: evaluation.suites must be a list of suite names")
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
    output = doc.get("output") or DEFAULT_OUTPUT
    if not isinstance(output, str):
        raise CliError("ci.yaml: output must be a folder path")
    return CiConfig(
        candidate_deployment=str(_text(candidate, "deployment", "candidate", required=True)),
        pack=str(_text(evaluation, "pack", "evaluation", required=True)),
        input_set=_text(evaluation, "input_set", "evaluation"),
        suites=[str(s) for s in suite_names],
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
    )


def run_name(deployment: str, role: str) -> str:
    """``ci candidate: NAME (owner/repo@abc12345)`` — the commit when GitHub Actions says which."""
    sha, repo = os.environ.get("GITHUB_SHA", ""), os.environ.get("GITHUB_REPOSITORY", "")
    where = f" ({repo}@{sha[:8]})" if sha else ""
    return f"ci {role}: {deployment}{where}"[:200]


def _parse_time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def find_recent_baseline(
    client: Client,
    *,
    pack_id: int,
    version_id: int,
    input_set_id: int,
    deployment_id: int,
    max_age_days: float,
    exclude_run_id: int | None = None,
) -> dict[str, Any] | None:
    """The newest completed single-lane run of the deployment on the same version and input set,
    finished no longer ago than ``max_age_days``; never ``exclude_run_id`` (the candidate run
    itself, which may already have finished when the baseline deployment is the candidate's)."""
    oldest = dt.datetime.now(dt.UTC) - dt.timedelta(days=max_age_days)
    for run in client.paginate(client.ws("runs"), page_size=100, status="completed", pack=pack_id):
        created = _parse_time(run.get("created_at"))
        if created is not None and created < oldest:
            return None  # newest first: everything after this is older
        finished = _parse_time(run.get("finished_at"))
        lanes = run.get("lanes") or []
        if (
            run.get("id") != exclude_run_id
            and run.get("pack_version_id") == version_id
            and run.get("input_set_id") == input_set_id
            and len(lanes) == 1
            and lanes[0].get("deployment_id") == deployment_id
            and finished is not None
            and finished >= oldest
        ):
            return run
    return None


def _log(err: TextIO, message: str) -> None:
    err.write(message + "\n")
    err.flush()


def _store_exports(client: Client, run_id: int) -> list[dict[str, Any]]:
    """Keep the candidate's events and scorecards on the server, attached to its run (best effort:
    an older server without artifacts is not a reason to fail the job)."""
    try:
        attached = client.post(client.ws(f"runs/{run_id}/artifacts/exports"))
    except ApiError as exc:
        if exc.status in (403, 404, 405):
            return []
        raise
    return [{"id": a["artifact"]["id"], "name": a["artifact"]["name"], "download_url": a["artifact"]["download_url"]} for a in attached]


def ci_run(client: Client, config: CiConfig, *, err: TextIO | None = None, poll_interval: float = 1.0, timeout: float = 6 * 3600) -> int:
    err = err or sys.stderr
    if config.suites:
        suites.require(client, "evaluation.suites in ci.yaml")
    if config.promotion == "proposed":
        suites.require(client, "promotion.policy proposed in ci.yaml")
    policy = config.policy if config.policy is not None else read_policy(config.policy_file)
    suite_ids = suites.resolve(client, config.suites)
    # Resolved before anything runs: an unknown promotion suite is a setup error, not a late surprise.
    promotion_suite_id = suites.resolve(client, [str(config.promotion_suite)])[0] if config.promotion == "proposed" else None
    version = resolve_pack_version(client, PackRef.parse(config.pack))
    input_set_id = resolve_input_set(client, version, config.input_set)
    (candidate_id,) = resolve_deployments(client, [config.candidate_deployment])
    baseline_deployment_id = resolve_deployments(client, [config.baseline_deployment])[0] if config.baseline_deployment else None
    baseline: dict[str, Any] | None = None
    if config.baseline_run is not None:
        try:
            baseline = client.get(client.ws(f"runs/{config.baseline_run}"))
        except ApiError as exc:
            if exc.status == 404:
                raise CliError(f"ci.yaml: baseline.run {config.baseline_run} is not a run of {client.config.workspace!r}") from None
            raise

    def create(deployment_id: int, role: str, deployment_name: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "pack_version_id": version["id"],
            "input_set_id": input_set_id,
            "deployment_ids": [deployment_id],
            "name": run_name(deployment_name, role),
        }
        if suite_ids:
            body.update(suites.run_fields(suite_ids))
        return client.post(client.ws("runs"), body)

    candidate = create(candidate_id, "candidate", config.candidate_deployment)
    _log(err, f"candidate run {candidate['id']}: " + client.web_url(f"runs/{candidate['id']}/"))
    if baseline is None:
        assert baseline_deployment_id is not None and config.baseline_deployment is not None
        baseline = find_recent_baseline(
            client,
            pack_id=version["pack_id"],
            version_id=version["id"],
            input_set_id=candidate["input_set_id"],
            deployment_id=baseline_deployment_id,
            max_age_days=config.max_age_days,
            exclude_run_id=candidate["id"],
        )
        if baseline is None:
            if config.refresh == "never":
                raise CliError(
                    f"no completed run of {config.baseline_deployment!r} on this pack version in the last {config.max_age_days:g} days "
                    "(baseline.refresh is never)"
                )
            baseline = create(baseline_deployment_id, "baseline", config.baseline_deployment)
            _log(err, f"baseline run {baseline['id']} (none in the last {config.max_age_days:g} days): started")
        else:
            _log(err, f"baseline run {baseline['id']} (finished {baseline.get('finished_at')})")
    candidate = follow(client, candidate["id"], out=err, interval=poll_interval, timeout=timeout)
    if baseline.get("status") not in ("completed", "failed", "cancelled"):
        baseline = follow(client, baseline["id"], out=err, interval=poll_interval, timeout=timeout)

    outcome = evaluate(client, baseline=baseline["id"], candidate=candidate["id"], policy=policy)
    scorecard = wait_for_scorecard(client, candidate["id"], timeout=60)
    exports = _store_exports(client, candidate["id"])
    promoted: list[dict[str, Any]] = []
    if promotion_suite_id is not None and outcome.verdict in ("fail", "warn"):
        for lane in candidate.get("lanes") or []:
            promoted += suites.propose_failures(client, run_id=candidate["id"], lane_id=lane["id"], suite_id=promotion_suite_id)

    output = Path(config.output)
    markdown = markdown_summary(outcome, run_url=lambda run_id: client.web_url(f"runs/{run_id}/"))
    result = {
        "verdict": outcome.verdict,
        "exit_code": outcome.exit_code,
        "reason_code": outcome.gate.get("reason_code"),
        "summary": outcome.gate.get("summary"),
        "server": client.config.url,
        "workspace": client.config.workspace,
        "pack": {"slug": PackRef.parse(config.pack).slug, "version_id": version["id"], "version_number": version["number"]},
        "candidate": {"deployment": config.candidate_deployment, "run_id": candidate["id"], "status": candidate["status"]},
        "baseline": {"deployment": config.baseline_deployment, "run_id": baseline["id"], "status": baseline.get("status")},
        "comparison_id": outcome.comparison["id"],
        "gate_id": outcome.gate["id"],
        "artifacts": exports,
        "promotion": {"policy": config.promotion, "proposed": len(promoted)},
    }
    write_json(output / "result.json", result)
    write_json(output / "run.json", candidate)
    write_json(output / "baseline-run.json", baseline)
    write_json(output / "scorecard.json", scorecard)
    write_json(output / "comparison.json", outcome.comparison)
    write_json(output / "gate.json", outcome.gate)
    (output / "summary.md").write_text(markdown, encoding="utf-8")
    append_step_summary(markdown)
    _log(err, f"gate: {outcome.verdict} ({outcome.gate.get('reason_code')}) — {outcome.gate.get('summary')}")
    _log(err, f"results in {output}/")
    return outcome.exit_code
