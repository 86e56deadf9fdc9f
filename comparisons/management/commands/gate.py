"""Evaluate a release gate between two runs from the command line (CI-friendly exit codes).

Exit codes: 0 pass, 1 fail, 2 warn, 3 insufficient evidence, 4 usage error (missing run,
unreadable or invalid policy, runs that cannot be paired).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandParser

from comparisons.services import comparison_create, gate_evaluate, policy_from
from core.errors import DomainError
from engine.scoring.documents import GateResultDocument
from engine.scoring.gates import statistics_lines
from runs.models import Lane, Run
from workspaces.models import Workspace

EXIT_CODES = {"pass": 0, "fail": 1, "warn": 2, "insufficient_evidence": 3}
USAGE_ERROR = 4
_POSITION = re.compile(r"^\s*(?:lane\s*|#)?(\d+)\s*$", re.IGNORECASE)


class Command(BaseCommand):
    help = "Compare a candidate run with a baseline run and print the release-gate verdict."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        original = parser.error

        def error(message: str) -> None:
            # argparse exits 2 on bad arguments, which would read as "warn"; make it 4.
            if parser.called_from_command_line:
                parser.print_usage(sys.stderr)
                sys.stderr.write(f"error: {message}\n")
                sys.exit(USAGE_ERROR)
            original(message)

        parser.error = error  # type: ignore[method-assign]
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--baseline", type=int, required=True, help="Baseline run id")
        parser.add_argument("--candidate", type=int, required=True, help="Candidate run id")
        parser.add_argument("--policy", help="Policy file (JSON or YAML); default policy when omitted")
        parser.add_argument("--workspace", help="Workspace slug (default: the baseline run's workspace)")
        for side in ("baseline", "candidate"):
            parser.add_argument(
                f"--{side}-lane",
                metavar="LANE",
                help=f"{side.capitalize()} lane (runs with several lanes): its label or deployment name, its number "
                "as the comparison page shows it (lane 2, #2 or 2), or its id",
            )

    def _fail(self, message: str) -> NoReturn:
        self.stderr.write(f"error: {message}")
        sys.exit(USAGE_ERROR)

    def _lane(self, run: Run, choice: str | None, side: str) -> Lane | None:
        """A lane as the user sees it: label or deployment name, then id, then 1-based number."""
        if not choice:
            return None
        lanes = list(run.lanes.order_by("lane_index"))
        names = ", ".join(f"{position}: {lane.label!r}" for position, lane in enumerate(lanes, 1)) or "none"
        found = [lane for lane in lanes if choice.strip() in (lane.label, lane.deployment_name)]
        number = _POSITION.match(choice)
        if not found and number:
            found = [lane for lane in lanes if choice.strip().isdigit() and lane.pk == int(number.group(1))]
            position = int(number.group(1))
            if 1 <= position <= len(lanes) and found and found[0] != lanes[position - 1]:
                self._fail(
                    f"--{side}-lane: {choice.strip()!r} is both the id of lane {found[0].label!r} and the number of lane "
                    f"{lanes[position - 1].label!r}: write 'lane {position}' for the number, or the lane's name"
                )
            if not found and 1 <= position <= len(lanes):
                found = [lanes[position - 1]]
        if len(found) != 1:
            what = f"{len(found)} lanes named {choice!r}: give its number instead" if found else f"no lane {choice!r}"
            self._fail(f"--{side}-lane: {side} run {run.pk} has {what} (lanes: {names})")
        return found[0]

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = None
        if options.get("workspace"):
            workspace = Workspace.objects.filter(slug=options["workspace"]).first()
            if workspace is None:
                self._fail(f"no workspace {options['workspace']!r}")
        runs: dict[str, Run] = {}
        for side in ("baseline", "candidate"):
            qs = Run.objects.select_related("workspace")
            if workspace is not None:
                qs = qs.filter(workspace=workspace)
            run = qs.filter(pk=options[side]).first()
            if run is None:
                self._fail(f"no {side} run {options[side]}" + (f" in workspace {workspace.slug!r}" if workspace else ""))
            runs[side] = run
        workspace = workspace or runs["baseline"].workspace
        if runs["candidate"].workspace_id != workspace.pk:
            self._fail("the baseline and candidate runs belong to different workspaces")
        policy_text = None
        if options.get("policy"):
            try:
                policy_text = Path(options["policy"]).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                self._fail(f"cannot read policy file {options['policy']}: {exc}")
        lanes = {side: self._lane(runs[side], options.get(f"{side}_lane"), side) for side in ("baseline", "candidate")}
        try:
            policy_from(policy_text=policy_text)  # validate before writing anything
            comparison = comparison_create(
                workspace=workspace,
                user=None,
                baseline_run=runs["baseline"],
                candidate_run=runs["candidate"],
                baseline_lane=lanes["baseline"],
                candidate_lane=lanes["candidate"],
            )
            gate = gate_evaluate(comparison=comparison, user=None, policy_text=policy_text)
        except DomainError as exc:
            self._fail(f"{exc.field}: {exc.message}" if exc.field else exc.message)
        self.stdout.write(f"verdict: {gate.verdict}")
        self.stdout.write(f"reason: {gate.reason_code} — {gate.summary}")
        self.stdout.write(
            f"comparison: #{comparison.pk} ({comparison.status}{', ' + comparison.reason_code if comparison.reason_code else ''})"
        )
        details: GateResultDocument | None = gate.details or None
        for condition in (details.get("triggered_conditions") if details else None) or []:
            self.stdout.write(f"  - {condition.get('condition')}: {condition.get('outcome')}")
        for line in statistics_lines(details.get("statistics") if details else None):
            self.stdout.write(line)
        results = (details.get("dimension_results") if details else None) or {}
        for key in sorted(results):
            result = results[key]
            delta = result.get("delta")
            self.stdout.write(f"  {key}: {result.get('outcome')}" + (f" (delta {delta:+.4f})" if isinstance(delta, (int, float)) else ""))
        self.stdout.flush()
        sys.exit(EXIT_CODES.get(gate.verdict, USAGE_ERROR))
