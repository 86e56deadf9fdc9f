"""LLM judges through the Django scoring pipeline, offline: judges are scripted deployments."""

from __future__ import annotations

import pytest

from runs.models import CaseRun
from runs.services import run_create
from runs.tests.factories import make_deployment, publish
from scoring import judges as scoring_judges
from secrets_app.services import secret_set

pytestmark = pytest.mark.django_db

JUDGED_PACK = """pack:
  slug: judged
  name: Judged answers
  family: testing
version:
  number: 1
  execution_mode: prompt_eval
  evaluation_spec:
    name: judged-v1
    version_number: 1
    judge_mode: hybrid
    validators:
      - key: mentions_paris
        type: contains
        target: final_output
        expected_from: "literal:Paris"
    llm_judges:
      - key: helpfulness
        mode: rubric
        model: gpt-judge-a
        samples: 1
        rubric: Score how helpful the answer is, from 1 (useless) to 5 (perfect).
        context_from: [final_output]
      - key: is_french_capital
        mode: assertion
        models: [gpt-judge-a, gpt-judge-b, gpt-judge-c]
        samples: 1
        assertion: The answer names the capital of France.
        context_from: [final_output]
        consensus:
          aggregation: majority_vote
    scorecard:
      judge_limits:
        max_samples_per_judge: 1
      dimensions:
        - key: correctness
          source: validators
          validators: [mentions_paris]
        - key: quality
          source: llm_judge
          judge_key: helpfulness
challenges:
  - key: capital
    title: Capital
    category: qa
    difficulty: easy
    instructions: What is the capital of France?
input_sets:
  - key: default
    name: Default
    cases:
      - challenge_key: capital
        case_key: only
        payload: {}
"""


def _judge(workspace, model: str, reply: str):
    deployment = make_deployment(workspace, name=f"judge {model}", script=[])
    deployment.model = model
    deployment.deployment_config = {"judge_responses": reply}
    deployment.save(update_fields=["model", "deployment_config"])
    return deployment


@pytest.fixture
def judged(workspace, admin):
    version = publish(workspace, admin, JUDGED_PACK)
    agent = make_deployment(workspace, name="answerer", script=[{"text": "Paris, and the token is tok-SECRET-123."}])
    agent.runtime_profile.execution_target = "prompt_eval"
    agent.runtime_profile.save(update_fields=["execution_target"])
    _judge(workspace, "gpt-judge-a", '{"score": 4, "pass": true, "confidence": "high", "reasoning": "good"}')
    _judge(workspace, "gpt-judge-b", '{"pass": true, "confidence": "high", "reasoning": "yes"}')
    _judge(workspace, "gpt-judge-c", '{"pass": false, "confidence": "low", "reasoning": "no"}')
    secret_set(workspace=workspace, key="TOKEN", value="tok-SECRET-123", actor=admin)
    return version, agent


def test_judges_score_through_the_workspace_deployments_with_consensus(workspace, admin, judged, tasks, monkeypatch):
    prompts: list[str] = []
    real_create = scoring_judges.create_provider  # type: ignore[attr-defined]  # the name the module uses

    def recording_create(*args, **kwargs):
        provider = real_create(*args, **kwargs)
        real_complete = provider.complete

        def complete(request):
            if request.metadata.get("purpose") == "judge":
                prompts.extend(m.content for m in request.messages)
            return real_complete(request)

        provider.complete = complete  # type: ignore[method-assign]
        return provider

    monkeypatch.setattr(scoring_judges, "create_provider", recording_create)
    version, agent = judged
    run = run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[agent.pk], name="judged")
    tasks.drain()

    case_run = CaseRun.objects.select_related("case_score").get(run=run)
    assert case_run.final_output.startswith("Paris")
    judges = {j["judge_key"]: j for j in case_run.case_score.document["llm_judge_details"]}
    # rubric: 4 on a 1..5 scale → 0.75
    assert judges["helpfulness"]["normalized_score"] == pytest.approx(0.75)
    # assertion: two of three judge models say yes → majority vote passes
    assert judges["is_french_capital"]["normalized_score"] == 1.0
    assert judges["is_french_capital"]["payload"]["model_scores"] == {"gpt-judge-a": 1.0, "gpt-judge-b": 1.0, "gpt-judge-c": 0.0}
    # four judge calls went out (1 rubric + 3 assertion models), none with the secret in it
    assert len(prompts) >= 4
    assert all("tok-SECRET-123" not in p for p in prompts)
    assert any("[redacted]" in p for p in prompts)


NWISE_PACK = (
    JUDGED_PACK.replace("slug: judged", "slug: ranked")
    .replace(
        """      - key: helpfulness
        mode: rubric""",
        """      - key: head_to_head
        mode: n_wise
        model: gpt-judge-a
        samples: 1
        prompt: Which answer names the capital of France most clearly?
        context_from: [final_output]
      - key: helpfulness
        mode: rubric""",
    )
    .replace(
        """        - key: quality
          source: llm_judge
          judge_key: helpfulness""",
        """        - key: quality
          source: llm_judge
          judge_key: helpfulness
        - key: ranking
          source: llm_judge
          judge_key: head_to_head""",
    )
)


def ranked_nwise_run(workspace, admin, good):
    """A run of ``NWISE_PACK`` with ``good`` and a vague prompt-eval agent, whose n-wise judge ranks
    the good lane first. Returns the run and its two lanes (good, vague)."""
    import json

    version = publish(workspace, admin, NWISE_PACK)
    vague = make_deployment(workspace, name="vague", script=[{"text": "Somewhere in Europe."}])
    vague.runtime_profile.execution_target = "prompt_eval"
    vague.runtime_profile.save(update_fields=["execution_target"])
    run = run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[good.pk, vague.pk], name="ranked")
    good_lane, vague_lane = run.lanes.order_by("lane_index")
    # The judge model is a scripted deployment; its one reply ranks the good lane first. The reply
    # needs the lane ids, known only now, so it goes into the judge snapshot the run froze.
    reply = json.dumps({"score": 4, "pass": True, "ranking": [str(good_lane.pk), str(vague_lane.pk)], "confidence": "high"})
    run.judge_snapshot["gpt-judge-a"]["deployment"]["deployment_config"] = {"judge_responses": reply}
    run.save(update_fields=["judge_snapshot"])
    return run, good_lane, vague_lane


def test_n_wise_judges_rank_the_lanes_of_a_run_against_each_other(workspace, admin, judged, tasks):
    run, good_lane, vague_lane = ranked_nwise_run(workspace, admin, judged[1])
    tasks.drain()

    run.refresh_from_db()
    assert run.score_status == "scored"
    details = {
        cr.lane_id: {j["judge_key"]: j for j in cr.case_score.document["llm_judge_details"]}
        for cr in CaseRun.objects.filter(run=run).select_related("case_score")
    }
    assert details[good_lane.pk]["head_to_head"]["normalized_score"] == 1.0
    assert details[vague_lane.pk]["head_to_head"]["normalized_score"] == 0.0
    # the per-case judges kept their first results (no second call needed)
    assert details[good_lane.pk]["helpfulness"]["normalized_score"] == pytest.approx(0.75)
    assert run.scorecard.winner_lane_id == good_lane.pk
