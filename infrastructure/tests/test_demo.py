from __future__ import annotations

import pytest
import yaml

from bundle import validate_composed_tool  # noqa: F401 - the demo packs' tools are validated there
from infrastructure.demo import FLAKY_MIX, GOOD_SCRIPT, SLOPPY_SCRIPT, STEADY_MIX, seed
from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile
from infrastructure.scripted_config import scripted_config_errors


def _pack(name: str) -> dict:
    with open(f"packs/demo/{name}") as fh:
        return yaml.safe_load(fh)


def _case_keys(pack: dict) -> set[str]:
    return {case["case_key"] for input_set in pack["input_sets"] for case in input_set["cases"]}


def _expected(pack: dict, case_key: str, key: str) -> str:
    case = next(c for s in pack["input_sets"] for c in s["cases"] if c["case_key"] == case_key)
    return next(e["value"] for e in case["expectations"] if e["key"] == key)


@pytest.mark.django_db
def test_it_seeds_a_scripted_account_two_profiles_and_six_deployments_once(workspace, admin):
    notes = seed(workspace=workspace, user=admin)
    assert len(notes) == 9
    assert seed(workspace=workspace, user=admin) == []
    assert ProviderAccount.objects.get(workspace=workspace).provider_key == "scripted"
    assert set(RuntimeProfile.objects.values_list("execution_target", flat=True)) == {"native", "prompt_eval"}
    by_target: dict[str, list[str]] = {}
    for deployment in AgentDeployment.objects.select_related("runtime_profile"):
        by_target.setdefault(deployment.runtime_profile.execution_target, []).append(deployment.name)
    assert sorted(by_target["native"]) == ["Good agent", "Sloppy agent"]
    assert sorted(by_target["prompt_eval"]) == [
        "Flaky agent (trials)", "Good agent (prompt eval)", "Sloppy agent (prompt eval)", "Steady agent (trials)"
    ]  # fmt: skip


def test_the_stochastic_agents_mix_the_good_and_sloppy_scripts():
    for mix, good in ((STEADY_MIX, 0.9), (FLAKY_MIX, 0.6)):
        assert scripted_config_errors(mix) == []
        weights = [entry["weight"] for entry in mix["script_mix"]]
        assert weights[0] == good and abs(sum(weights) - 1) < 1e-9
        assert mix["script_mix"][0]["script"] == GOOD_SCRIPT["script"] and mix["script_mix"][1]["script"] == SLOPPY_SCRIPT["script"]


def test_the_scripts_are_valid_and_cover_every_demo_case():
    cases = _case_keys(_pack("demo-file-fixes.yaml")) | _case_keys(_pack("demo-prompt-eval.yaml"))
    for script in (GOOD_SCRIPT, SLOPPY_SCRIPT):
        assert scripted_config_errors(script) == []
        assert set(script["script"]["cases"]) == cases


def test_the_good_agent_gives_the_expected_answers_and_the_sloppy_one_does_not():
    files, sums = _pack("demo-file-fixes.yaml"), _pack("demo-prompt-eval.yaml")
    tools = {tool["name"] for tool in files["tools"]["custom"]} | {"write_file", "read_file"}
    good, sloppy = GOOD_SCRIPT["script"]["cases"], SLOPPY_SCRIPT["script"]["cases"]
    wrong = 0
    for case_key in _case_keys(files):
        steps = good[case_key]
        assert all(step["tool"] in tools for step in steps if "tool" in step)
        assert steps[-1] == {"submit": _expected(files, case_key, "answer")}
        written = next(step["args"]["content"] for step in steps if step.get("tool") == "write_file")
        assert _expected(files, case_key, "fixed_member") in written
        sloppy_steps = sloppy[case_key]
        sloppy_written = next((s["args"]["content"] for s in sloppy_steps if s.get("tool") == "write_file"), "")
        wrong += (
            sloppy_steps[-1] != {"submit": _expected(files, case_key, "answer")}
            or _expected(files, case_key, "fixed_member") not in sloppy_written
        )
    for case_key in _case_keys(sums):
        assert good[case_key] == [{"text": _expected(sums, case_key, "sum")}]
        wrong += sloppy[case_key] != [{"text": _expected(sums, case_key, "sum")}]
    assert wrong >= 4
