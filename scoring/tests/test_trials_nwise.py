"""N-wise judges with repeated trials: each trial's lanes are ranked together (docs/runs.md, "Trials")."""

from __future__ import annotations

import json

import pytest

from runs.models import CaseRun
from runs.services import run_create
from runs.tests.factories import make_deployment, publish
from scoring.tests.test_scoring_judges import NWISE_PACK, judged  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


def test_n_wise_judges_rank_the_lanes_of_each_trial(workspace, admin, judged, tasks, monkeypatch):  # noqa: F811
    calls: list[int] = []
    version = publish(workspace, admin, NWISE_PACK)
    vague = make_deployment(workspace, name="vague", script=[{"text": "Somewhere in Europe."}])
    vague.runtime_profile.execution_target = "prompt_eval"
    vague.runtime_profile.save(update_fields=["execution_target"])
    run = run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[judged[1].pk, vague.pk], repeats=2)
    good_lane, vague_lane = run.lanes.order_by("lane_index")
    reply = json.dumps({"score": 4, "pass": True, "ranking": [str(good_lane.pk), str(vague_lane.pk)], "confidence": "high"})
    run.judge_snapshot["gpt-judge-a"]["deployment"]["deployment_config"] = {"judge_responses": reply}
    run.save(update_fields=["judge_snapshot"])

    from engine.scoring.judges import run_nwise_judge as original
    from scoring.services import scorecards

    def counting(spec, key, candidates, *args, **kwargs):
        calls.append(len(candidates))
        return original(spec, key, candidates, *args, **kwargs)

    monkeypatch.setattr(scorecards, "run_nwise_judge", counting)
    tasks.drain()
    run.refresh_from_db()
    assert run.score_status == "scored"
    assert calls == [2, 2]  # one ranking per trial, of the two lanes' runs of that trial
    for case_run in CaseRun.objects.filter(run=run).select_related("case_score"):
        head = {j["judge_key"]: j for j in case_run.case_score.document["llm_judge_details"]}["head_to_head"]
        assert head["normalized_score"] == (1.0 if case_run.lane_id == good_lane.pk else 0.0), case_run.trial
