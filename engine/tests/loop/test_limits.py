"""The pack's runtime_limits and the worker's deadline stop a case with a clear stop reason."""

from __future__ import annotations

from engine.modes import run_case
from engine.modes.case import Limits, cancel_stop
from engine.tests.loop.fakes import FakeClock, FakeToolset, Recorder, StubProvider, make_request, tool_response
from engine.types import Usage


def run(provider, *, request, toolset=None, cancel_check=lambda: False, clock=None):
    clock = clock or FakeClock()
    recorder = Recorder()
    toolset = toolset or FakeToolset()
    outcome = run_case(
        request, provider=provider, toolset=toolset, event_sink=recorder, cancel_check=cancel_check, clock=clock, sleep=clock.sleep
    )
    return outcome, recorder, toolset


def test_it_stops_with_token_limit_when_a_call_goes_over_max_total_tokens():
    # Each stub call uses 12 tokens: 12, 24, 36 > 30 on the third call.
    provider = StubProvider(*[tool_response(("read_file", {})) for _ in range(2)], tool_response(("submit", {"answer": "late"})))
    outcome, recorder, toolset = run(provider, request=make_request(runtime_limits={"max_total_tokens": 30}))
    assert (outcome.status, outcome.stop_reason, outcome.final_output) == ("failed", "token_limit", None)
    assert outcome.error == "used 36 tokens; the pack's runtime_limits.max_total_tokens is 30"
    assert [c.name for c in toolset.calls] == ["read_file", "read_file"]  # the over-budget submit is not acted on
    assert recorder.last("system.run.failed").payload["stop_reason"] == "token_limit"


def test_a_budget_used_exactly_allows_no_further_call():
    provider = StubProvider(tool_response(("read_file", {})), tool_response(("read_file", {})), tool_response(("submit", {"answer": "x"})))
    outcome, _, _ = run(provider, request=make_request(runtime_limits={"max_total_tokens": 24}))
    assert (outcome.stop_reason, outcome.step_count, len(provider.requests)) == ("token_limit", 2, 2)


def test_a_case_within_its_token_budget_completes():
    provider = StubProvider(tool_response(("submit", {"answer": "ok"})))
    outcome, _, _ = run(provider, request=make_request(runtime_limits={"max_total_tokens": 12}))
    assert (outcome.stop_reason, outcome.final_output) == ("completed", "ok")


def test_max_duration_ms_sets_the_deadline_when_it_is_tighter_than_the_profile():
    clock = FakeClock()
    toolset = FakeToolset(on_execute=lambda call: setattr(clock, "now", clock.now + 40))
    provider = StubProvider(*[tool_response(("read_file", {})) for _ in range(5)])
    request = make_request(runtime_profile={"run_timeout_seconds": 300}, runtime_limits={"max_duration_ms": 100_000})
    outcome, _, toolset = run(provider, request=request, toolset=toolset, clock=clock)
    assert (outcome.status, outcome.stop_reason) == ("failed", "timeout")
    assert outcome.error == "exceeded runtime budget after 100s (the pack's runtime_limits.max_duration_ms)"
    assert len(toolset.calls) == 3


def test_the_profile_run_timeout_wins_when_it_is_tighter():
    limits = Limits.from_request(make_request(runtime_profile={"run_timeout_seconds": 60}, runtime_limits={"max_duration_ms": 600_000}))
    assert (limits.run_timeout_seconds, limits.run_timeout_from) == (60, "the runtime profile's run timeout")
    assert "max_total_tokens" in limits.as_dict() and limits.max_total_tokens == 0


class DeadlineCheck:
    """What the worker's watchdog hands the engine once the case's wall-clock deadline passed."""

    stop_reason = "deadline_exceeded"
    stop_message = "the case exceeded its wall-clock deadline of 5s"

    def __call__(self) -> bool:
        return True


def test_a_cancel_check_that_names_a_stop_reason_fails_the_case_with_it():
    provider = StubProvider(tool_response(("submit", {"answer": "x"})))
    outcome, recorder, _ = run(provider, request=make_request(), cancel_check=DeadlineCheck())
    assert (outcome.status, outcome.stop_reason, outcome.error) == (
        "failed",
        "deadline_exceeded",
        "the case exceeded its wall-clock deadline of 5s",
    )
    assert recorder.last("system.run.failed").payload["stop_reason"] == "deadline_exceeded"
    assert cancel_stop(lambda: True) == ("cancelled", "run cancelled")


def test_prompt_eval_stops_with_token_limit_too():
    provider = StubProvider(tool_response(text="a long answer"))
    request = make_request(execution_mode="prompt_eval", runtime_limits={"max_total_tokens": 5})
    outcome, _, _ = run(provider, request=request, toolset=None)
    assert (outcome.status, outcome.stop_reason) == ("failed", "token_limit")


def test_token_budget_reads_input_plus_output_when_no_total_is_reported():
    limits = Limits(max_iterations=0, max_tool_calls=0, step_timeout_seconds=1, run_timeout_seconds=0, max_total_tokens=10)
    assert limits.tokens_exceeded(Usage(6, 5, 0)) is not None
    assert limits.tokens_exceeded(Usage(5, 5, 0)) is None
    assert limits.tokens_exceeded(Usage(5, 5, 0), before_call=True) is not None
