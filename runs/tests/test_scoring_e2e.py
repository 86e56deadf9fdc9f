"""End to end: the demo packs run by the demo's scripted "good" and "sloppy" agents.

Runs are created and executed through the runs services (tasks drained in-process by
runs/tests/conftest.py), scored by runs.scoring, compared and gated by runs.comparisons.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from conftest import require_or_skip
from packs.demo_seed import seed as packs_seed
from packs.models import PackVersion
from runs.comparisons.scorecards import failed_validators
from runs.comparisons.services import comparison_create, gate_evaluate
from runs.models import CaseRun, Run, ScoreStatus
from runs.services import run_create
from workspaces.infrastructure.demo import DEPLOYMENTS, PROFILES
from workspaces.models import AgentDeployment, ProviderAccount, RuntimeProfile

pytestmark = pytest.mark.django_db


@dataclasses.dataclass
class Demo:
    workspace: object
    user: object


@pytest.fixture
def demo(tasks, workspace, admin):
    """The demo packs and the demo's scripted agents (same scripts as workspaces/infrastructure/demo.py).

    Built here rather than with ``demo_seed()`` so this test only depends on the demo data, not
    on the seeding code path.
    """
    packs_seed(workspace=workspace, user=admin)
    account = ProviderAccount.objects.create(workspace=workspace, name="Scripted (demo)", provider_key="scripted")
    profiles = {spec["name"]: RuntimeProfile.objects.create(workspace=workspace, **spec) for spec in PROFILES}
    for name, profile_name, config, prompt in DEPLOYMENTS:
        AgentDeployment.objects.create(workspace=workspace, name=name, provider_account=account, model="scripted-demo",
                                       runtime_profile=profiles[profile_name], system_prompt=prompt,
                                       deployment_config=config)
    return Demo(workspace=workspace, user=admin)


def _run(tasks, demo, pack_slug: str, deployment_name: str) -> Run:
    version = PackVersion.objects.get(workspace=demo.workspace, pack__slug=pack_slug)
    deployment = AgentDeployment.objects.get(workspace=demo.workspace, name=deployment_name)
    run = run_create(workspace=demo.workspace, user=demo.user, pack_version=version, deployment_ids=[deployment.pk],
                     name=f"{deployment_name} on {pack_slug}")
    tasks.drain()
    run.refresh_from_db()
    assert run.status == "completed", (run.status, run.failure_reason)
    assert run.score_status == ScoreStatus.SCORED
    return run


def _verdicts(run: Run) -> dict[str, bool | None]:
    return dict(CaseRun.objects.filter(run=run).values_list("case_key", "passed"))


def _failed(run: Run) -> dict[str, list[str]]:
    return {c.case_key: sorted(failed_validators(c.case_score.document))
            for c in CaseRun.objects.filter(run=run).select_related("case_score")}


# The demo prompt-eval spec declares correctness and format (not reliability, latency or cost,
# which the default policy requires), so the gates here name the pack's own dimensions.
PROMPT_EVAL_POLICY = {
    "policy_key": "demo-prompt-eval",
    "required_dimensions": ["correctness", "format"],
    "dimensions": {"correctness": {"warn_delta": 0.02, "fail_delta": 0.05}, "format": {"warn_delta": 0.02, "fail_delta": 0.05}},
}


def test_prompt_eval_demo_good_and_sloppy_agents(demo, tasks):
    good = _run(tasks, demo, "demo-prompt-eval", "Good agent (prompt eval)")
    good_again = _run(tasks, demo, "demo-prompt-eval", "Good agent (prompt eval)")
    sloppy = _run(tasks, demo, "demo-prompt-eval", "Sloppy agent (prompt eval)")

    # The pack's weighted scorecard has no gate or threshold, so every case "passes" overall;
    # the verdicts that differ are the validators'.
    assert _failed(good) == {"small": [], "negative": [], "large": []}
    assert _failed(sloppy) == {"small": [], "negative": ["digits_only", "sum_exact", "sum_normalized"],
                               "large": ["sum_contained", "sum_exact", "sum_normalized"]}
    assert {c.case_key: c.score for c in CaseRun.objects.filter(run=good)} == {"small": 1.0, "negative": 1.0, "large": 1.0}
    assert CaseRun.objects.get(run=sloppy, case_key="large").score == pytest.approx(0.2)

    workspace = demo.workspace
    regression = comparison_create(workspace=workspace, user=None, baseline_run=good, candidate_run=sloppy)
    assert regression.status == "comparable", regression.summary.get("reason")
    assert regression.summary["dimension_deltas"]["correctness"]["delta"] < -0.05
    assert gate_evaluate(comparison=regression, user=None, policy=PROMPT_EVAL_POLICY).verdict == "fail"

    same = comparison_create(workspace=workspace, user=None, baseline_run=good, candidate_run=good_again)
    assert gate_evaluate(comparison=same, user=None, policy=PROMPT_EVAL_POLICY).verdict == "pass"

    # The default policy needs reliability/latency/cost, which this pack does not score.
    default = gate_evaluate(comparison=same, user=None)
    assert (default.verdict, default.reason_code) == ("insufficient_evidence", "required_dimension_unavailable")


def test_file_fixes_demo_good_and_sloppy_agents(demo, tasks):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    good = _run(tasks, demo, "demo-file-fixes", "Good agent")
    good_again = _run(tasks, demo, "demo-file-fixes", "Good agent")
    sloppy = _run(tasks, demo, "demo-file-fixes", "Sloppy agent")

    assert set(_verdicts(good).values()) == {True}
    assert _failed(good) == {"port-typo": [], "debug-typo": [], "name-case": []}
    # port-typo: wrong value written and a loose answer; name-case: file never written (the
    # correctness gate fails); debug-typo: right fix, vague answer — 0.7 overall meets the pack's
    # pass_threshold of 0.7 (inclusive), so it passes with its reporting validators failed.
    assert _verdicts(sloppy) == {"port-typo": False, "debug-typo": True, "name-case": False}
    assert _failed(sloppy) == {
        "port-typo": ["answer_exact", "answer_shape", "file_fixed"],
        "debug-typo": ["answer_exact", "answer_mentions_key", "answer_shape"],
        "name-case": ["file_fixed"],
    }

    version = good.pack_version
    dimensions = [d["key"] if isinstance(d, dict) else d for d in version.manifest["evaluation_spec"]["scorecard"]["dimensions"]]
    policy = {"policy_key": "demo-file-fixes", "required_dimensions": dimensions,
              "dimensions": {key: {"warn_delta": 0.02, "fail_delta": 0.05} for key in dimensions}}
    workspace = demo.workspace
    regression = comparison_create(workspace=workspace, user=None, baseline_run=good, candidate_run=sloppy)
    assert gate_evaluate(comparison=regression, user=None, policy=policy).verdict == "fail"
    same = comparison_create(workspace=workspace, user=None, baseline_run=good, candidate_run=good_again)
    assert gate_evaluate(comparison=same, user=None, policy=policy).verdict == "pass"
