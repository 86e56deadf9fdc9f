"""Release gates: service, API, page form and the `gate` command's exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.management import call_command

from comparisons.models import GateResult
from comparisons.services import comparison_create, gate_evaluate
from scoring.tests.factories import make_pack_version, make_run

pytestmark = pytest.mark.django_db

GOOD = {"two-plus-two": "4", "three-squared": "9"}
SLOPPY = {"two-plus-two": "5", "three-squared": "9"}
WARN_POLICY = {
    "policy_key": "lenient",
    "required_dimensions": ["correctness"],
    "dimensions": {"correctness": {"warn_delta": 0.1, "fail_delta": 0.9}},
}


@pytest.fixture
def version(workspace):
    return make_pack_version(workspace)


@pytest.fixture
def good(workspace, version):
    return make_run(workspace, pack_version=version, lanes=[GOOD], name="good")


@pytest.fixture
def good_again(workspace, version):
    return make_run(workspace, pack_version=version, lanes=[GOOD], name="good again")


@pytest.fixture
def sloppy(workspace, version):
    return make_run(workspace, pack_version=version, lanes=[SLOPPY], name="sloppy")


def _compare(workspace, user, baseline, candidate):
    return comparison_create(workspace=workspace, user=user, baseline_run=baseline, candidate_run=candidate)


def test_default_policy_fails_a_regression(workspace, admin, good, sloppy):
    gate = gate_evaluate(comparison=_compare(workspace, admin, good, sloppy), user=admin)
    # A case that passed in the baseline fails in the candidate, and correctness dropped.
    assert (gate.verdict, gate.reason_code) == ("fail", "case_regression")
    assert {"case_regression", "threshold_fail_correctness"} <= {c["condition"] for c in gate.details["triggered_conditions"]}
    assert gate.policy_snapshot["policy_key"] == "default" and len(gate.policy_fingerprint) == 64


def test_default_policy_passes_equal_runs(workspace, admin, good, good_again):
    gate = gate_evaluate(comparison=_compare(workspace, admin, good, good_again), user=admin)
    assert (gate.verdict, gate.reason_code) == ("pass", "within_thresholds")


def test_a_custom_yaml_policy_can_warn(workspace, admin, good, sloppy):
    text = "policy_key: lenient\nrequired_dimensions: [correctness]\ndimensions:\n  correctness: {warn_delta: 0.1, fail_delta: 0.9}\n"
    gate = gate_evaluate(comparison=_compare(workspace, admin, good, sloppy), user=admin, policy_text=text)
    assert (gate.verdict, gate.reason_code) == ("warn", "threshold_warn_correctness")


def test_non_comparable_runs_are_insufficient_evidence(workspace, admin, good):
    other = make_run(workspace, lanes=[GOOD])  # another pack version
    gate = gate_evaluate(comparison=_compare(workspace, admin, good, other), user=admin)
    assert (gate.verdict, gate.reason_code) == ("insufficient_evidence", "comparison_not_comparable")


def test_the_same_policy_twice_returns_the_same_gate_row(workspace, admin, good, sloppy):
    comparison = _compare(workspace, admin, good, sloppy)
    assert gate_evaluate(comparison=comparison, user=admin).pk == gate_evaluate(comparison=comparison, user=admin, policy_text="").pk
    gate_evaluate(comparison=comparison, user=admin, policy=WARN_POLICY)
    assert GateResult.objects.filter(comparison=comparison).count() == 2  # history per pair


# -- API ------------------------------------------------------------------------------------------


def _gate_url(workspace, comparison):
    return f"/api/v1/workspaces/{workspace.slug}/comparisons/{comparison.pk}/gate"


def test_gate_api_with_default_policy(workspace, admin, member, good, sloppy, api_client_for):
    comparison = _compare(workspace, admin, good, sloppy)
    response = api_client_for(member).post(_gate_url(workspace, comparison), {}, format="json")
    assert response.status_code == 201
    assert response.json()["verdict"] == "fail"
    assert response.json()["dimension_results"]["correctness"]["outcome"] == "fail"
    again = api_client_for(member).post(_gate_url(workspace, comparison), {}, format="json")
    assert again.status_code == 200 and again.json()["id"] == response.json()["id"]


@pytest.mark.parametrize(
    "policy",
    [
        WARN_POLICY,
        json.dumps(WARN_POLICY),
        "required_dimensions: [correctness]\ndimensions:\n  correctness: {warn_delta: 0.1, fail_delta: 0.9}\n",
    ],
)
def test_gate_api_accepts_a_policy_object_json_or_yaml(workspace, admin, member, good, sloppy, api_client_for, policy):
    comparison = _compare(workspace, admin, good, sloppy)
    response = api_client_for(member).post(_gate_url(workspace, comparison), {"policy": policy}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["verdict"] == "warn"


@pytest.mark.parametrize(
    "policy, needle",
    [
        ({"dimensions": {"correctness": {"warn_delta": 0.5, "fail_delta": 0.1}}}, "warn_delta"),
        ({"surprise": True}, "surprise"),
        ("dimensions: [unclosed", "policy"),
        (["not", "a", "mapping"], "policy"),
    ],
)
def test_gate_api_rejects_a_bad_policy_naming_the_field(workspace, admin, member, good, sloppy, api_client_for, policy, needle):
    comparison = _compare(workspace, admin, good, sloppy)
    response = api_client_for(member).post(_gate_url(workspace, comparison), {"policy": policy}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert "policy" in error["fields"] and needle in error["message"]
    assert not GateResult.objects.exists()


def test_gate_api_personas(workspace, admin, viewer, stranger, good, sloppy, api_client_for):
    comparison = _compare(workspace, admin, good, sloppy)
    assert api_client_for(viewer).post(_gate_url(workspace, comparison), {}, format="json").status_code == 403
    assert api_client_for(stranger).post(_gate_url(workspace, comparison), {}, format="json").status_code == 404
    assert (
        api_client_for(stranger).post(f"/api/v1/workspaces/globex/comparisons/{comparison.pk}/gate", {}, format="json").status_code == 404
    )
    assert not GateResult.objects.exists()
    assert api_client_for(admin).post(_gate_url(workspace, comparison), {}, format="json").status_code == 201


def test_gate_list_api(workspace, admin, viewer, stranger, good, sloppy, api_client_for, django_assert_max_num_queries):
    gate = gate_evaluate(comparison=_compare(workspace, admin, good, sloppy), user=admin)
    client = api_client_for(viewer)
    with django_assert_max_num_queries(4):
        body = client.get(f"/api/v1/workspaces/{workspace.slug}/gates").json()
    assert [row["id"] for row in body["results"]] == [gate.pk]
    assert api_client_for(stranger).get(f"/api/v1/workspaces/{workspace.slug}/gates").status_code == 404
    assert api_client_for(stranger).get("/api/v1/workspaces/globex/gates").json()["results"] == []


# -- pages ----------------------------------------------------------------------------------------


def test_gate_form_evaluates_and_shows_the_verdict(workspace, admin, member, good, sloppy, client_for):
    comparison = _compare(workspace, admin, good, sloppy)
    client = client_for(member)
    response = client.post(f"/w/{workspace.slug}/comparisons/{comparison.pk}/gate/", {"policy": ""})
    assert response.status_code == 302
    html = client.get(response.url).content.decode()
    assert 'Release gate: <span class="badge badge-fail">FAIL</span>' in html
    assert "threshold_fail_correctness" in html


def test_gate_form_shows_policy_errors_next_to_the_field(workspace, admin, member, good, sloppy, client_for):
    comparison = _compare(workspace, admin, good, sloppy)
    response = client_for(member).post(f"/w/{workspace.slug}/comparisons/{comparison.pk}/gate/", {"policy": "policy_version: 0"})
    assert response.status_code == 400
    assert '<small class="error">policy_version must be an integer greater than 0</small>' in response.content.decode()
    assert not GateResult.objects.exists()


def test_gate_form_personas(workspace, admin, viewer, stranger, good, sloppy, client_for):
    comparison = _compare(workspace, admin, good, sloppy)
    assert client_for(viewer).post(f"/w/{workspace.slug}/comparisons/{comparison.pk}/gate/", {}).status_code == 403
    assert client_for(stranger).post(f"/w/{workspace.slug}/comparisons/{comparison.pk}/gate/", {}).status_code == 404
    assert client_for(stranger).post(f"/w/globex/comparisons/{comparison.pk}/gate/", {}).status_code == 404
    assert not GateResult.objects.exists()


def test_gates_page(workspace, admin, viewer, stranger, good, sloppy, client_for, django_assert_max_num_queries):
    gate_evaluate(comparison=_compare(workspace, admin, good, sloppy), user=admin)
    client = client_for(viewer)
    with django_assert_max_num_queries(10):
        response = client.get(f"/w/{workspace.slug}/gates/")
    assert response.status_code == 200 and "case_regression" in response.content.decode()
    assert client_for(stranger).get(f"/w/{workspace.slug}/gates/").status_code == 404


# -- CLI ------------------------------------------------------------------------------------------


def _gate(*args: str) -> int:
    with pytest.raises(SystemExit) as info:
        call_command("gate", *args)
    assert isinstance(info.value.code, int)
    return info.value.code


def test_cli_exit_codes(workspace, good, good_again, sloppy, tmp_path, capsys):
    assert _gate("--baseline", str(good.pk), "--candidate", str(good_again.pk)) == 0
    assert "verdict: pass" in capsys.readouterr().out
    assert _gate("--baseline", str(good.pk), "--candidate", str(sloppy.pk)) == 1
    out = capsys.readouterr().out
    assert "verdict: fail" in out and "threshold_fail_correctness" in out
    policy = tmp_path / "lenient.yaml"
    policy.write_text("required_dimensions: [correctness]\ndimensions:\n  correctness: {warn_delta: 0.1, fail_delta: 0.9}\n")
    assert _gate("--baseline", str(good.pk), "--candidate", str(sloppy.pk), "--policy", str(policy)) == 2
    other = make_run(workspace, lanes=[GOOD])
    assert _gate("--baseline", str(good.pk), "--candidate", str(other.pk), "--workspace", workspace.slug) == 3


def test_cli_usage_errors(workspace, other_workspace, good, sloppy, tmp_path, capsys):
    assert _gate("--baseline", "999999", "--candidate", str(sloppy.pk)) == 4
    assert _gate("--baseline", str(good.pk), "--candidate", str(sloppy.pk), "--policy", str(tmp_path / "missing.yaml")) == 4
    bad = tmp_path / "bad.json"
    bad.write_text('{"policy_version": -1}')
    assert _gate("--baseline", str(good.pk), "--candidate", str(sloppy.pk), "--policy", str(bad)) == 4
    assert _gate("--baseline", str(good.pk), "--candidate", str(sloppy.pk), "--workspace", other_workspace.slug) == 4
    assert _gate("--baseline", str(good.pk), "--candidate", str(sloppy.pk), "--workspace", "nope") == 4
    assert "error:" in capsys.readouterr().err
    assert not GateResult.objects.exists()


def test_cli_lanes_by_label_number_or_id_and_two_packs_are_named_not_several_lanes(workspace, version, good, tmp_path, capsys):
    raced = make_run(workspace, pack_version=version, lanes=[GOOD, SLOPPY], name="raced")
    sloppy_lane = raced.lanes.get(lane_index=1)
    for choice in ("lane-1", "deployment-1", "lane 2", "#2", str(sloppy_lane.pk)):
        assert _gate("--baseline", str(good.pk), "--candidate", str(raced.pk), "--candidate-lane", choice) == 1, choice
        assert "verdict: fail" in capsys.readouterr().out
    assert GateResult.objects.filter(comparison__candidate_lane=sloppy_lane).exists()
    assert _gate("--baseline", str(good.pk), "--candidate", str(raced.pk), "--candidate-lane", "lane 3") == 4
    err = capsys.readouterr().err
    assert f"--candidate-lane: candidate run {raced.pk} has no lane 'lane 3' (lanes: 1: 'lane-0', 2: 'lane-1')" in err

    other = make_run(workspace, lanes=[GOOD, SLOPPY], name="other pack")  # another pack version, two lanes
    assert _gate("--baseline", str(good.pk), "--candidate", str(other.pk)) == 4
    err = capsys.readouterr().err
    pack = other.pack_version.pack.name
    assert f"The baseline run is of {version.pack.name} v1 and the candidate run of {pack} v1" in err
    assert "same pack version" in err and "several lanes" not in err
    # Same pack, lane missing: the lane is the problem and the message says so.
    assert _gate("--baseline", str(good.pk), "--candidate", str(raced.pk)) == 4
    assert "The candidate run has several lanes; pick the candidate lane" in capsys.readouterr().err


def test_cli_refuses_a_bare_number_that_is_one_lanes_id_and_anothers_number():
    """Ids come from the database (PostgreSQL's sequences never restart), so the clash is built here."""
    from comparisons.management.commands.gate import Command

    lanes: list[Any] = [
        SimpleNamespace(pk=2, label="lane-0", deployment_name="d0"),
        SimpleNamespace(pk=9, label="lane-1", deployment_name="d1"),
    ]
    run: Any = SimpleNamespace(pk=5, lanes=SimpleNamespace(order_by=lambda *fields: lanes))
    command = Command(stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(SystemExit) as exited:
        command._lane(run, "2", "candidate")
    assert exited.value.code == 4
    assert "'2' is both the id of lane 'lane-0' and the number of lane 'lane-1': write 'lane 2' for the number" in command.stderr.getvalue()
    assert command._lane(run, "lane 2", "candidate") is lanes[1]
    assert command._lane(run, "9", "candidate") is lanes[1]  # an id no number clashes with


@pytest.mark.parametrize(
    "args", [["--baseline", "x", "--candidate", "1"], ["--candidate", "1"], ["--baseline", "1", "--candidate", "2", "--bogus"]]
)
def test_cli_argument_errors_exit_4_not_argparses_2(args):
    # 2 would read as the gate's "warn" (docs/scorecards-and-gates.md: 4 is every usage error).
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, str(root / "manage.py"), "gate", *args], capture_output=True, text=True, cwd=root, timeout=60)
    assert done.returncode == 4, done.stderr
    assert "error:" in done.stderr
