"""``--judge-deployment`` and ``--allow-missing-judges`` on ``run`` and ``ci run`` (and their ``ci.yaml``
keys), against a live server: a pack with LLM judges (three judge models) runs from the CLI."""

from __future__ import annotations

import json

import pytest
from agentclash_cli.ci_config import load_config

from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile
from infrastructure.services import deployment_create
from packs.services import pack_publish
from runs.models import Run
from scoring.tests.test_scoring_judges import JUDGED_PACK

from .test_run_gate_ci import write_manifest

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

AGENT = "Paris agent"
VERDICT = '{"score": 5, "pass": true, "confidence": "high", "reasoning": "names Paris"}'


@pytest.fixture
def judged(demo, workspace, admin):
    """The judged pack (LLM judge models gpt-judge-a, -b, -c), an agent answering "Paris", two judges."""
    version = pack_publish(workspace=workspace, user=admin, source=JUDGED_PACK)
    account = ProviderAccount.objects.get(workspace=workspace, provider_key="scripted")
    profile = RuntimeProfile.objects.get(workspace=workspace, name="Prompt eval (demo)")

    def make(name: str, model: str, config: dict) -> AgentDeployment:
        return deployment_create(
            workspace=workspace,
            name=name,
            provider_account=account,
            model=model,
            runtime_profile=profile,
            deployment_config=config,
            actor=admin,
        )

    make(AGENT, "scripted-agent", {"script": {"default": [{"text": "Paris"}]}})
    make("House judge", "judge-model", {"judge_responses": VERDICT})
    make("Judge B", "judge-model", {"judge_responses": VERDICT})
    return version


def judges_of(run: Run) -> dict[str, tuple[str | None, str | None]]:
    return {model: ((s or {}).get("deployment", {}).get("name"), (s or {}).get("source")) for model, s in run.judge_snapshot.items()}


def test_a_run_without_a_judge_is_refused_in_the_clis_words(cli, judged):
    result = cli("run", "--pack", "judged", "--deployment", AGENT)
    assert result.code == 4, result
    assert (
        "no judge deployment for gpt-judge-a, gpt-judge-b, gpt-judge-c (LLM judge models of the pack): choose one with "
        "--judge-deployment MODEL=NAME (or NAME for every judge model), set a workspace default judge, or use --allow-missing-judges"
    ) in result.err
    assert "judge_deployments" not in result.err and "allow_missing_judges" not in result.err
    assert not Run.objects.exists()


def test_judge_choices_reach_the_run(cli, judged, captured_tasks):
    result = cli(
        "run", "--pack", "judged", "--deployment", AGENT, "--judge-deployment", "gpt-judge-b=Judge B", "--judge-deployment", "House judge",
        "--format", "json",
    )  # fmt: skip
    assert result.code == 0, result
    run = Run.objects.get(pk=json.loads(result.out)["id"])
    assert judges_of(run) == {
        "gpt-judge-a": ("House judge", "chosen"),
        "gpt-judge-b": ("Judge B", "chosen"),
        "gpt-judge-c": ("House judge", "chosen"),
    }
    assert [j["deployment_name"] for j in json.loads(result.out)["judges"]] == ["House judge", "Judge B", "House judge"]


def test_allow_missing_judges_starts_the_run_without_them(cli, judged, captured_tasks):
    result = cli("run", "--pack", "judged", "--deployment", AGENT, "--allow-missing-judges")
    assert result.code == 0, result
    assert Run.objects.get(pk=int(result.out)).judge_snapshot == dict.fromkeys(["gpt-judge-a", "gpt-judge-b", "gpt-judge-c"])


@pytest.mark.parametrize(
    ("pack", "choices", "message"),
    [
        ("judged", ["House judge", "Judge B"], "--judge-deployment: give MODEL=NAME for each judge model when you choose several judges"),
        ("judged", ["gpt-4.1=House judge"], "--judge-deployment: 'gpt-4.1' is not an LLM judge model of pack judged v1 (its judge models: "
                                           "gpt-judge-a, gpt-judge-b, gpt-judge-c)"),
        ("judged", ["gpt-judge-a=Nobody"], "--judge-deployment: no deployment named 'Nobody' in 'acme'"),
        ("judged", ["gpt-judge-a=House judge", "gpt-judge-a=Judge B"], "--judge-deployment: gpt-judge-a is chosen twice"),
        ("demo-prompt-eval", ["House judge"], "--judge-deployment: pack demo-prompt-eval v1 has no LLM judges"),
    ],
)  # fmt: skip
def test_judge_choices_that_do_not_fit_the_pack_are_usage_errors(cli, judged, pack, choices, message):
    deployment = AGENT if pack == "judged" else "Good agent (prompt eval)"
    result = cli("run", "--pack", pack, "--deployment", deployment, *[arg for c in choices for arg in ("--judge-deployment", c)])
    assert result.code == 4, result
    assert message in result.err
    assert not Run.objects.exists()


def test_a_judged_run_follows_to_its_scores(cli, judged, worker_queue):
    result = cli("run", "--pack", "judged", "--deployment", AGENT, "--judge-deployment", "House judge", "--follow", "--poll", "0.2")
    assert result.code == 0, result
    run = Run.objects.get(pk=int(result.out))
    case = run.case_runs.select_related("case_score").get()
    assert case.passed is True
    judged_quality = case.case_score.document["dimensions"]["quality"]
    assert judged_quality["state"] == "available", "the chosen judge answered"
    assert result.err.endswith(
        f"{AGENT}     1/1  1.000     1  winner\nwinner: {AGENT} (single lane)\n{AGENT}: pass rate 100 % (1 trial: no uncertainty estimate)\n"
    )


def test_ci_yaml_judge_keys_and_flags(cli, judged, tmp_path, captured_tasks):
    evaluation = {"pack": "judged", "judge_deployments": {"gpt-judge-a": "House judge"}}
    manifest = write_manifest(tmp_path, evaluation=evaluation, candidate={"deployment": AGENT}, baseline={"deployment": AGENT})
    refused = cli("ci", "run", "--config", str(manifest))
    assert refused.code == 4, refused
    assert "no judge deployment for gpt-judge-b, gpt-judge-c" in refused.err
    assert "choose one with evaluation.judge_deployments in ci.yaml (or --judge-deployment) MODEL=NAME" in refused.err
    assert "evaluation.allow_missing_judges: true in ci.yaml (or --allow-missing-judges)" in refused.err
    assert not Run.objects.exists()

    bad = write_manifest(tmp_path, evaluation={"pack": "judged", "allow_missing_judges": "yes"})
    assert "evaluation.allow_missing_judges must be true or false" in cli("ci", "validate", "--config", str(bad)).err
    bad = write_manifest(tmp_path, evaluation={"pack": "judged", "judge_deployments": "House judge"})
    assert "evaluation.judge_deployments must be a list" in cli("ci", "validate", "--config", str(bad)).err


def test_ci_run_passes_the_judges_to_both_runs(cli, judged, tmp_path, worker_queue):
    evaluation = {"pack": "judged", "judge_deployments": {"gpt-judge-a": "Judge B"}}
    manifest = write_manifest(tmp_path, evaluation=evaluation, candidate={"deployment": AGENT}, baseline={"deployment": AGENT}, gate={})
    flags = ["--judge-deployment", "gpt-judge-b=Judge B", "--judge-deployment", "House judge"]
    result = cli("ci", "run", "--config", str(manifest), *flags, "--poll", "0.2")
    assert result.code == 0, result
    expected = {"gpt-judge-a": ("House judge", "chosen"), "gpt-judge-b": ("Judge B", "chosen"), "gpt-judge-c": ("House judge", "chosen")}
    assert [judges_of(run) for run in Run.objects.order_by("pk")] == [expected, expected], "the flags replace the manifest's choices"


def test_ci_yaml_judge_keys_are_read(tmp_path):
    evaluation = {"pack": "judged", "judge_deployments": {"gpt-judge-a": "House judge"}, "allow_missing_judges": True}
    config = load_config(write_manifest(tmp_path, evaluation=evaluation))
    assert (config.judge_deployments, config.allow_missing_judges) == (["gpt-judge-a=House judge"], True)
    listed = load_config(
        write_manifest(tmp_path, evaluation={"pack": "judged", "judge_deployments": ["House judge", "gpt-judge-b=Judge B"]})
    )
    assert (listed.judge_deployments, listed.allow_missing_judges) == (["House judge", "gpt-judge-b=Judge B"], False)


def test_ci_run_allow_missing_judges_flag_starts_both_runs_without_them(cli, judged, tmp_path, worker_queue):
    evaluation = {"pack": "judged", "judge_deployments": {"gpt-judge-a": "House judge"}}
    manifest = write_manifest(tmp_path, evaluation=evaluation, candidate={"deployment": AGENT}, baseline={"deployment": AGENT}, gate={})
    result = cli("ci", "run", "--config", str(manifest), "--allow-missing-judges", "--poll", "0.2")
    assert result.code == json.loads((tmp_path / "out" / "result.json").read_text())["exit_code"], result
    expected = {"gpt-judge-a": ("House judge", "chosen"), "gpt-judge-b": (None, None), "gpt-judge-c": (None, None)}
    assert [judges_of(run) for run in Run.objects.order_by("pk")] == [expected, expected]
