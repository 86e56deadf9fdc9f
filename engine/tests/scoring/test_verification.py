from __future__ import annotations

from typing import Any

from engine.scoring import score_case
from engine.scoring.spec import EvaluationSpec
from engine.scoring.verification import MAX_TOTAL_BYTES, run_post_execution
from engine.tests.scoring.helpers import FakeSandbox, evidence, spec
from engine.types import JSON, EngineError, ExecResult

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


def test_it_runs_code_execution_under_sh_lc_with_rendered_command_and_timeout():
    sandbox = FakeSandbox({"/workspace/solution.py": b"def f(): pass"}, ExecResult(0, "3 passed in 0.1s"))
    out: Any = run_post_execution(SPEC, sandbox, CASE)
    assert sandbox.exec_calls == [(["sh", "-lc", "pytest -q -k python"], "/workspace", 5.0)]
    execution = out["code_executions"]["tests"]
    assert execution["test_counts"] == {"passed": 3, "failed": 0, "errors": 0, "total": 3}
    assert [e["event_type"] for e in out["events"]] == [
        "grader.verification.code_executed",
        "grader.verification.file_captured",
        "grader.verification.directory_listed",
    ]


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


def test_sandbox_failures_become_execution_errors():
    out: Any = run_post_execution(SPEC, FakeSandbox(exec_result=EngineError("bwrap died")), CASE)
    assert "bwrap died" in out["code_executions"]["tests"]["execution_error"]


def test_verification_output_scores_end_to_end():
    sandbox = FakeSandbox({"/workspace/solution.py": b"def f(): pass"}, ExecResult(1, "1 failed, 1 passed"))
    out: Any = run_post_execution(SPEC, sandbox, CASE)
    ev = evidence(
        "done", captured_files=out["captured_files"], directory_listings=out["directory_listings"], code_executions=out["code_executions"]
    )
    result = score_case(SPEC, ev).as_dict()
    details = {v["key"]: v for v in result["validator_details"]}
    assert details["tests"]["normalized_score"] == 0.5
    assert details["has_fn"]["verdict"] == "pass"
    assert result["dimensions"]["correctness"]["score"] == 0.75


def test_verification_events_alone_are_enough_evidence():
    sandbox = FakeSandbox({"/workspace/solution.py": b"def f(): pass"}, ExecResult(0, "2 passed"))
    out: Any = run_post_execution(SPEC, sandbox, CASE)
    events = [
        {"event_id": f"g{i}", "sequence_number": 100 + i, "occurred_at": "2026-01-01T00:00:05+00:00", **e}
        for i, e in enumerate(out["events"])
    ]
    ev = evidence("done")
    ev.events = ev.events + events
    details = {v["key"]: v for v in score_case(SPEC, ev).as_dict()["validator_details"]}
    assert details["tests"]["verdict"] == "pass"
    assert details["tests"]["evidence_event_id"] == "g0"
