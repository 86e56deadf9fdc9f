"""Issue 15: a run resolves its LLM judges and its user simulator at creation, and freezes them.

Judge models resolve to deployments chosen in the request, else of exactly that model, else the
workspace's default judge — never to a deployment racing in the run, never at scoring time.
"""

from __future__ import annotations

import copy
import io
import shutil

import pytest
from django.core.management import CommandError, call_command

from conftest import require_or_skip
from engine.events import TURN_USER_SIMULATED
from infrastructure.models import AgentDeployment
from runs.models import CaseRun, Lane, Run, RunEvent
from runs.tests.factories import make_deployment, publish
from runs.tests.real_packs.harness import REPO, agent_deployment, judge_deployments, load, simulator_deployment
from scoring.tests.test_scoring_judges import JUDGED_PACK

pytestmark = pytest.mark.django_db

BASE = "/api/v1/workspaces/acme/runs"
JUDGE_MODELS = ["gpt-judge-a", "gpt-judge-b", "gpt-judge-c"]
VERDICT = '{"score": 4, "pass": true, "confidence": "high", "reasoning": "ok"}'


def prompt_eval_agent(workspace, name="answerer", model="scripted-1"):
    agent = make_deployment(workspace, name=name, script=[{"text": "Paris"}])
    agent.model = model
    agent.save(update_fields=["model"])
    agent.runtime_profile.execution_target = "prompt_eval"
    agent.runtime_profile.save(update_fields=["execution_target"])
    return agent


def judge(workspace, name, model="judge-model", **extra):
    deployment = make_deployment(workspace, name=name, script=[], **extra)
    deployment.model = model
    deployment.deployment_config = {"judge_responses": VERDICT}
    deployment.save(update_fields=["model", "deployment_config"])
    return deployment


@pytest.fixture
def judged_version(workspace, admin):
    return publish(workspace, admin, JUDGED_PACK)


def post(client, version, agent, **body):
    return client.post(BASE, {"pack_version_id": version.pk, "deployment_ids": [agent.pk], **body}, format="json")


# -- judges over the API --------------------------------------------------------------------------


def test_an_unresolved_judge_model_refuses_the_run_naming_the_models(api_client_for, member, workspace, judged_version):
    agent = prompt_eval_agent(workspace)
    chosen = judge(workspace, "judge a")
    response = post(api_client_for(member), judged_version, agent, judge_deployments={"gpt-judge-a": chosen.pk})
    assert response.status_code == 400
    body = response.json()
    assert body["error"]["code"] == "judge_unresolved"
    assert "gpt-judge-b, gpt-judge-c" in body["error"]["message"]
    assert body["models"] == ["gpt-judge-b", "gpt-judge-c"]
    assert "judge_deployments" in body["error"]["fields"]
    assert not Run.objects.exists()


def test_allow_missing_judges_runs_with_those_judge_dimensions_unavailable(api_client_for, member, workspace, judged_version, tasks):
    agent = prompt_eval_agent(workspace)
    response = post(api_client_for(member), judged_version, agent, allow_missing_judges=True)
    assert response.status_code == 201, response.json()
    assert [(j["model"], j["deployment_id"]) for j in response.json()["judges"]] == [(m, None) for m in JUDGE_MODELS]
    run = Run.objects.get(pk=response.json()["id"])
    assert run.judge_snapshot == dict.fromkeys(JUDGE_MODELS)
    tasks.drain()

    document = CaseRun.objects.select_related("case_score").get(run=run).case_score.document
    judges = {j["judge_key"]: j for j in document["llm_judge_details"]}
    assert judges["helpfulness"]["state"] == "unavailable"
    assert judges["helpfulness"]["reason"] == "no judge configured"
    assert document["dimensions"]["quality"]["state"] == "unavailable"
    assert "no judge configured" in document["dimensions"]["quality"]["reason"]
    # never the agent's own deployment: no judge call was made at all
    assert not any(call for j in judges.values() for call in j["payload"]["calls"] if call.get("response_text"))


def test_judge_deployments_of_another_workspace_are_refused_like_unknown_ids(
    api_client_for, member, workspace, other_workspace, judged_version
):
    agent = prompt_eval_agent(workspace)
    theirs = judge(other_workspace, "their judge")
    client = api_client_for(member)
    foreign = post(client, judged_version, agent, judge_deployments={"gpt-judge-a": theirs.pk}, allow_missing_judges=True)
    unknown = post(client, judged_version, agent, judge_deployments={"gpt-judge-a": 999_999}, allow_missing_judges=True)
    assert foreign.status_code == unknown.status_code == 400
    assert foreign.json()["error"]["message"] == unknown.json()["error"]["message"].replace("999999", str(theirs.pk))
    assert "their judge" not in foreign.content.decode()
    foreign_sim = post(client, judged_version, agent, simulator_deployment_id=theirs.pk, allow_missing_judges=True)
    assert foreign_sim.status_code == 201  # not a multi-turn pack: the simulator is not needed, nothing is looked up


def test_a_model_the_pack_does_not_name_is_refused(api_client_for, member, workspace, judged_version):
    agent = prompt_eval_agent(workspace)
    response = post(api_client_for(member), judged_version, agent, judge_deployments={"gpt-4.1": judge(workspace, "j").pk})
    assert response.status_code == 400
    assert "gpt-4.1 is not a judge model of this pack" in response.json()["error"]["message"]


def test_unnamed_models_resolve_to_the_same_model_then_the_workspace_default(api_client_for, member, workspace, judged_version):
    agent = prompt_eval_agent(workspace)
    same = judge(workspace, "judge a exact", model="gpt-judge-a")
    default = judge(workspace, "house judge", is_default_judge=True)
    chosen = judge(workspace, "judge c chosen")
    response = post(api_client_for(member), judged_version, agent, judge_deployments={"gpt-judge-c": chosen.pk})
    assert response.status_code == 201, response.json()
    rows = {j["model"]: (j["deployment_name"], j["source"], j["provider_key"]) for j in response.json()["judges"]}
    assert rows == {
        "gpt-judge-a": (same.name, "model_match", "scripted"),
        "gpt-judge-b": (default.name, "workspace_default", "scripted"),
        "gpt-judge-c": (chosen.name, "chosen", "scripted"),
    }


def test_a_deployment_racing_in_the_run_is_never_picked_as_its_judge_implicitly(api_client_for, member, workspace, judged_version):
    agent = prompt_eval_agent(workspace, model="gpt-judge-a")  # the agent runs on a judge model
    judge(workspace, "b", model="gpt-judge-b")
    judge(workspace, "c", model="gpt-judge-c")
    response = post(api_client_for(member), judged_version, agent)
    assert response.status_code == 400
    assert response.json()["models"] == ["gpt-judge-a"]


def test_judges_are_frozen_at_creation_and_calls_go_to_the_chosen_deployment(
    api_client_for, member, workspace, admin, judged_version, tasks, client_for
):
    agent = prompt_eval_agent(workspace)
    judges = {model: judge(workspace, f"judge {model}") for model in JUDGE_MODELS}
    response = post(api_client_for(member), judged_version, agent, judge_deployments={m: d.pk for m, d in judges.items()})
    assert response.status_code == 201, response.json()
    run = Run.objects.get(pk=response.json()["id"])
    # later edits don't rewrite the run: the snapshot answers
    AgentDeployment.objects.filter(pk=judges["gpt-judge-a"].pk).update(deployment_config={"judge_responses": "garbage"})
    tasks.drain()

    document = CaseRun.objects.select_related("case_score").get(run=run).case_score.document
    helpfulness = next(j for j in document["llm_judge_details"] if j["judge_key"] == "helpfulness")
    assert helpfulness["normalized_score"] == pytest.approx(0.75)
    call = helpfulness["payload"]["calls"][0]
    assert (call["model"], call["provider_key"], call["called_model"], call["deployment"]) == (
        "gpt-judge-a",
        "scripted",
        "judge-model",
        "judge gpt-judge-a",
    )
    page = client_for(admin).get(f"/w/acme/runs/{run.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="run-evaluators"' in html and "judge gpt-judge-a" in html and "chosen for this run" in html


# -- the user simulator ---------------------------------------------------------------------------


def _multi_turn(workspace, admin, slug):
    spec = load(REPO / "runs/tests/real_packs/agents" / f"{slug}.yaml")
    version = publish(workspace, admin, spec.pack_path.read_text())
    judges = judge_deployments(workspace, version.manifest, spec)
    return spec, version, judges


def test_a_pack_with_llm_phases_needs_a_simulator_deployment(api_client_for, member, workspace, admin):
    spec, version, judges = _multi_turn(workspace, admin, "multi-turn-refund-recovery")
    good = agent_deployment(workspace, spec, "good")
    response = post(api_client_for(member), version, good, judge_deployments={m: d.pk for m, d in judges.items()})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "simulator_required"
    assert not Run.objects.exists()


def test_real_multi_turn_packs_run_with_an_llm_simulator_and_the_mismatch_reaches_recovery(api_client_for, member, workspace, admin, tasks):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    spec, version, judges = _multi_turn(workspace, admin, "multi-turn-refund-recovery")
    good, bad = agent_deployment(workspace, spec, "good"), agent_deployment(workspace, spec, "bad")
    simulator = simulator_deployment(workspace, spec)
    response = api_client_for(member).post(
        BASE,
        {
            "pack_version_id": version.pk,
            "deployment_ids": [good.pk, bad.pk],
            "judge_deployments": {m: d.pk for m, d in judges.items()},
            "simulator_deployment_id": simulator.pk,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["simulator"]["deployment_name"] == simulator.name
    tasks.drain()
    run = Run.objects.get(pk=response.json()["id"])
    assert run.status == "completed"
    good_lane, bad_lane = Lane.objects.get(run=run, deployment=good), Lane.objects.get(run=run, deployment=bad)
    # the llm phase ran for both lanes, on the simulator deployment
    for lane in (good_lane, bad_lane):
        simulated = RunEvent.objects.filter(lane=lane, event_type=TURN_USER_SIMULATED)
        assert simulated.exists() and simulated.first().payload["provider_key"] == "scripted"
    good_doc = CaseRun.objects.get(lane=good_lane).case_score.document
    bad_doc = CaseRun.objects.get(lane=bad_lane).case_score.document
    # both missed the first turn; the good agent changed course, the bad one repeated itself
    assert good_doc["dimensions"]["recovery"]["score"] == 1.0
    assert bad_doc["dimensions"]["recovery"]["score"] == 0.0
    assert good_doc["dimensions"]["mismatch_recovery_judge"]["score"] == 1.0
    assert bad_doc["dimensions"]["mismatch_recovery_judge"]["score"] == 0.0
    assert run.scorecard.winner_lane_id == good_lane.pk


def test_a_judge_of_a_mismatch_that_never_happened_is_not_applicable(api_client_for, member, workspace, admin, tasks):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    spec, version, judges = _multi_turn(workspace, admin, "customer-support-policy")
    good = agent_deployment(workspace, spec, "good")
    body = {"judge_deployments": {m: d.pk for m, d in judges.items()}, "simulator_deployment_id": simulator_deployment(workspace, spec).pk}
    response = post(api_client_for(member), version, good, **body)
    assert response.status_code == 201, response.json()
    tasks.drain()
    document = CaseRun.objects.get(run_id=response.json()["id"]).case_score.document
    assert document["dimensions"]["de_escalation"]["state"] == "not_applicable"
    assert (document["validity"], document["passed"]) == ("valid", True)


def _with_phases(version, *phases):
    manifest = copy.deepcopy(version.manifest)
    simulator = manifest["input_sets"][0]["cases"][0]["user_simulator"]
    simulator["phases"] = [simulator["phases"][0], *phases]
    type(version).objects.filter(pk=version.pk).update(manifest=manifest)
    version.refresh_from_db()
    return version


def test_a_human_phase_that_can_fire_refuses_the_run_with_a_plain_message(api_client_for, member, workspace, admin):
    spec, version, judges = _multi_turn(workspace, admin, "multi-turn-refund-recovery")
    good = agent_deployment(workspace, spec, "good")
    body = {"judge_deployments": {m: d.pk for m, d in judges.items()}}
    version = _with_phases(version, {"id": "takeover", "actor": "human", "trigger": "on_assistant_mismatch"})
    response = post(api_client_for(member), version, good, **body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "simulator_unsupported"
    assert "'takeover' played by a person" in error["message"] and "unattended" in error["message"]


def test_a_human_phase_behind_a_manual_trigger_does_not_block_the_run(api_client_for, member, workspace, admin):
    spec, version, judges = _multi_turn(workspace, admin, "multi-turn-refund-recovery")
    good = agent_deployment(workspace, spec, "good")
    version = _with_phases(version, {"id": "takeover", "actor": "human", "trigger": "manual"})
    response = post(api_client_for(member), version, good, judge_deployments={m: d.pk for m, d in judges.items()})
    assert response.status_code == 201, response.json()
    assert response.json()["simulator"] is None  # no llm phase left, so no simulator needed


# -- the New run page -----------------------------------------------------------------------------


def _selected(html: str, field: str) -> str | None:
    """The value of the selected option of <select name=field>, if any."""
    start = html.index(f'name="{field}"')
    block = html[start : html.index("</select>", start)]
    marker = block.find(" selected")
    if marker < 0:
        return None
    return block[block.rfind('value="', 0, marker) + 7 : block.index('"', block.rfind('value="', 0, marker) + 7)]


def test_the_page_pre_fills_each_judge_from_the_same_model_then_the_workspace_default(client_for, member, workspace, judged_version):
    same = judge(workspace, "judge a exact", model="gpt-judge-a")
    default = judge(workspace, "house judge", is_default_judge=True)
    response = client_for(member).get(f"/w/acme/runs/new/?pack_version={judged_version.pk}")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="run-judges"' in html and "<code>gpt-judge-b</code>" in html
    assert _selected(html, "judge_0") == str(same.pk)  # gpt-judge-a: same model
    assert _selected(html, "judge_1") == str(default.pk)  # gpt-judge-b: workspace default
    assert "Pre-filled: same model." in html and "Pre-filled: workspace default judge." in html
    assert "<script>" not in html.split('id="run-create-form"')[1] and ' style="' not in html


def test_the_page_starts_a_run_with_the_judges_picked_and_refuses_an_empty_one(client_for, member, workspace, judged_version):
    agent = prompt_eval_agent(workspace)
    judges = [judge(workspace, f"j{i}") for i in range(3)]
    form = {"pack_version_id": judged_version.pk, "deployment_ids": [agent.pk], "judges_for": judged_version.pk}
    picks = {f"judge_{i}": d.pk for i, d in enumerate(judges)}
    refused = client_for(member).post("/w/acme/runs/new/", {**form, **picks, "judge_2": ""})
    assert refused.status_code == 200 and not Run.objects.exists()
    assert "No judge deployment for gpt-judge-c" in refused.content.decode()

    allowed = client_for(member).post("/w/acme/runs/new/", {**form, **picks, "judge_2": "", "allow_missing_judges": "on"})
    assert allowed.status_code == 302
    run = Run.objects.get()
    assert run.judge_snapshot["gpt-judge-c"] is None
    assert run.judge_snapshot["gpt-judge-a"]["deployment"]["name"] == "j0"
    assert run.judge_snapshot["gpt-judge-a"]["source"] == "chosen"


def test_the_page_offers_the_simulator_picker_only_for_packs_with_llm_phases(client_for, member, workspace, admin, judged_version):
    _, version, _ = _multi_turn(workspace, admin, "multi-turn-refund-recovery")
    multi = client_for(member).get(f"/w/acme/runs/new/?pack_version={version.pk}").content.decode()
    single = client_for(member).get(f"/w/acme/runs/new/?pack_version={judged_version.pk}").content.decode()
    assert 'id="run-simulator"' in multi and 'name="simulator_deployment_id"' in multi
    assert 'id="run-simulator"' not in single


def test_the_page_asks_for_the_simulator_when_it_is_missing(client_for, member, workspace, admin):
    spec, version, judges = _multi_turn(workspace, admin, "multi-turn-refund-recovery")
    good = agent_deployment(workspace, spec, "good")
    good.runtime_profile.execution_target = "multi_turn"  # the New run page offers only agents that fit the pack
    good.runtime_profile.save(update_fields=["execution_target"])
    form = {
        "pack_version_id": version.pk,
        "deployment_ids": [good.pk],
        "judges_for": version.pk,
        "judge_0": judges["claude-haiku-4-5-20251001"].pk,
    }
    response = client_for(member).post("/w/acme/runs/new/", form)
    assert response.status_code == 200 and not Run.objects.exists()
    assert "choose the deployment that plays the user" in response.context["form"].errors["simulator_deployment_id"][0]


def test_a_simulator_deployment_of_another_workspace_is_refused_like_an_unknown_id(
    api_client_for, member, workspace, admin, other_workspace
):
    spec, version, judges = _multi_turn(workspace, admin, "multi-turn-refund-recovery")
    good = agent_deployment(workspace, spec, "good")
    theirs = simulator_deployment(other_workspace, spec)
    client = api_client_for(member)
    body = {"judge_deployments": {m: d.pk for m, d in judges.items()}}
    foreign = post(client, version, good, simulator_deployment_id=theirs.pk, **body)
    unknown = post(client, version, good, simulator_deployment_id=999_999, **body)
    assert foreign.status_code == unknown.status_code == 400
    assert foreign.json()["error"]["message"] == unknown.json()["error"]["message"].replace("999999", str(theirs.pk))
    assert theirs.name not in foreign.content.decode()


# -- the run_pack command -------------------------------------------------------------------------


def test_run_pack_takes_judges_by_deployment_name_and_says_which_models_are_unresolved(workspace, judged_version):
    prompt_eval_agent(workspace)
    judge(workspace, "judge a")
    args = ["run_pack", "--workspace", "acme", "--pack-version", str(judged_version.pk), "--deployment", "answerer"]
    with pytest.raises(CommandError, match="No judge deployment for gpt-judge-a, gpt-judge-b, gpt-judge-c"):
        call_command(*args, stdout=io.StringIO())
    call_command(*args, "--judge", "gpt-judge-a=judge a", "--allow-missing-judges", stdout=io.StringIO())
    run = Run.objects.get()
    assert run.judge_snapshot["gpt-judge-a"]["deployment"]["name"] == "judge a"
    assert run.judge_snapshot["gpt-judge-b"] is None


def test_a_field_change_keeps_the_judges_picked_and_a_new_version_refills_them(client_for, member, workspace, judged_version):
    same = judge(workspace, "judge a exact", model="gpt-judge-a")
    other = judge(workspace, "another judge")
    client = client_for(member)
    url = "/w/acme/runs/new/"
    switched = client.get(url, {"pack_version_id": judged_version.pk, "judges_for": "", "judge_0": other.pk}, HTTP_HX_REQUEST="true")
    assert _selected(switched.content.decode(), "judge_0") == str(same.pk)  # the version is new to the form: pre-filled
    kept = client.get(
        url, {"pack_version_id": judged_version.pk, "judges_for": judged_version.pk, "judge_0": other.pk}, HTTP_HX_REQUEST="true"
    )
    assert _selected(kept.content.decode(), "judge_0") == str(other.pk)  # the person's pick stays
