"""The Markdown report of a gate: ``$GITHUB_STEP_SUMMARY``, ``summary.md`` and the PR comment.

Verdict and reason, links to both runs and to the comparison, the per-dimension table, the
regressed cases (each linked to its replay on both sides and to the side-by-side view) and the
triggered conditions. Only the server's own words and numbers go in: no case output and no error
text, which an evaluated agent could shape (the report may be posted on a pull request).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from agentclash_cli.gate import GateOutcome
from agentclash_cli.output import score

BADGES = {"pass": "✅ pass", "fail": "❌ fail", "warn": "⚠️ warn", "insufficient_evidence": "❔ insufficient evidence"}
MAX_CASE_ROWS = 50

WebUrl = Callable[[str], str]


def _cell(text: Any) -> str:
    """Text safe in a table cell and in code spans: no pipes, backticks or line breaks."""
    return str(text).replace("|", "/").replace("`", "'").replace("\r", " ").replace("\n", " ")


def _link(label: str, path: str, web_url: WebUrl | None) -> str:
    return f"[{label}]({web_url(path)})" if web_url else label


def _verdict(case: dict[str, Any] | None) -> str:
    if case is None:
        return "—"
    passed = case.get("passed")
    state = "passed" if passed is True else "failed" if passed is False else str(case.get("status") or "not scored")
    return f"{state} · {score(case.get('score'))}"


def _lane_label(run: dict[str, Any], lane_id: Any) -> str:
    lane = next((lane for lane in run.get("lanes") or [] if lane.get("id") == lane_id), None)
    return _cell(lane.get("label")) if lane else f"lane {lane_id}"


def _dimensions(outcome: GateOutcome) -> list[str]:
    dims = outcome.gate.get("dimension_results") or {}
    if not dims:
        return []
    deltas = (outcome.comparison.get("summary") or {}).get("dimension_deltas") or {}
    lines = ["| Dimension | Baseline | Candidate | Delta | Outcome |", "|---|--:|--:|--:|---|"]
    for key, result in sorted(dims.items()):
        entry = deltas.get(key) or {}
        delta = result.get("delta", entry.get("delta"))
        lines.append(
            f"| `{_cell(key)}` | {score(entry.get('baseline_value'))} | {score(entry.get('candidate_value'))} | "
            f"{f'{delta:+.3f}' if isinstance(delta, int | float) else '—'} | {result.get('outcome')} |"
        )
    return [*lines, ""]


def _regressed(outcome: GateOutcome, web_url: WebUrl | None) -> list[str]:
    keys = outcome.regressed()
    if not keys:
        return []
    base_run, cand_run = outcome.comparison["baseline_run_id"], outcome.comparison["candidate_run_id"]
    baseline = {str(c.get("case_key")): c for c in outcome.baseline_cases}
    candidate = {str(c.get("case_key")): c for c in outcome.candidate_cases}
    lines = [f"Regressed cases ({len(keys)}):", "", "| Case | Baseline | Candidate | |", "|---|---|---|---|"]
    for key in keys[:MAX_CASE_ROWS]:
        b, c = baseline.get(key), candidate.get(key)
        b_cell = _link(_verdict(b), f"runs/{base_run}/cases/{b['id']}/", web_url) if b else "—"
        c_cell = _link(_verdict(c), f"runs/{cand_run}/cases/{c['id']}/", web_url) if c else "—"
        both = _link("side by side", f"runs/{cand_run}/cases/{c['id']}/vs/{b['id']}/", web_url) if b and c else ""
        lines.append(f"| `{_cell(key)}` | {b_cell} | {c_cell} | {both} |")
    if len(keys) > MAX_CASE_ROWS:
        lines.append(f"\n… and {len(keys) - MAX_CASE_ROWS} more on the comparison page.")
    return [*lines, ""]


def _conditions(outcome: GateOutcome) -> list[str]:
    conditions = outcome.gate.get("triggered_conditions") or []
    if not conditions:
        return []
    lines = ["Triggered conditions:"]
    for condition in conditions:
        cases = condition.get("cases")
        suffix = f" — cases: {', '.join(f'`{_cell(c)}`' for c in cases[:20])}" if isinstance(cases, list) and cases else ""
        lines.append(f"- `{_cell(condition.get('condition'))}`: {condition.get('outcome')}{suffix}")
    return [*lines, ""]


def markdown_summary(outcome: GateOutcome, *, web_url: WebUrl | None = None, title: str = "AgentClash release gate") -> str:
    """``web_url(path)`` turns a workspace path (``runs/42/``) into a link; without it, no links."""
    gate, comparison = outcome.gate, outcome.comparison
    base_run, cand_run, comparison_id = comparison["baseline_run_id"], comparison["candidate_run_id"], comparison["id"]
    base_lane = _lane_label(outcome.baseline_run, comparison["baseline_lane_id"])
    cand_lane = _lane_label(outcome.candidate_run, comparison["candidate_lane_id"])
    policy_key = _cell((gate.get("policy") or {}).get("policy_key", "default"))
    lines = [
        f"## {title}: {BADGES.get(outcome.verdict, outcome.verdict)}",
        "",
        f"**{_cell(gate.get('reason_code'))}** — {_cell(gate.get('summary'))}",
        "",
        f"Baseline run {_link(f'#{base_run}', f'runs/{base_run}/', web_url)} ({base_lane}) · "
        f"candidate run {_link(f'#{cand_run}', f'runs/{cand_run}/', web_url)} ({cand_lane}) · "
        f"{_link(f'comparison #{comparison_id}', f'comparisons/{comparison_id}/', web_url)} ({comparison.get('status')}) · "
        f"policy `{policy_key}`",
        "",
    ]
    lines += _trials(outcome) + _dimensions(outcome) + _regressed(outcome, web_url) + _conditions(outcome)
    return "\n".join(lines) + "\n"


def _trials(outcome: GateOutcome) -> list[str]:
    """The trials behind the verdict, as the server words them (``trials_text``), in a code block."""
    text = outcome.gate.get("trials_text") or []
    return ["```", *(str(line) for line in text), "```", ""] if text else []


def append_step_summary(markdown: str) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY`` when GitHub Actions set it."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(markdown)
