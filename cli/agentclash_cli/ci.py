"""``agentclash ci run``: the CI manifest ``.agentclash/ci.yaml`` (docs/ci.md; ``ci_config.py`` reads it).

``ci run`` runs the candidate deployment on the pack, finds (or runs) the baseline, compares,
gates, writes result/run/scorecard/comparison/gate JSON into the output folder and exits with
the gate's code (0 pass, 1 fail, 2 warn, 3 insufficient evidence; 4 a usage or setup error).
With ``--junit FILE`` it writes the two lanes' cases as JUnit XML, with ``--pr-comment`` it posts
(or updates) one sticky pull-request comment with the report (``github.py``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from agentclash_cli import github, judges, junit, suites
from agentclash_cli.ci_config import CiConfig
from agentclash_cli.client import ApiError, Client, CliError
from agentclash_cli.gate import evaluate, read_policy, write_json
from agentclash_cli.runs import (
    PackRef,
    active_deployments,
    check_fit,
    create_run,
    follow,
    judge_request,
    resolve_deployments,
    resolve_input_set,
    resolve_pack_version,
    wait_for_scorecard,
)
from agentclash_cli.summary import append_step_summary, markdown_summary


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
    repeats: int = 1,
) -> dict[str, Any] | None:
    """The newest completed single-lane run of the deployment on the same version and input set,
    finished no longer ago than ``max_age_days``; never ``exclude_run_id`` (the candidate run
    itself, which may already have finished when the baseline deployment is the candidate's). Only a
    run with ``repeats`` trials of every case counts (a server without trials: one)."""
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
            and run.get("repeats", 1) == repeats
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


@dataclasses.dataclass
class _Plan:
    """Everything ``ci run`` resolved before it starts a run."""

    policy: str | dict[str, Any] | None
    version: dict[str, Any]
    input_set_id: int | None
    candidate_id: int
    baseline_deployment_id: int | None
    baseline: dict[str, Any] | None
    judge_fields: dict[str, Any]
    suite_ids: list[int]
    promotion_suite_id: int | None
    repeats: int = 1


def _plan(client: Client, config: CiConfig) -> _Plan:
    """Resolve and check every name of the manifest (a problem here is exit 4, and nothing has run)."""
    if config.suites:
        suites.require(client, "evaluation.suites in ci.yaml")
    if config.promotion == "proposed":
        suites.require(client, "promotion.policy proposed in ci.yaml")
    policy = config.policy if config.policy is not None else read_policy(config.policy_file)
    suite_ids = suites.resolve(client, config.suites)
    # Resolved before anything runs: an unknown promotion suite is a setup error, not a late surprise.
    promotion_suite_id = suites.resolve(client, [str(config.promotion_suite)])[0] if config.promotion == "proposed" else None
    ref = PackRef.parse(config.pack)
    version = resolve_pack_version(client, ref)
    input_set_id = resolve_input_set(client, version, config.input_set)
    known = active_deployments(client)
    names = [config.candidate_deployment, *([config.baseline_deployment] if config.baseline_deployment else [])]
    ids = resolve_deployments(client, names, known)
    where = f"{ref.slug} v{version['number']}"
    check_fit(version, names, known, pack=where)
    judge_fields = judge_request(
        client,
        version,
        config.judge_deployments,
        allow_missing=config.allow_missing_judges,
        deployments=known,
        words=judges.CI_WORDS,
        pack=where,
    )
    baseline: dict[str, Any] | None = None
    if config.baseline_run is not None:
        try:
            baseline = client.get(client.ws(f"runs/{config.baseline_run}"))
        except ApiError as exc:
            if exc.status == 404:
                raise CliError(f"ci.yaml: baseline.run {config.baseline_run} is not a run of {client.config.workspace!r}") from None
            raise
    return _Plan(
        policy=policy,
        version=version,
        input_set_id=input_set_id,
        candidate_id=ids[0],
        baseline_deployment_id=ids[1] if len(ids) > 1 else None,
        baseline=baseline,
        judge_fields=judge_fields,
        suite_ids=suite_ids,
        promotion_suite_id=promotion_suite_id,
        repeats=config.repeats,
    )


def _create(client: Client, plan: _Plan, deployment_id: int, role: str, deployment_name: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "pack_version_id": plan.version["id"],
        "input_set_id": plan.input_set_id,
        "deployment_ids": [deployment_id],
        "name": run_name(deployment_name, role),
        **plan.judge_fields,
    }
    if plan.suite_ids:
        body.update(suites.run_fields(plan.suite_ids))
    if plan.repeats != 1:
        body["repeats"] = plan.repeats
    return create_run(client, body, judges.CI_WORDS)


def _baseline(client: Client, config: CiConfig, plan: _Plan, candidate: dict[str, Any], err: TextIO) -> dict[str, Any]:
    """The pinned baseline run, else a recent one of the baseline deployment, else (if_stale) a new one."""
    if plan.baseline is not None:
        return plan.baseline
    assert plan.baseline_deployment_id is not None and config.baseline_deployment is not None
    baseline = find_recent_baseline(
        client,
        pack_id=plan.version["pack_id"],
        version_id=plan.version["id"],
        input_set_id=candidate["input_set_id"],
        deployment_id=plan.baseline_deployment_id,
        max_age_days=config.max_age_days,
        exclude_run_id=candidate["id"],
        repeats=config.repeats,
    )
    if baseline is not None:
        _log(err, f"baseline run {baseline['id']} (finished {baseline.get('finished_at')})")
        return baseline
    if config.refresh == "never":
        raise CliError(
            f"no completed run of {config.baseline_deployment!r} on this pack version in the last {config.max_age_days:g} days "
            "(baseline.refresh is never)"
        )
    baseline = _create(client, plan, plan.baseline_deployment_id, "baseline", config.baseline_deployment)
    _log(err, f"baseline run {baseline['id']} (none in the last {config.max_age_days:g} days): started")
    return baseline


def _comment(markdown: str, *, pr_number: int | None, err: TextIO) -> dict[str, Any]:
    """Post or update the sticky PR comment; a problem is a warning, never the job's exit code."""
    pr, missing = github.pull_request(os.environ, pr_number)
    if pr is None:
        _log(err, f"pr comment: skipped ({missing})")
        return {"status": "skipped", "reason": missing}
    try:
        action, url = github.post_sticky_comment(pr, markdown, note=lambda message: _log(err, message))
    except github.GitHubError as exc:
        _log(err, f"pr comment: warning: {exc}")
        return {"status": "error", "reason": str(exc)}
    _log(err, f"pr comment: {action} {url}")
    return {"status": action, "url": url}


def ci_run(
    client: Client,
    config: CiConfig,
    *,
    err: TextIO | None = None,
    poll_interval: float = 1.0,
    timeout: float = 6 * 3600,
    junit_path: str | None = None,
    pr_comment: bool = False,
    pr_number: int | None = None,
) -> dict[str, Any]:
    """Run, compare, gate and report; the result (``result.json``), whose ``exit_code`` the command exits with."""
    err = err or sys.stderr
    plan = _plan(client, config)
    candidate = _create(client, plan, plan.candidate_id, "candidate", config.candidate_deployment)
    _log(err, f"candidate run {candidate['id']}: " + client.web_url(f"runs/{candidate['id']}/"))
    baseline = _baseline(client, config, plan, candidate, err)
    candidate = follow(client, candidate["id"], out=err, interval=poll_interval, timeout=timeout)
    if baseline.get("status") not in ("completed", "failed", "cancelled"):
        baseline = follow(client, baseline["id"], out=err, interval=poll_interval, timeout=timeout)

    outcome = evaluate(client, baseline=baseline["id"], candidate=candidate["id"], policy=plan.policy)
    scorecard = wait_for_scorecard(client, candidate["id"], timeout=60)
    exports = _store_exports(client, candidate["id"])
    promoted: list[dict[str, Any]] = []
    if plan.promotion_suite_id is not None and outcome.verdict in ("fail", "warn"):
        for lane in candidate.get("lanes") or []:
            promoted += suites.propose_failures(client, run_id=candidate["id"], lane_id=lane["id"], suite_id=plan.promotion_suite_id)

    output = Path(config.output)
    markdown = markdown_summary(outcome, web_url=client.web_url)
    result = {
        "verdict": outcome.verdict,
        "exit_code": outcome.exit_code,
        "reason_code": outcome.gate.get("reason_code"),
        "summary": outcome.gate.get("summary"),
        "server": client.config.url,
        "workspace": client.config.workspace,
        "pack": {"slug": PackRef.parse(config.pack).slug, "version_id": plan.version["id"], "version_number": plan.version["number"]},
        "candidate": {"deployment": config.candidate_deployment, "run_id": candidate["id"], "status": candidate["status"]},
        "baseline": {"deployment": config.baseline_deployment, "run_id": baseline["id"], "status": baseline.get("status")},
        "comparison_id": outcome.comparison["id"],
        "comparison_url": client.web_url(f"comparisons/{outcome.comparison['id']}/"),
        "gate_id": outcome.gate["id"],
        "regressed_cases": outcome.regressed(),
        "artifacts": exports,
        "promotion": {"policy": config.promotion, "proposed": len(promoted)},
    }
    if junit_path:
        junit.write(junit_path, f"agentclash ci: {config.candidate_deployment}", junit.gate_suites(outcome))
    if pr_comment:
        result["pr_comment"] = _comment(markdown, pr_number=pr_number, err=err)
    write_json(output / "result.json", result)
    write_json(output / "run.json", candidate)
    write_json(output / "baseline-run.json", baseline)
    write_json(output / "scorecard.json", scorecard)
    write_json(output / "comparison.json", outcome.comparison)
    write_json(output / "gate.json", outcome.gate)
    (output / "summary.md").write_text(markdown, encoding="utf-8")
    append_step_summary(markdown)
    _log(err, f"gate: {outcome.verdict} ({outcome.gate.get('reason_code')}) — {outcome.gate.get('summary')}")
    _log(err, f"comparison: {result['comparison_url']}")
    _log(err, f"results in {output}/")
    return result
