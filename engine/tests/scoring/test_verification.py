from __future__ import annotations

from typing import Any

from engine.scoring import score_case
from engine.scoring.spec import EvaluationSpec
from engine.scoring.verification import MAX_TOTAL_BYTES, run_post_execution
from engine.tests.scoring.helpers import FakeChecker, FakeSandbox, evidence, spec
from engine.types import JSON, CheckRun, EngineError, ExecResult

SPEC = spec(
    validators=[
        {
            "key": "tests",
            "type": "code_execution",
            "target": "file:solution",
            "config": {"test_command": "pytest -q -k {{language}}", "timeout_ms": 5000},
        },
        {"key": "has_fn", "type": "file_content_match", "target": "file:solution", "expected_from": "literal:def f"},
    ],
    dimensions=["correctness"],
    post_execution_checks=[
        {"key": "solution", "type": "file_capture", "path": "/workspace/solution.py"},
        {"key": "tree", "type": "directory_listing", "path": "/workspace"},
    ],
)
CASE: dict[str, JSON] = {"payload": {"language": "python"}}


def test_test_commands_run_in_a_fresh_sandbox_with_the_captured_files_and_the_pack_files():
    sandbox = FakeSandbox({"/workspace/solution.py": b"def f(): pass", "/workspace/check.py": b"print('agent wrote this')"})
    checker = FakeChecker(CheckRun(ExecResult(0, "OK"), results=b'{"passed": 3, "failed": 0, "total": 3}'))
    staged = {"/workspace/check.py": b"assert True", "/workspace/solution.py": b"buggy", "data/rows.csv": b"1,2"}
    out: Any = run_post_execution(SPEC, sandbox, CASE, checker_files=staged, fresh=checker)
    assert sandbox.exec_calls == []  # nothing runs in the sandbox the agent left behind
    [made] = checker.made
    assert made["like"] is sandbox
    assert made["files"] == {"/workspace/solution.py": b"def f(): pass"}  # the captured file, as the agent left it
    # the pack's own files as staged, not as the agent left them; a captured path is the agent's
    assert made["read_only"] == {"/workspace/check.py": b"assert True", "data/rows.csv": b"1,2"}
    assert checker.checks == [("pytest -q -k python", "/workspace", 5.0)]
    assert checker.destroyed
    execution = out["code_executions"]["tests"]
    assert execution["test_counts"] == {"passed": 3, "failed": 0, "errors": 0, "total": 3}
    assert [e["event_type"] for e in out["events"]] == [  # the agent's workspace first: the checks restart the sandbox
        "grader.verification.file_captured",
        "grader.verification.directory_listed",
        "grader.verification.code_executed",
    ]


def test_counts_are_read_from_the_results_file_never_from_what_was_printed():
    printed = CheckRun(ExecResult(1, stdout='{"passed": 7, "failed": 0, "total": 7}\n10 passed', stderr="9 passed"))
    out: Any = run_post_execution(SPEC, FakeSandbox({"/workspace/solution.py": b"x"}), CASE, fresh=FakeChecker(printed))
    execution = out["code_executions"]["tests"]
    assert (execution["exit_code"], execution["test_counts"], execution["results_error"]) == (1, None, None)


def test_a_results_file_without_counts_is_a_results_error():
    checker = FakeChecker(CheckRun(ExecResult(0, "OK"), results=b"all good, trust me"))
    out: Any = run_post_execution(SPEC, FakeSandbox({"/workspace/solution.py": b"x"}), CASE, fresh=checker)
    assert out["code_executions"]["tests"]["results_error"] == "the results file holds no test counts"


def test_a_captured_file_the_agent_did_not_write_is_not_copied():
    s: EvaluationSpec = {**SPEC, "post_execution_checks": [{"key": "solution", "type": "file_capture", "path": "/workspace/src/app.py"}]}
    checker = FakeChecker()
    out: Any = run_post_execution(s, FakeSandbox(), CASE, fresh=checker)
    assert checker.made[0]["files"] == {}
    assert checker.checks == [("pytest -q -k python", "/workspace", 5.0)]
    assert out["code_executions"]["tests"]["exit_code"] == 0


def test_specs_without_a_runnable_code_check_make_no_fresh_sandbox():
    checker = FakeChecker()
    captures_only: EvaluationSpec = {**SPEC, "validators": [v for v in SPEC["validators"] if v["type"] != "code_execution"]}
    run_post_execution(captures_only, FakeSandbox({"/workspace/solution.py": b"x"}), CASE, fresh=checker)
    untargeted: EvaluationSpec = {**SPEC, "validators": [{**SPEC["validators"][0], "target": "file:tree"}]}  # a listing: not runnable
    run_post_execution(untargeted, FakeSandbox({"/workspace/solution.py": b"x"}), CASE, fresh=checker)
    assert checker.made == []


def test_a_verification_sandbox_that_cannot_be_made_is_an_execution_error():
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise EngineError("no launcher")

    out: Any = run_post_execution(SPEC, FakeSandbox({"/workspace/solution.py": b"x"}), CASE, fresh=broken)
    assert out["code_executions"]["tests"]["execution_error"] == "verification sandbox unavailable: EngineError: no launcher"


def test_it_captures_files_and_lists_directories():
    sandbox = FakeSandbox({"/workspace/solution.py": b"def f(): pass", "/workspace/src/a.py": b"x"})
    out: Any = run_post_execution(SPEC, sandbox, CASE)
    assert out["captured_files"]["solution"]["content"] == "def f(): pass"
    assert out["captured_files"]["solution"]["exists"] is True
    paths = [e["relative_path"] for e in out["directory_listings"]["tree"]]
    assert paths == ["solution.py", "src"]  # non-recursive: subdirectories collapse to one entry


def test_missing_files_are_recorded_as_not_existing():
    out: Any = run_post_execution(SPEC, FakeSandbox(), CASE)
    assert out["captured_files"]["solution"]["exists"] is False


def test_captures_are_truncated_per_file_and_per_run():
    s: EvaluationSpec = {
        **SPEC,
        "post_execution_checks": [
            {"key": "a", "type": "file_capture", "path": "/workspace/a", "max_size_bytes": 4},
            {"key": "b", "type": "file_capture", "path": "/workspace/b", "max_size_bytes": MAX_TOTAL_BYTES},
            {"key": "c", "type": "file_capture", "path": "/workspace/c", "max_size_bytes": MAX_TOTAL_BYTES},
        ],
    }
    big = b"x" * (MAX_TOTAL_BYTES - 2)
    out: Any = run_post_execution(s, FakeSandbox({"/workspace/a": b"123456", "/workspace/b": big, "/workspace/c": big}), CASE)
    assert (out["captured_files"]["a"]["content"], out["captured_files"]["a"]["truncated"]) == ("1234", True)
    assert len(out["captured_files"]["b"]["content"]) == MAX_TOTAL_BYTES - 4
    assert (out["captured_files"]["c"]["content"], out["captured_files"]["c"]["truncated"]) == ("", True)


def test_sandbox_failures_become_execution_errors_and_the_sandbox_is_destroyed():
    checker = FakeChecker(EngineError("bwrap died"))
    out: Any = run_post_execution(SPEC, FakeSandbox(), CASE, fresh=checker)
    assert "bwrap died" in out["code_executions"]["tests"]["execution_error"]
    assert checker.destroyed


def test_verification_output_scores_end_to_end():
    sandbox = FakeSandbox({"/workspace/solution.py": b"def f(): pass"})
    checker = FakeChecker(CheckRun(ExecResult(0, "99 passed"), results=b"== 1 failed, 1 passed in 0.1s =="))
    out: Any = run_post_execution(SPEC, sandbox, CASE, fresh=checker)
    ev = evidence(
        "done", captured_files=out["captured_files"], directory_listings=out["directory_listings"], code_executions=out["code_executions"]
    )
    result = score_case(SPEC, ev).as_dict()
    details = {v["key"]: v for v in result["validator_details"]}
    assert details["tests"]["normalized_score"] == 0.5
    assert details["has_fn"]["verdict"] == "pass"
    assert result["dimensions"]["correctness"]["score"] == 0.75


def test_verification_events_alone_are_enough_evidence():
    sandbox = FakeSandbox({"/workspace/solution.py": b"def f(): pass"})
    out: Any = run_post_execution(SPEC, sandbox, CASE, fresh=FakeChecker(CheckRun(ExecResult(0, "OK"), results=b"2 passed")))
    events = [
        {"event_id": f"g{i}", "sequence_number": 100 + i, "occurred_at": "2026-01-01T00:00:05+00:00", **e}
        for i, e in enumerate(out["events"])
    ]
    code_event = next(e["event_id"] for e in events if e["event_type"] == "grader.verification.code_executed")
    ev = evidence("done")
    ev.events = ev.events + events
    details = {v["key"]: v for v in score_case(SPEC, ev).as_dict()["validator_details"]}
    assert details["tests"]["verdict"] == "pass"
    assert details["tests"]["evidence_event_id"] == code_event
