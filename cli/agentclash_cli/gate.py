"""``agentclash gate``: compare two runs on the server, evaluate the release gate, report it.

Exit codes (as ``manage.py gate``): 0 pass, 1 fail, 2 warn, 3 insufficient evidence, 4 usage
error (unknown run, unreadable or invalid policy, runs that cannot be paired, no access).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from agentclash_cli.client import ApiError, Client, CliError
from agentclash_cli.runs import wait_for_scorecard

EXIT_CODES = {"pass": 0, "fail": 1, "warn": 2, "insufficient_evidence": 3}
USAGE = 4
BADGES = {"pass": "✅ pass", "fail": "❌ fail", "warn": "⚠️ warn", "insufficient_evidence": "❔ insufficient evidence"}


@dataclasses.dataclass
class GateOutcome:
    comparison: dict[str, Any]
    gate: dict[str, Any]

    @property
    def verdict(self) -> str:
        return str(self.gate.get("verdict"))

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.verdict, USAGE)


def read_policy(path: str | None) -> str | None:
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read policy file {path}: {exc}") from None


def evaluate(
    client: Client,
    *,
    baseline: int,
    candidate: int,
    policy: str | dict[str, Any] | None = None,
    baseline_lane: int | None = None,
    candidate_lane: int | None = None,
    scorecard_timeout: float = 600,
) -> GateOutcome:
    """Wait for both scorecards, create (or find) the comparison, evaluate the gate."""
    for side, run_id in (("baseline", baseline), ("candidate", candidate)):
        try:
            wait_for_scorecard(client, run_id, timeout=scorecard_timeout)
        except ApiError as exc:
            if exc.status == 404:
                raise CliError(f"no {side} run {run_id} in workspace {client.config.workspace!r}") from None
            raise
    body: dict[str, Any] = {"baseline_run_id": baseline, "candidate_run_id": candidate}
    if baseline_lane:
        body["baseline_lane_id"] = baseline_lane
    if candidate_lane:
        body["candidate_lane_id"] = candidate_lane
    comparison = client.post(client.ws("comparisons"), body)
    gate = client.post(client.ws(f"comparisons/{comparison['id']}/gate"), {"policy": policy} if policy else {})
    return GateOutcome(comparison=comparison, gate=gate)


def print_outcome(outcome: GateOutcome, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    gate, comparison = outcome.gate, outcome.comparison
    out.write(f"verdict: {gate['verdict']}\n")
    out.write(f"reason: {gate.get('reason_code')} — {gate.get('summary')}\n")
    reason = f", {comparison['reason_code']}" if comparison.get("reason_code") else ""
    out.write(f"comparison: #{comparison['id']} ({comparison.get('status')}{reason})\n")
    for condition in gate.get("triggered_conditions") or []:
        out.write(f"  - {condition.get('condition')}: {condition.get('outcome')}\n")
    for key, result in sorted((gate.get("dimension_results") or {}).items()):
        delta = result.get("delta")
        out.write(f"  {key}: {result.get('outcome')}" + (f" (delta {delta:+.4f})" if isinstance(delta, int | float) else "") + "\n")
    out.flush()


def _number(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) and not isinstance(value, bool) else "—"


def markdown_summary(outcome: GateOutcome, *, run_url: Any = None, title: str = "AgentClash release gate") -> str:
    """A GitHub-flavoured Markdown report: verdict, runs, per-dimension table, triggered conditions."""
    gate, comparison = outcome.gate, outcome.comparison
    summary = comparison.get("summary") or {}
    deltas = summary.get("dimension_deltas") or {}

    def run_cell(run_id: Any) -> str:
        return f"[#{run_id}]({run_url(run_id)})" if run_url else f"#{run_id}"

    lines = [
        f"## {title}: {BADGES.get(outcome.verdict, outcome.verdict)}",
        "",
        f"**{gate.get('reason_code')}** — {gate.get('summary')}",
        "",
        f"Baseline run {run_cell(comparison['baseline_run_id'])} (lane {comparison['baseline_lane_id']}) · "
        f"candidate run {run_cell(comparison['candidate_run_id'])} (lane {comparison['candidate_lane_id']}) · "
        f"comparison #{comparison['id']} ({comparison.get('status')}) · policy `{(gate.get('policy') or {}).get('policy_key', 'default')}`",
        "",
    ]
    dims = gate.get("dimension_results") or {}
    if dims:
        lines += ["| Dimension | Baseline | Candidate | Delta | Outcome |", "|---|--:|--:|--:|---|"]
        for key, result in sorted(dims.items()):
            entry = deltas.get(key) or {}
            delta = result.get("delta", entry.get("delta"))
            lines.append(
                f"| `{key}` | {_number(entry.get('baseline_value'))} | {_number(entry.get('candidate_value'))} | "
                f"{f'{delta:+.3f}' if isinstance(delta, int | float) else '—'} | {result.get('outcome')} |"
            )
        lines.append("")
    conditions = gate.get("triggered_conditions") or []
    if conditions:
        lines.append("Triggered conditions:")
        for condition in conditions:
            cases = condition.get("cases")
            suffix = f" — cases: {', '.join(map(str, cases[:20]))}" if isinstance(cases, list) and cases else ""
            lines.append(f"- `{condition.get('condition')}`: {condition.get('outcome')}{suffix}")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_json(path: str | Path, value: Any) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def append_step_summary(markdown: str) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY`` when GitHub Actions set it."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(markdown)


def gate_result(outcome: GateOutcome) -> dict[str, Any]:
    return {"verdict": outcome.verdict, "exit_code": outcome.exit_code, "comparison": outcome.comparison, "gate": outcome.gate}


def run_gate(
    client: Client,
    *,
    baseline: int,
    candidate: int,
    policy_file: str | None,
    baseline_lane: int | None,
    candidate_lane: int | None,
    json_out: str | None,
    out: TextIO | None = None,
) -> int:
    policy = read_policy(policy_file)
    try:
        outcome = evaluate(
            client, baseline=baseline, candidate=candidate, policy=policy, baseline_lane=baseline_lane, candidate_lane=candidate_lane
        )
    except ApiError as exc:
        raise CliError(exc.message, USAGE) from None
    print_outcome(outcome, out)
    if json_out:
        write_json(json_out, gate_result(outcome))
    append_step_summary(markdown_summary(outcome, run_url=lambda run_id: client.web_url(f"runs/{run_id}/")))
    return outcome.exit_code
