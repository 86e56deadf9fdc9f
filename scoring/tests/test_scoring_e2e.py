"""End to end: the demo packs run by the demo's scripted "good" and "sloppy" agents.

Runs are created and executed through the runs services (tasks drained in-process by
runs/tests/fixtures.py), scored by scoring, compared and gated by comparisons.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from comparisons.services import comparison_create, gate_evaluate
from conftest import require_or_skip
from infrastructure.demo import DEPLOYMENTS, PROFILES
from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile
from packs.demo_seed import seed as packs_seed
from packs.models import PackVersion
from runs.models import CaseRun, Run, ScoreStatus
from runs.services import run_create
from scoring.presenters import failed_validators

pytestmark = pytest.mark.django_db


@dataclasses.dataclass
class Demo:
    workspace: object
    user: object


@pytest.fixture
def demo(tasks, workspace, admin):
    """The demo packs and the demo's scripted agents (same scripts as infrastructure/demo.py).

    Built here rather than with ``demo_seed()`` so this test only depends on the demo data, not
    on the seeding code path.
    """
    packs_seed(workspace=workspace, user=admin)
    account = ProviderAccount.objects.create(workspace=workspace, name="Scripted (demo)", provider_key="scripted")
    profiles = {spec["name"]: RuntimeProfile.objects.create(workspace=workspace, **spec) for spec in PROFILES}
    for name, profile_name, config, prompt in DEPLOYMENTS:
        AgentDeployment.objects.create(
            workspace=workspace,
            name=name,
            provider_account=account,
            model="scripted-demo",
            runtime_profile=profiles[profile_name],
            system_prompt=prompt,
            deployment_config=config,
        )
    return Demo(workspace=workspace, user=admin)


def _run(tasks, demo, pack_slug: str, deployment_name: str) -> Run:
    version = PackVersion.objects.get(workspace=demo.workspace, pack__slug=pack_slug)
    deployment = AgentDeployment.objects.get(workspace=demo.workspace, name=deployment_name)
    run = run_create(
        workspace=demo.workspace,
        user=demo.user,
        pack_version=version,
        deployment_ids=[deployment.pk],
        name=f"{deployment_name} on {pack_slug}",
    )
    tasks.drain()
    run.refresh_from_db()
    assert run.status == "completed", (run.status, run.failure_reason)
    assert run.score_status == ScoreStatus.SCORED
    return run


def _verdicts(run: Run) -> dict[str, bool | None]:
    return dict(CaseRun.objects.filter(run=run).values_list("case_key", "passed"))


def _failed(run: Run) -> dict[str, list[str]]:
    return {
        c.case_key: sorted(failed_validators(c.case_score.document)) for c in CaseRun.objects.filter(run=run).select_related("case_score")
    }


GATED_DIMENSIONS = ("correctness", "reliability", "latency", "cost")  # what the default policy requires


def _assert_same_agent_scores_identically(comparison) -> None:
    """Two runs of one scripted agent: every required dimension is available and unchanged."""
    assert comparison.status == "comparable", comparison.summary.get("reason")
    deltas = comparison.summary["dimension_deltas"]
    for key in GATED_DIMENSIONS:
        assert deltas[key]["state"] == "available", (key, deltas[key])
        assert deltas[key]["delta"] == 0, (key, deltas[key])
    assert deltas["latency"]["candidate_value"] == deltas["cost"]["candidate_value"] == 1.0
    assert comparison.summary["metric_deltas"]["cost_usd"]["delta"] == 0
    assert comparison.summary["evidence_quality"]["missing_fields"] == []


def _assert_default_gate(good, good_again, sloppy, workspace) -> None:
    """The default policy (every declared dimension, case regressions): sloppy fails, good passes."""
    same = comparison_create(workspace=workspace, user=None, baseline_run=good, candidate_run=good_again)
    _assert_same_agent_scores_identically(same)
    verdict = gate_evaluate(comparison=same, user=None)
    assert (verdict.verdict, verdict.reason_code) == ("pass", "within_thresholds")

    regression = comparison_create(workspace=workspace, user=None, baseline_run=good, candidate_run=sloppy)
    assert regression.status == "comparable", regression.summary.get("reason")
    deltas = regression.summary["dimension_deltas"]
    assert all(deltas[key]["state"] == "available" for key in GATED_DIMENSIONS)
    assert deltas["correctness"]["delta"] < -0.05
    verdict = gate_evaluate(comparison=regression, user=None)
    # The first failed condition in sort order names the verdict; the correctness drop is one of them.
    assert (verdict.verdict, verdict.reason_code) == ("fail", "case_regression")
    assert "threshold_fail_correctness" in {c["condition"] for c in verdict.details["triggered_conditions"]}


def test_prompt_eval_demo_good_and_sloppy_agents(demo, tasks):
    good = _run(tasks, demo, "demo-prompt-eval", "Good agent (prompt eval)")
    good_again = _run(tasks, demo, "demo-prompt-eval", "Good agent (prompt eval)")
    sloppy = _run(tasks, demo, "demo-prompt-eval", "Sloppy agent (prompt eval)")

    assert _failed(good) == {"small": [], "negative": [], "large": []}
    assert _failed(sloppy) == {
        "small": [],
        "negative": ["digits_only", "sum_exact", "sum_normalized"],
        "large": ["sum_contained", "sum_exact", "sum_normalized"],
    }
    # correctness is a gate (every sum validator must pass): a wrong or wordy sum fails the case.
    assert _verdicts(good) == {"small": True, "negative": True, "large": True}
    assert _verdicts(sloppy) == {"small": True, "negative": False, "large": False}
    assert _verdicts(good) != _verdicts(sloppy)
    assert {c.case_key: c.score for c in CaseRun.objects.filter(run=good)} == {"small": 1.0, "negative": 1.0, "large": 1.0}
    # large: correctness 0 (weight 0.6), format 1 (0.1), reliability/latency/cost 1 (0.1 each).
    assert CaseRun.objects.get(run=sloppy, case_key="large").score == pytest.approx(0.4)
    # negative: correctness 1/3 (only sum_contained), format 0.
    assert CaseRun.objects.get(run=sloppy, case_key="negative").score == pytest.approx(0.5)

    _assert_default_gate(good, good_again, sloppy, demo.workspace)


def test_file_fixes_demo_good_and_sloppy_agents(demo, tasks):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    good = _run(tasks, demo, "demo-file-fixes", "Good agent")
    good_again = _run(tasks, demo, "demo-file-fixes", "Good agent")
    sloppy = _run(tasks, demo, "demo-file-fixes", "Sloppy agent")

    assert _verdicts(good) == {"port-typo": True, "debug-typo": True, "name-case": True}
    assert _failed(good) == {"port-typo": [], "debug-typo": [], "name-case": []}
    # correctness (file fixed) and reporting (answer exactly "fixed <key>") are both gates.
    # port-typo: wrong value written and a loose answer; debug-typo: right fix, vague answer;
    # name-case: file never written.
    assert _verdicts(sloppy) == {"port-typo": False, "debug-typo": False, "name-case": False}
    assert _failed(sloppy) == {
        "port-typo": ["answer_exact", "answer_shape", "file_fixed"],
        "debug-typo": ["answer_exact", "answer_mentions_key", "answer_shape"],
        "name-case": ["file_fixed"],
    }
    assert _verdicts(good) != _verdicts(sloppy)
    # debug-typo scores 0.8 overall (everything but reporting), yet the reporting gate fails it.
    assert CaseRun.objects.get(run=sloppy, case_key="debug-typo").score == pytest.approx(0.8)

    _assert_default_gate(good, good_again, sloppy, demo.workspace)
