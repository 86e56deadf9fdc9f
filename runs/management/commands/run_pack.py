"""``manage.py run_pack --workspace SLUG --pack-version ID --deployment NAME [--follow]``."""

from __future__ import annotations

import sys
import time

from django.core.management.base import BaseCommand, CommandError

from core.errors import NotFound
from infrastructure.models import AgentDeployment
from packs.models import PackVersion
from runs import lookups, services
from runs.models import RunStatus
from workspaces.models import Workspace


class Command(BaseCommand):
    help = "Start a run of a pack version with one or more deployments; --follow shows progress until it ends."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="Workspace slug")
        parser.add_argument("--pack-version", required=True, type=int, help="Pack version id")
        parser.add_argument("--deployment", action="append", required=True, help="Deployment name (repeat for several lanes)")
        parser.add_argument("--input-set", type=int, default=None, help="Input set id (needed when the version has several)")
        parser.add_argument("--name", default="", help="Run name")
        parser.add_argument(
            "--judge",
            action="append",
            default=[],
            metavar="MODEL=DEPLOYMENT",
            help="The deployment (by name) that answers an LLM judge model of the pack, as written in the pack (repeat per model)",
        )
        parser.add_argument(
            "--allow-missing-judges",
            action="store_true",
            help="Start even if a judge model has no deployment (its dimensions are unavailable)",
        )
        parser.add_argument("--simulator", default=None, help="Deployment (by name) that plays llm user-simulator phases")
        parser.add_argument(
            "--race-context", action="store_true", help="Peer standings: tell each agent how the other lanes stand (two or more lanes)"
        )
        parser.add_argument(
            "--repeats", default="1", help="Trials of every case in every lane: 1 to 50, or auto (with --max-repeats) — docs/runs.md"
        )
        parser.add_argument("--max-repeats", default=None, help="With --repeats auto: the most trials of one case (2 to 50)")
        parser.add_argument("--follow", action="store_true", help="Show progress until the run ends")
        parser.add_argument("--poll", type=float, default=1.0, help=argparse_hidden())

    def handle(self, *args, **options):
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"No workspace {options['workspace']!r}.")
        version = PackVersion.objects.filter(workspace=workspace, pk=options["pack_version"]).first()
        if version is None:
            raise CommandError(f"No pack version {options['pack_version']} in {workspace.slug}.")
        ids = [_deployment_id(workspace, name) for name in options["deployment"]]
        judges = {}
        for pair in options["judge"]:
            model, separator, name = pair.rpartition("=")
            if not separator or not model.strip() or not name.strip():
                raise CommandError(f"--judge takes MODEL=DEPLOYMENT (got {pair!r}).")
            judges[model.strip()] = _deployment_id(workspace, name.strip())
        simulator = _deployment_id(workspace, options["simulator"]) if options["simulator"] else None
        try:
            run = services.run_create(
                workspace=workspace,
                user=None,
                pack_version=version,
                deployment_ids=ids,
                input_set_id=options["input_set"],
                name=options["name"],
                judge_deployments=judges,
                allow_missing_judges=options["allow_missing_judges"],
                simulator_deployment_id=simulator,
                race_context=options["race_context"],
                repeats=options["repeats"],
                max_repeats=options["max_repeats"],
            )
        except services.RunCreateError as exc:
            raise CommandError(exc.text) from None
        except NotFound as exc:  # an inactive deployment
            raise CommandError(exc.message) from None
        self.stdout.write(str(run.pk))
        if not options["follow"]:
            return
        while True:
            run.refresh_from_db()
            counts = lookups.case_counts(run=run)
            done = counts["completed"] + counts["failed"] + counts["cancelled"]
            width = 30
            filled = int(width * done / counts["total"]) if counts["total"] else 0
            noun = "case runs" if run.repeats > 1 or run.is_adaptive else "cases"
            self.stdout.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{counts['total']} {noun} · {run.status}   ", ending="")
            self.stdout.flush()
            if run.is_terminal:
                break
            time.sleep(options["poll"])
        self.stdout.write("")
        if run.failure_reason:
            self.stderr.write(run.failure_reason)
        if run.status != RunStatus.COMPLETED:
            sys.exit(1)


def _deployment_id(workspace: Workspace, name: str) -> int:
    deployment = AgentDeployment.objects.filter(workspace=workspace, name=name).first()
    if deployment is None:
        raise CommandError(f"No deployment named {name!r} in {workspace.slug}.")
    return deployment.pk


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS
