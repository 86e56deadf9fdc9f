"""``agentclash gate``: compare two runs on the server, evaluate the release gate, report it.

Exit codes (as ``manage.py gate``): 0 pass, 1 fail, 2 warn, 3 insufficient evidence, 4 usage
error (unknown run, unreadable or invalid policy, runs that cannot be paired, no access).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from agentclash_cli.client import USAGE, ApiError, Client, CliError
from agentclash_cli.runs import case_rows, wait_for_scorecard

EXIT_CODES = {"pass": 0, "fail": 1, "warn": 2, "insufficient_evidence": 3}


@dataclasses.dataclass
class GateOutcome:
    comparison: dict[str, Any]
    gate: dict[str, Any]
    baseline_run: dict[str, Any] = dataclasses.field(default_factory=dict)
    candidate_run: dict[str, Any] = dataclasses.field(default_factory=dict)
    # The two compared lanes' case runs (``…/runs/<id>/cases?lane=``): links and JUnit.
    baseline_cases: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    candidate_cases: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def verdict(self) -> str:
        return str(self.gate.get("verdict"))

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.verdict, USAGE)

    def regressed(self) -> list[str]:
        """Case keys that passed (or completed) in the baseline and failed in the candidate; none when
        the trials decided the gate (a flaky case's single flip is not a regression there)."""
        statistics = self.gate.get("statistics") or {}
        if int(statistics.get("trials_per_case") or 0) >= 2 and statistics.get("comparisons"):
            return []
        divergence = (self.comparison.get("summary") or {}).get("case_divergence") or {}
        keys = [*(divergence.get("passed_to_failed") or []), *(divergence.get("completed_to_failed") or [])]
        return list(dict.fromkeys(str(k) for k in keys))


def read_policy(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read policy file {path}: {exc}") from None


def _run(client: Client, run_id: int, side: str) -> dict[str, Any]:
    try:
        run: dict[str, Any] = client.get(client.ws(f"runs/{run_id}"))
    except ApiError as exc:
        if exc.status == 404:
            raise CliError(f"no {side} run {run_id} in workspace {client.config.workspace!r}") from None
        raise
    return run


def _pack(run: dict[str, Any]) -> str:
    return f"{run.get('pack_name')} v{run.get('pack_version_number')}"


def check_pairable(baseline: dict[str, Any], candidate: dict[str, Any]) -> None:
    """Two runs a gate can compare: the same pack version and input set (said before lanes are)."""
    if baseline.get("pack_version_id") != candidate.get("pack_version_id"):
        raise CliError(
            f"baseline run {baseline['id']} is of {_pack(baseline)} and candidate run {candidate['id']} of {_pack(candidate)}: "
            "a gate compares two runs of the same pack version"
        )
    if baseline.get("input_set_id") != candidate.get("input_set_id"):
        raise CliError(
            f"baseline run {baseline['id']} and candidate run {candidate['id']} ran different input sets of {_pack(baseline)}: "
            "a gate compares two runs of the same input set"
        )


_POSITION = re.compile(r"^\s*(?:lane\s*|#)?(\d+)\s*$", re.IGNORECASE)


def resolve_lane(run: dict[str, Any], choice: str | None, side: str) -> int | None:
    """``--<side>-lane``: a lane as the user sees it — its label or deployment name, a lane id,
    or its position ``lane 2`` / ``#2`` / ``2`` (1-based, as the comparison page numbers lanes);
    None lets the server take a run's only lane. A name wins over a number, an id over a position."""
    lanes = sorted(run.get("lanes") or [], key=lambda lane: lane.get("lane_index") or 0)
    names = ", ".join(f"{position}: {lane.get('label')!r}" for position, lane in enumerate(lanes, 1)) or "none"
    if choice is None:
        if len(lanes) > 1:
            raise CliError(f"{side} run {run['id']} has {len(lanes)} lanes ({names}): choose one with --{side}-lane NAME or its number")
        return None
    found = [lane for lane in lanes if choice.strip() in (lane.get("label"), lane.get("deployment_name"))]
    number = _POSITION.match(choice)
    if not found and number:
        bare = choice.strip().isdigit()
        found = [lane for lane in lanes if bare and int(number.group(1)) == lane.get("id")]
        position = int(number.group(1))
        if 1 <= position <= len(lanes) and found and found[0] is not lanes[position - 1]:
            raise CliError(
                f"--{side}-lane: {choice.strip()!r} is both the id of lane {found[0].get('label')!r} and the number of lane "
                f"{lanes[position - 1].get('label')!r}: write 'lane {position}' for the number, or the lane's name"
            )
        if not found and 1 <= position <= len(lanes):
            found = [lanes[position - 1]]
    if len(found) > 1:
        raise CliError(
            f"--{side}-lane: {side} run {run['id']} has {len(found)} lanes named {choice!r}: give its number instead (lanes: {names})"
        )
    if not found:
        raise CliError(f"--{side}-lane: {side} run {run['id']} has no lane {choice!r} (lanes: {names})")
    return int(found[0]["id"])


def evaluate(
    client: Client,
    *,
    baseline: int,
    candidate: int,
    policy: str | dict[str, Any] | None = None,
    baseline_lane: str | None = None,
    candidate_lane: str | None = None,
    scorecard_timeout: float = 600,
) -> GateOutcome:
    """Check the runs can be paired, wait for both scorecards, create (or find) the comparison,
    evaluate the gate, and read the two lanes' case runs."""
    runs = {"baseline": _run(client, baseline, "baseline"), "candidate": _run(client, candidate, "candidate")}
    check_pairable(runs["baseline"], runs["candidate"])
    lanes = {
        "baseline": resolve_lane(runs["baseline"], baseline_lane, "baseline"),
        "candidate": resolve_lane(runs["candidate"], candidate_lane, "candidate"),
    }
    for run_id in (baseline, candidate):
        wait_for_scorecard(client, run_id, timeout=scorecard_timeout)
    body: dict[str, Any] = {"baseline_run_id": baseline, "candidate_run_id": candidate}
    body.update({f"{side}_lane_id": lane for side, lane in lanes.items() if lane is not None})
    comparison = client.post(client.ws("comparisons"), body)
    gate = client.post(client.ws(f"comparisons/{comparison['id']}/gate"), {"policy": policy} if policy else {})
    return GateOutcome(
        comparison=comparison,
        gate=gate,
        baseline_run=client.get(client.ws(f"runs/{baseline}")),
        candidate_run=client.get(client.ws(f"runs/{candidate}")),
        baseline_cases=case_rows(client, baseline, lane=comparison["baseline_lane_id"]),
        candidate_cases=case_rows(client, candidate, lane=comparison["candidate_lane_id"]),
    )


def print_outcome(outcome: GateOutcome, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    gate, comparison = outcome.gate, outcome.comparison
    out.write(f"verdict: {gate['verdict']}\n")
    out.write(f"reason: {gate.get('reason_code')} — {gate.get('summary')}\n")
    reason = f", {comparison['reason_code']}" if comparison.get("reason_code") else ""
    out.write(f"comparison: #{comparison['id']} ({comparison.get('status')}{reason})\n")
    for line in gate.get("trials_text") or []:  # the trials behind the verdict (the server words them)
        out.write(f"{line}\n")
    for condition in gate.get("triggered_conditions") or []:
        out.write(f"  - {condition.get('condition')}: {condition.get('outcome')}\n")
    for key, result in sorted((gate.get("dimension_results") or {}).items()):
        delta = result.get("delta")
        out.write(f"  {key}: {result.get('outcome')}" + (f" (delta {delta:+.4f})" if isinstance(delta, int | float) else "") + "\n")
    out.flush()


def write_json(path: str | Path, value: Any) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def gate_result(outcome: GateOutcome) -> dict[str, Any]:
    return {
        "verdict": outcome.verdict,
        "exit_code": outcome.exit_code,
        # What the trials said (trials_per_case, the paired intervals, more_trials_per_case); null without trials.
        "statistics": outcome.gate.get("statistics"),
        "comparison": outcome.comparison,
        "gate": outcome.gate,
    }
