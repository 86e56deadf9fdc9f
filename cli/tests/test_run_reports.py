"""What ``run``, ``gate`` and ``ci run`` report, against a live server and a real worker: the per-lane
table, JUnit XML, ``--format json``, the step summary's links, the sticky PR comment; and the
usage errors that used to slip through (a deployment that does not fit the pack, lanes by id,
runs of two packs)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from agentclash_cli import github

from packs.services import pack_publish
from runs.models import Run

from .fake_http import fake_server
from .live import GOOD, REPO, SLOPPY
from .test_github_comment import FakeGitHub
from .test_run_gate_ci import PACK, start, write_manifest

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_run_follow_ends_with_a_lane_table_and_writes_junit(cli, demo, worker_queue, tmp_path):
    report = tmp_path / "reports" / "run.xml"
    result = cli(
        "run", "--pack", PACK, "--deployment", GOOD, "--deployment", SLOPPY, "--junit", str(report), "--format", "json", "--poll", "0.2"
    )
    assert result.code == 0, result
    body = json.loads(result.out)
    run = Run.objects.get(pk=body["id"])
    lanes = {lane["label"]: lane for lane in body["results"]["lanes"]}
    assert (lanes[GOOD]["passed"], lanes[GOOD]["total"], lanes[GOOD]["winner"]) == (3, 3, True)
    assert (lanes[SLOPPY]["passed"], lanes[SLOPPY]["total"], lanes[SLOPPY]["winner"]) == (1, 3, False)
    assert lanes[GOOD]["score"] > lanes[SLOPPY]["score"]
    assert body["results"]["winner"] == GOOD
    table = result.err.split("· completed\n")[-1].splitlines()
    assert table[0].split() == ["lane", "passed", "score", "rank"]
    assert table[1].startswith(GOOD) and table[1].split()[-4:] == ["3/3", f"{lanes[GOOD]['score']:.3f}", "1", "winner"]
    assert table[2].startswith(SLOPPY) and table[2].split()[-3:] == ["1/3", f"{lanes[SLOPPY]['score']:.3f}", "2"]
    assert table[3].startswith(f"winner: {GOOD}")

    root = ET.parse(report).getroot()
    assert (root.get("tests"), root.get("failures")) == ("6", "2")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == [f"Demo - prompt eval v1 · {GOOD}", f"Demo - prompt eval v1 · {SLOPPY}"]
    sloppy = suites[f"Demo - prompt eval v1 · {SLOPPY}"]
    assert {c.get("name") for c in root.iter("testcase")} == {"small", "negative", "large"}
    failed = {
        (s.get("name").split(" · ")[-1], c.get("name"))
        for s in root.findall("testsuite")
        for c in s.findall("testcase")
        if c.find("failure") is not None
    }
    assert failed == {(SLOPPY, "negative"), (SLOPPY, "large")}
    assert sloppy.get("tests") == "3"
    assert run.status == "completed"


def test_a_deployment_whose_profile_does_not_run_the_packs_mode_is_a_usage_error(cli, demo, tmp_path):
    result = cli("run", "--pack", PACK, "--deployment", "Good agent")
    assert result.code == 4, result
    assert (
        "pack demo-prompt-eval v1 is a prompt_eval pack and 'Good agent' runs native: choose a deployment whose runtime profile runs prompt_eval"
        in result.err
    )
    fitting = result.err.rsplit("(fitting: ", 1)[1].split(")\n", 1)[0]
    assert {GOOD, SLOPPY} <= set(fitting.split(", ")) and "Good agent," not in f"{fitting},"  # the prompt_eval ones only
    ci = cli("ci", "run", "--config", str(write_manifest(tmp_path, baseline={"deployment": "Sloppy agent"})))
    assert ci.code == 4 and "'Sloppy agent' runs native" in ci.err
    assert not Run.objects.exists()


def test_gate_names_lanes_by_deployment_and_reports_junit_json_and_links(cli, demo, worker_queue, tmp_path, monkeypatch):
    single = start(cli, GOOD)
    raced = cli("run", "--pack", PACK, "--deployment", GOOD, "--deployment", SLOPPY, "--input-set", "default", "--follow", "--poll", "0.2")
    assert raced.code == 0, raced
    raced_id = int(raced.out)

    unnamed = cli("gate", "--baseline", str(single), "--candidate", str(raced_id))
    assert unnamed.code == 4
    assert (
        f"candidate run {raced_id} has 2 lanes (1: '{GOOD}', 2: '{SLOPPY}'): choose one with --candidate-lane NAME or its number"
        in unnamed.err
    )
    unknown = cli("gate", "--baseline", str(single), "--candidate", str(raced_id), "--candidate-lane", "Nobody")
    assert unknown.code == 4 and f"--candidate-lane: candidate run {raced_id} has no lane 'Nobody'" in unknown.err

    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit_file = tmp_path / "gate.xml"
    args = ["gate", "--baseline", str(single), "--candidate", str(raced_id), "--candidate-lane", SLOPPY, "--junit", str(junit_file)]
    failed = cli(*args, "--format", "json")
    assert failed.code == 1, failed
    body = json.loads(failed.out)
    assert (body["verdict"], body["exit_code"]) == ("fail", 1)
    sloppy_lane = Run.objects.get(pk=raced_id).lanes.get(label=SLOPPY)
    assert body["comparison"]["candidate_lane_id"] == sloppy_lane.pk
    by_number = cli("gate", "--baseline", str(single), "--candidate", str(raced_id), "--candidate-lane", "lane 2", "--format", "json")
    assert by_number.code == 1 and json.loads(by_number.out)["comparison"]["candidate_lane_id"] == sloppy_lane.pk

    comparison = body["comparison"]["id"]
    markdown = summary.read_text()
    assert f"[comparison #{comparison}](http://" in markdown and f"/w/acme/comparisons/{comparison}/)" in markdown
    assert f"candidate run [#{raced_id}](" in markdown and f"({SLOPPY})" in markdown
    large = sloppy_lane.case_runs.get(case_key="large")
    assert f"/w/acme/runs/{raced_id}/cases/{large.pk}/vs/" in markdown, "each regressed case links to its side-by-side view"

    root = ET.parse(junit_file).getroot()
    baseline_suite, candidate_suite = root.findall("testsuite")
    assert candidate_suite.get("name").endswith(f"· {SLOPPY}") and baseline_suite.get("name").endswith(f"· {GOOD}")
    assert "regressed: passed in the baseline" in candidate_suite.find("testcase[@name='large']/failure").get("message")

    text = cli(*args[:-2], "--candidate-lane", str(sloppy_lane.pk))  # a lane id still works
    assert text.code == 1 and text.out.startswith("verdict: fail\n")
    assert "comparison page: http://" in text.out


def test_gate_of_two_packs_says_so_instead_of_several_lanes(cli, demo, workspace, admin, worker_queue):
    pack_publish(workspace=workspace, user=admin, source=(REPO / "packs" / "demo" / "demo-file-fixes.yaml").read_text())
    prompt_run = start(cli, GOOD)
    native = cli("run", "--pack", "demo-file-fixes", "--deployment", "Good agent", "--deployment", "Sloppy agent")
    assert native.code == 0, native
    result = cli("gate", "--baseline", str(prompt_run), "--candidate", native.out.strip())
    assert result.code == 4, result
    assert (
        f"baseline run {prompt_run} is of Demo - prompt eval v1 and candidate run {native.out.strip()} of Demo - file fixes v1"
        in result.err
    )
    assert "a gate compares two runs of the same pack version" in result.err
    assert "several lanes" not in result.err


def test_ci_run_posts_one_sticky_pr_comment_and_writes_junit(cli, demo, worker_queue, tmp_path, monkeypatch):
    fake = FakeGitHub()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    with fake_server(fake.route) as (url, _):
        for name, value in {
            "GITHUB_TOKEN": "ghs_test",
            "GITHUB_REPOSITORY": "acme/agent",
            "GITHUB_API_URL": url,
            "GITHUB_EVENT_PATH": str(event),
        }.items():
            monkeypatch.setenv(name, value)
        junit_file = tmp_path / "ci.xml"
        regressed = cli(
            "ci",
            "run",
            "--config",
            str(write_manifest(tmp_path)),
            "--pr-comment",
            "--junit",
            str(junit_file),
            "--format",
            "json",
            "--poll",
            "0.2",
        )
        assert regressed.code == 1, regressed
        result = json.loads(regressed.out)
        assert result == json.loads((tmp_path / "out" / "result.json").read_text())
        assert result["pr_comment"] == {"status": "created", "url": "https://gh/c/1001"}
        assert result["regressed_cases"] == ["large", "negative"]
        assert result["comparison_url"].endswith(f"/w/acme/comparisons/{result['comparison_id']}/")
        (comment,) = fake.comments
        assert comment["body"].startswith(github.MARKER + "\n## AgentClash release gate: ❌ fail")
        assert f"comparisons/{result['comparison_id']}/)" in comment["body"] and "Regressed cases (2):" in comment["body"]
        assert ET.parse(junit_file).getroot().get("failures") == "2"

        monkeypatch.delenv("GITHUB_EVENT_PATH")  # the flag names the pull request instead
        good = cli("ci", "run", "--config", str(write_manifest(tmp_path, candidate={"deployment": GOOD})), "--pr-comment", "--pr-number", "7",
                   "--poll", "0.2")  # fmt: skip
        assert good.code == 0, good
        assert "pr comment: updated https://gh/c/1001" in good.err
    (comment,) = fake.comments
    assert "## AgentClash release gate: ✅ pass" in comment["body"]


def test_ci_run_pr_comment_without_a_pull_request_is_skipped_not_fatal(cli, demo, worker_queue, tmp_path, monkeypatch):
    for name in ("GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_EVENT_PATH", "GITHUB_REF"):
        monkeypatch.delenv(name, raising=False)
    result = cli("ci", "run", "--config", str(write_manifest(tmp_path, candidate={"deployment": GOOD})), "--pr-comment", "--poll", "0.2")
    assert result.code == 0, result
    assert "pr comment: skipped (no GITHUB_TOKEN, GITHUB_REPOSITORY, the pull request number" in result.err
    assert json.loads((tmp_path / "out" / "result.json").read_text())["pr_comment"]["status"] == "skipped"
