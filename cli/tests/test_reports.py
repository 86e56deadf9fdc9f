"""JUnit XML and the Markdown report, from API-shaped data (the live tests cover them end to end)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from agentclash_cli import junit
from agentclash_cli.client import Client, Config
from agentclash_cli.gate import GateOutcome
from agentclash_cli.runs import lane_results, lanes_table
from agentclash_cli.summary import markdown_summary

from .fake_http import fake_server

RUN = {
    "id": 42,
    "pack_name": "Demo",
    "pack_version_number": 1,
    "status": "completed",
    "lanes": [{"id": 7, "label": "Good"}, {"id": 8, "label": "Bad"}],
}
CASES = [
    {"id": 1, "lane_id": 7, "case_key": "small", "passed": True, "score": 1.0, "status": "completed", "duration_ms": 1500},
    {"id": 2, "lane_id": 8, "case_key": "small", "passed": False, "score": 0.25, "status": "completed", "duration_ms": 20},
    {"id": 3, "lane_id": 8, "case_key": "large", "passed": None, "status": "failed", "stop_reason": "timeout", "final_output": "x"},
    {"id": 4, "lane_id": 8, "case_key": "other", "passed": None, "status": "cancelled"},
]


def test_junit_has_one_test_case_per_case_and_lane():
    root = ET.fromstring(junit.document("agentclash run 42", junit.run_suites(RUN, CASES)))
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("4", "1", "1", "1")
    good, bad = root.findall("testsuite")
    assert good.get("name") == "Demo v1 · Good" and good.get("tests") == "1" and good.get("time") == "1.500"
    assert [(c.get("classname"), c.get("name")) for c in bad.findall("testcase")] == [
        ("Demo v1.Bad", k) for k in ("small", "large", "other")
    ]
    small, large, other = bad.findall("testcase")
    assert small.find("failure").get("message") == "failed (score 0.250)"
    assert large.find("error").get("message") == "the case run failed before it was scored: timeout"
    assert other.find("skipped").get("message") == "not scored (case status cancelled)"
    assert {p.get("name"): p.get("value") for p in bad.find("properties")} == {"run_id": "42", "lane_id": "8", "run_status": "completed"}


def test_junit_drops_what_xml_cannot_hold_and_never_copies_agent_output():
    hostile = {"id": 9, "lane_id": 7, "case_key": "bad\x00key\x1b]", "passed": False, "score": 0, "final_output": "SECRET-OUTPUT\x07"}
    text = junit.document("x", junit.run_suites({**RUN, "lanes": [{"id": 7, "label": "L\x0c"}]}, [hostile]))
    root = ET.fromstring(text)  # would raise on a control character
    assert root.find("testsuite/testcase").get("name") == "badkey]"
    assert "SECRET-OUTPUT" not in text


def outcome(**summary) -> GateOutcome:
    return GateOutcome(
        comparison={"id": 5, "status": "comparable", "baseline_run_id": 41, "candidate_run_id": 42, "baseline_lane_id": 6, "candidate_lane_id": 8,
                    "summary": {"case_divergence": {"passed_to_failed": ["small", "a|b`c"], "completed_to_failed": ["small"]}, **summary}},
        gate={"verdict": "fail", "reason_code": "case_regressions", "summary": "2 cases regressed", "policy": {"policy_key": "ci"},
              "triggered_conditions": [{"condition": "max_case_regressions", "outcome": "fail", "cases": ["small"]}]},
        baseline_run={"id": 41, "pack_name": "Demo", "pack_version_number": 1, "lanes": [{"id": 6, "label": "Prod"}]},
        candidate_run=RUN,
        baseline_cases=[{"id": 11, "lane_id": 6, "case_key": "small", "passed": True, "score": 1.0}],
        candidate_cases=[CASES[1], {"id": 12, "lane_id": 8, "case_key": "a|b`c", "passed": False, "score": 0.0, "error": "[click](http://evil)"}],
    )  # fmt: skip


def test_the_report_links_the_comparison_and_each_regressed_case():
    markdown = markdown_summary(outcome(), web_url=lambda path: f"https://ac.example/w/acme/{path}")
    assert "## AgentClash release gate: ❌ fail" in markdown
    assert "[comparison #5](https://ac.example/w/acme/comparisons/5/) (comparable)" in markdown
    assert (
        "Baseline run [#41](https://ac.example/w/acme/runs/41/) (Prod) · candidate run [#42](https://ac.example/w/acme/runs/42/) (Bad)"
        in markdown
    )
    assert "Regressed cases (2):" in markdown
    assert (
        "| `small` | [passed · 1.000](https://ac.example/w/acme/runs/41/cases/11/) | [failed · 0.250](https://ac.example/w/acme/runs/42/cases/2/) "
        "| [side by side](https://ac.example/w/acme/runs/42/cases/2/vs/11/) |"
    ) in markdown
    assert "| `a/b'c` | — | [failed · 0.000](https://ac.example/w/acme/runs/42/cases/12/) |  |" in markdown, (
        "no pipe or backtick breaks the table"
    )
    assert "evil" not in markdown, "case errors (which an agent can shape) stay out of the report"
    assert "- `max_case_regressions`: fail — cases: `small`" in markdown


def test_the_report_without_links_still_names_everything():
    markdown = markdown_summary(outcome())
    assert "comparison #5 (comparable)" in markdown and "](" not in markdown


def test_gate_junit_marks_the_candidates_regressions():
    root = ET.fromstring(junit.document("gate", junit.gate_suites(outcome())))
    baseline, candidate = root.findall("testsuite")
    assert baseline.get("name") == "baseline: Demo v1 · Prod"
    assert baseline.find("testcase[@name='small']/failure") is None
    assert candidate.get("name") == "candidate: Demo v1 · Bad"
    small = candidate.find("testcase[@name='small']/failure")
    assert small.get("message") == "regressed: passed in the baseline, failed (score 0.250) in the candidate"
    assert {p.get("name"): p.get("value") for p in candidate.find("properties")}["verdict"] == "fail"


def test_the_lane_table_says_when_there_are_no_scores():
    def route(method, path, body, headers):
        return (
            (409, {}, {"error": {"code": "scoring_failed", "message": "Scoring this run failed"}})
            if path.endswith("/scorecard")
            else (404, {}, None)
        )

    with fake_server(route) as (url, _):
        results = lane_results(Client(Config(url=url, token="t", workspace="acme")), RUN, CASES)
    assert results["scoring"] == "failed" and results["winner"] is None
    assert [(lane["label"], lane["passed"], lane["total"], lane["score"]) for lane in results["lanes"]] == [
        ("Good", 1, 1, None),
        ("Bad", 0, 3, None),
    ]
    assert (
        lanes_table(results)
        == "lane  passed  score  rank\nGood     1/1      —     —\nBad      0/3      —     —\nno scores: scoring failed\n"
    )


def test_the_lane_table_names_the_winner_or_why_there_is_none():
    lanes = [
        {"label": "Good", "passed": 3, "total": 3, "score": 0.9, "rank": 1, "winner": False},
        {"label": "Twin", "passed": 3, "total": 3, "score": 0.9, "rank": 1, "winner": False},
    ]
    tie = lanes_table({"scoring": "scored", "winner": None, "winner_reason": "tie for first place", "lanes": lanes})
    assert tie.endswith("Twin     3/3  0.900     1\nwinner: none (tie for first place)\n")
    lanes[0]["winner"] = True
    won = lanes_table({"scoring": "scored", "winner": "Good", "winner_reason": "highest overall score", "lanes": lanes})
    assert "Good     3/3  0.900     1  winner\n" in won and won.endswith("winner: Good (highest overall score)\n")


def test_the_lane_table_ends_with_each_lanes_pass_rate_interval_and_flaky_cases():
    lanes = [
        {
            "label": "Good",
            "passed": 30,
            "total": 30,
            "score": 0.9,
            "rank": 1,
            "winner": True,
            "pass_rate_text": "100 % (1 trial: no uncertainty estimate)",
        },
        {
            "label": "Flaky",
            "passed": 20,
            "total": 30,
            "score": 0.7,
            "rank": 2,
            "winner": False,
            "pass_rate_text": "67 % (48–81 %, 95 % CI, 10 trials)",
            "statistics": {"flaky_cases": ["c1", "c2"]},
        },
    ]
    text = lanes_table({"scoring": "scored", "winner": "Good", "winner_reason": "highest overall score", "lanes": lanes})
    assert text.endswith(
        "winner: Good (highest overall score)\n"
        "Good: pass rate 100 % (1 trial: no uncertainty estimate)\n"
        "Flaky: pass rate 67 % (48–81 %, 95 % CI, 10 trials) · flaky: c1, c2\n"
    )
