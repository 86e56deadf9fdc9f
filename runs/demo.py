"""Demo runs for ``seed_demo`` (workspaces/demo.py ``DEMO_RUN_SEEDERS``): one run with repeated trials.

The stochastic "Steady" and "Flaky" scripted agents (infrastructure/demo.py) race on the
prompt-eval demo pack with 5 trials of every case: the matrix shows ``k/5 passed`` cells, the
replay moves between trials, and the scorecard has pass rates between 0 and 1 (docs/runs.md,
"Trials"). Created once, by name; it runs when the workers do.
"""

from __future__ import annotations

from typing import Any

from infrastructure.demo import FLAKY_NAME, STEADY_NAME
from infrastructure.models import AgentDeployment, LifecycleStatus
from packs.models import PackVersion
from runs.models import Run
from runs.services import run_create
from workspaces.models import Workspace

TRIALS_RUN_NAME = "Trials demo: Steady vs Flaky, 5 trials per case"
TRIALS_PACK = "demo-prompt-eval"
TRIALS_REPEATS = 5


def seed(*, workspace: Workspace, user: Any) -> list[str]:
    if Run.objects.filter(workspace=workspace, name=TRIALS_RUN_NAME).exists():
        return []
    version = (
        PackVersion.objects.filter(workspace=workspace, pack__slug=TRIALS_PACK, lifecycle_status=PackVersion.Lifecycle.RUNNABLE)
        .order_by("-number")
        .first()
    )
    agents = {
        d.name: d.pk
        for d in AgentDeployment.objects.filter(workspace=workspace, name__in=[STEADY_NAME, FLAKY_NAME], status=LifecycleStatus.ACTIVE)
    }
    if version is None or len(agents) != 2:
        return [f"Skipped the demo run with trials: it needs the {TRIALS_PACK} pack and the {STEADY_NAME} and {FLAKY_NAME} deployments."]
    run = run_create(
        workspace=workspace,
        user=user,
        pack_version=version,
        deployment_ids=[agents[STEADY_NAME], agents[FLAKY_NAME]],
        name=TRIALS_RUN_NAME,
        repeats=TRIALS_REPEATS,
    )
    return [f"Started the demo run “{run.name}” ({TRIALS_REPEATS} trials of every case; it runs when the workers do)."]
