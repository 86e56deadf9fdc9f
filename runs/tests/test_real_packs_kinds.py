"""Issue 22, item 10: the real packs raced by agents (and harnesses) of the kinds a reviewer meets.

Besides each pack's good and bad agent (test_real_packs.py), every pack is raced by:

- a **silent** agent, which answers every turn with nothing and never acts: no tool call, no
  `submit`, no file (in a prompt_eval pack, an empty answer). A careful reviewer says:
  it failed — the gate good → silent is ``fail``, it never ranks first, and it never scores more
  than the bad agent (which at least tried);

and the packs with LLM judges or a user simulator by the harness failing:

- a **broken judge**, which answers every judge call with text that is not a verdict: the
  reviewer says nothing is known about the judged cases — never ``pass``; the gate good → good
  (the same agent, judged by the broken judge) is ``insufficient_evidence``;
- a **broken user simulator**, which answers with an empty message: the harness's failure, not the
  agent's — ``insufficient_evidence``, and the failures page says ``run_error``.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from comparisons.services import comparison_create, gate_evaluate
from conftest import require_or_skip
from regression.failures.selectors import failure_review
from runs.models import Lane
from runs.tests.real_packs.harness import (
    AGENT_MODEL,
    SIMULATOR_MODEL,
    PackAgents,
    _deployment,
    all_pack_agents,
    gate_summary,
    run_summary,
    setup_pack,
    start_run,
)
from scoring.models import CaseScore, LaneScorecard, RunScorecard

pytestmark = pytest.mark.django_db

PACKS = all_pack_agents()
# An empty reply: in a native pack a turn without a tool call (an agent error), in a prompt_eval
# pack an empty answer.
SILENT_SCRIPT = {"default": [{"text": ""}]}


def _needs_sandbox(spec: PackAgents) -> None:
    if spec.data.get("needs_sandbox", True):
        require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")


def _lane_score(lane: Lane) -> float:
    card = LaneScorecard.objects.get(lane=lane)
    return float(card.document.get("overall_score") or 0.0)


def _gate(workspace: Any, run_a: Any, lane_a: Lane, run_b: Any, lane_b: Lane) -> Any:
    comparison = comparison_create(
        workspace=workspace, user=None, baseline_run=run_a, candidate_run=run_b, baseline_lane=lane_a, candidate_lane=lane_b
    )
    return gate_evaluate(comparison=comparison, user=None)


@pytest.mark.parametrize("spec", [pytest.param(spec, id=spec.slug) for spec in PACKS])
def test_a_silent_agent_fails_every_pack_and_never_outscores_the_bad_one(spec, tasks, workspace, admin):
    _needs_sandbox(spec)
    setup = setup_pack(spec, workspace=workspace, user=admin)
    silent = _deployment(
        workspace, name=f"silent agent ({spec.slug})", model=AGENT_MODEL, config={"script": SILENT_SCRIPT}, execution_target=spec.mode
    )
    input_set = setup.input_sets[0]
    run = start_run(
        tasks, workspace=workspace, user=admin, version=setup.version, deployments=[setup.good, setup.bad, silent],
        input_set=input_set, name=f"{spec.slug}: good vs bad vs silent", extras=setup.extras,
    )  # fmt: skip
    good, bad, quiet = (Lane.objects.get(run=run, deployment=d) for d in (setup.good, setup.bad, silent))
    gate = _gate(workspace, run, good, run, quiet)
    described = json.dumps({"gate": gate_summary(gate), "run": run_summary(run)}, indent=1, default=str)
    assert gate.verdict == "fail", described
    assert _lane_score(quiet) <= _lane_score(bad), described
    ranking = RunScorecard.objects.get(run=run).document
    assert str(ranking.get("winner_lane_id")) != str(quiet.pk), described
    # The silent agent's cases are the agent's failures, never "insufficient evidence".
    card = LaneScorecard.objects.get(lane=quiet).document
    assert card.get("validity") == "valid", described
    assert card.get("passed") is False, described


JUDGED = [spec for spec in PACKS if spec.data.get("judges")]
BROKEN_JUDGE = {"replies": [{"purpose": "judge", "reply": "I am not able to give a verdict today."}]}


@pytest.mark.parametrize("spec", [pytest.param(spec, id=spec.slug) for spec in JUDGED])
def test_a_broken_judge_leaves_the_judged_cases_unscored_never_passed(spec, tasks, workspace, admin):
    _needs_sandbox(spec)
    setup = setup_pack(spec, workspace=workspace, user=admin)
    input_set = setup.input_sets[0]
    common = {"workspace": workspace, "user": admin, "version": setup.version, "input_set": input_set}
    judged = start_run(tasks, deployments=[setup.good], name=f"{spec.slug}: good", extras=setup.extras, **common)
    broken = {
        model: _deployment(workspace, name=f"broken judge {model}", model=model, config=BROKEN_JUDGE).pk
        for model in setup.extras["judge_deployments"]
    }
    unjudged = start_run(
        tasks, deployments=[setup.good], name=f"{spec.slug}: good, broken judge", extras={**setup.extras, "judge_deployments": broken},
        **common,
    )  # fmt: skip
    a, b = Lane.objects.get(run=judged), Lane.objects.get(run=unjudged)
    gate = _gate(workspace, judged, a, unjudged, b)
    described = json.dumps({"gate": gate_summary(gate), "run": run_summary(unjudged)}, indent=1, default=str)
    assert gate.verdict == "insufficient_evidence", described
    card = LaneScorecard.objects.get(lane=b).document
    assert card.get("validity") == "degraded", described
    # No case passed on the evidence that happened to be there while a judge that could decide it
    # was broken: with every broken dimension at 0 a passed case still passes.
    scorecard = (setup.version.manifest.get("evaluation_spec") or {}).get("scorecard") or {}
    threshold = scorecard.get("pass_threshold")
    for score in CaseScore.objects.filter(case_run__lane=b):
        doc = score.document
        dims = [d for d in doc["dimensions"].values() if d["state"] != "not_applicable"]
        missing = [d for d in dims if d["state"] == "unavailable"]
        if not missing or doc["passed"] is not True:
            continue
        assert not any(d["gate"] or d["pass_threshold"] is not None for d in missing), described
        if threshold is not None:
            worst = sum(d["weight"] * (d["score"] or 0.0) for d in dims) / sum(d["weight"] for d in dims)
            assert worst >= threshold, (worst, described)


MULTI_TURN = [spec for spec in PACKS if spec.data.get("simulator")]


@pytest.mark.parametrize("spec", [pytest.param(spec, id=spec.slug) for spec in MULTI_TURN])
def test_a_broken_user_simulator_is_the_harnesss_failure(spec, tasks, workspace, admin):
    """The llm phase runs after the agent's first mismatch: the lanes whose conversation reaches it
    lose their simulator; the others never needed it and keep their verdict."""
    _needs_sandbox(spec)
    setup = setup_pack(spec, workspace=workspace, user=admin)
    input_set = setup.input_sets[0]
    common = {"workspace": workspace, "user": admin, "version": setup.version, "input_set": input_set}
    agents = [setup.good, setup.bad]
    baseline = start_run(tasks, deployments=agents, name=f"{spec.slug}: simulator", extras=setup.extras, **common)
    mute = _deployment(
        workspace, name="mute simulator", model=SIMULATOR_MODEL, config={"replies": [{"purpose": "user_simulator", "reply": ""}]}
    )
    candidate = start_run(
        tasks, deployments=agents, name=f"{spec.slug}: mute simulator",
        extras={**setup.extras, "simulator_deployment_id": mute.pk}, **common,
    )  # fmt: skip
    reached = 0
    for agent in agents:
        a, b = Lane.objects.get(run=baseline, deployment=agent), Lane.objects.get(run=candidate, deployment=agent)
        gate = _gate(workspace, baseline, a, candidate, b)
        described = json.dumps({"gate": gate_summary(gate), "run": run_summary(candidate)}, indent=1, default=str)
        if not b.case_runs.filter(stop_reason="simulator_error").exists():
            assert gate.verdict == "pass", described  # this agent never needed the simulator
            continue
        reached += 1
        assert gate.verdict == "insufficient_evidence", described
        card = LaneScorecard.objects.get(lane=b).document
        assert card.get("passed") is None and card.get("validity") == "degraded", described
    assert reached, "no lane reached the simulator's llm phase"
    classes = {cluster.failure_class for cluster in failure_review(run=candidate).all_clusters}
    assert "run_error" in classes, classes
