"""Evaluate a release gate between two runs from the command line (CI-friendly exit codes).

Exit codes: 0 pass, 1 fail, 2 warn, 3 insufficient evidence, 4 usage error (missing run,
unreadable or invalid policy, runs that cannot be paired).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandParser

from comparisons.services import comparison_create, gate_evaluate, policy_from
from core.errors import DomainError
from engine.scoring.documents import GateResultDocument
from engine.scoring.gates import statistics_lines
from runs.models import Run
from workspaces.models import Workspace

EXIT_CODES = {"pass": 0, "fail": 1, "warn": 2, "insufficient_evidence": 3}
USAGE_ERROR = 4


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
        parser.add_argument("--baseline-lane", type=int, help="Baseline lane id (for runs with several lanes)")
        parser.add_argument("--candidate-lane", type=int, help="Candidate lane id (for runs with several lanes)")

    def _fail(self, message: str) -> NoReturn:
        self.stderr.write(f"error: {message}")
        sys.exit(USAGE_ERROR)

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
        lanes = {}
        for side in ("baseline", "candidate"):
            lane_id = options.get(f"{side}_lane")
            lanes[side] = runs[side].lanes.filter(pk=lane_id).first() if lane_id else None
            if lane_id and lanes[side] is None:
                self._fail(f"run {runs[side].pk} has no lane {lane_id}")
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
