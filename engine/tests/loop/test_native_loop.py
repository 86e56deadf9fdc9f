from __future__ import annotations

import json

import pytest

from engine.loop import build_loop, make_emitter
from engine.modes import run_case
from engine.tests.loop.fakes import FakeClock, FakeToolset, Recorder, StubProvider, make_request, tool_response
from engine.types import ProviderError


def run(provider, *, toolset=None, request=None, cancel_check=lambda: False, clock=None):
    clock = clock or FakeClock()
    recorder = Recorder()
    toolset = toolset or FakeToolset()
    outcome = run_case(
        request or make_request(),
        provider=provider,
        toolset=toolset,
        event_sink=recorder,
        cancel_check=cancel_check,
        clock=clock,
        sleep=clock.sleep,
    )
    return outcome, recorder, toolset


def test_it_completes_when_submit_succeeds():
    provider = StubProvider(tool_response(("read_file", {"path": "a"})), tool_response(("submit", {"answer": "42"})))
    outcome, _, toolset = run(provider)
    assert (outcome.status, outcome.stop_reason, outcome.final_output) == ("completed", "completed", "42")
    assert outcome.step_count == 2
    assert outcome.tool_call_count == 1  # submit is never counted
    assert outcome.usage.total_tokens == 24
    assert [call.name for call in toolset.calls] == ["read_file", "submit"]


def test_it_sends_system_and_benchmark_context_messages_first():
    provider = StubProvider(tool_response(("submit", {"answer": "x"})))
    run(provider, request=make_request(output_schema={"type": "object"}))
    system, user = provider.requests[0].messages
    assert system.role == "system" and system.content.startswith("You are a careful agent.")
    assert "call the `submit` tool" in system.content
    assert "Final answer contract:" in system.content
    assert user.role == "user" and user.content.startswith("Benchmark context:\n")
    context = json.loads(user.content.split("\n", 1)[1])
    assert context["challenges"][0]["instructions"] == "Find the answer for {{order_id}}."
    assert context["challenge_input_set"]["cases"][0]["inputs"][0]["value"] == "What is it?"
    assert context["run_agent_id"] == "lane-1"


def test_it_never_shows_expectations_or_the_evaluation_spec_to_the_model():
    provider = StubProvider(tool_response(("submit", {"answer": "x"})))
    run(provider)
    everything = "".join(m.content for m in provider.requests[0].messages)
    assert "the-hidden-expected-answer-42" not in everything
    assert "expectations" not in everything and "evaluation_spec" not in everything


def test_it_fails_with_step_limit_when_steps_run_out():
    provider = StubProvider(*[tool_response(("read_file", {})) for _ in range(5)])
    outcome, recorder, _ = run(provider, request=make_request(runtime_profile={"max_iterations": 3}))
    assert (outcome.status, outcome.stop_reason, outcome.step_count) == ("failed", "step_limit", 3)
    assert outcome.final_output is None
    assert recorder.last("system.run.failed").payload["stop_reason"] == "step_limit"


def test_it_fails_with_tool_limit_before_executing_a_call_over_budget():
    provider = StubProvider(tool_response(("read_file", {}), ("read_file", {}), ("read_file", {})))
    outcome, _, toolset = run(provider, request=make_request(runtime_profile={"max_tool_calls": 2}))
    assert (outcome.stop_reason, outcome.tool_call_count) == ("tool_limit", 2)
    assert len(toolset.calls) == 2


def test_it_lets_submit_through_when_the_tool_budget_is_used_up():
    provider = StubProvider(tool_response(("read_file", {}), ("read_file", {})), tool_response(("submit", {"answer": "ok"})))
    outcome, _, _ = run(provider, request=make_request(runtime_profile={"max_tool_calls": 2}))
    assert (outcome.stop_reason, outcome.final_output, outcome.tool_call_count) == ("completed", "ok", 2)


def test_it_treats_zero_max_tool_calls_as_unlimited():
    provider = StubProvider(*[tool_response(("read_file", {})) for _ in range(4)], tool_response(("submit", {"answer": "a"})))
    outcome, _, _ = run(provider, request=make_request(runtime_profile={"max_tool_calls": 0}))
    assert (outcome.stop_reason, outcome.tool_call_count) == ("completed", 4)


def test_a_reply_without_a_tool_call_is_the_agents_error_not_the_providers():
    outcome, recorder, _ = run(StubProvider(tool_response(text="I think the answer is 42")))
    assert (outcome.stop_reason, outcome.error) == ("agent_error", "assistant response did not contain a tool call or submit action")
    assert outcome.provider_failure is None
    assert recorder.types[-1] == "system.run.failed"


def test_it_returns_an_uncounted_error_result_for_an_unknown_tool():
    provider = StubProvider(tool_response(("rm_rf", {})), tool_response(("submit", {"answer": "done"})))
    outcome, recorder, toolset = run(provider)
    assert outcome.tool_call_count == 0 and outcome.stop_reason == "completed"
    assert [c.name for c in toolset.calls] == ["submit"]
    failed = recorder.last("tool.call.failed").payload
    assert failed["result"]["content"] == json.dumps({"error": 'tool "rm_rf" is not available in this runtime'})
    assert failed["failure_origin"] == "policy"
    tool_message = provider.requests[1].messages[-1]
    assert tool_message.role == "tool" and tool_message.is_error and tool_message.tool_call_id == "c0"


def test_a_tool_that_exists_but_is_hidden_is_a_policy_denial_and_a_name_that_exists_nowhere_is_the_agents_mistake():
    toolset = FakeToolset()
    toolset.known = frozenset({"read_file", "write_file", "submit", "exec"})  # exec: hidden by the pack's policy
    provider = StubProvider(tool_response(("exec", {})), tool_response(("restart_servise", {})), tool_response(("submit", {"answer": "x"})))
    outcome, recorder, _ = run(provider, toolset=toolset)
    assert outcome.stop_reason == "completed" and outcome.tool_call_count == 0
    hidden, unknown = [e.payload for e in recorder.events if e.event_type == "tool.call.failed"]
    assert hidden["failure_origin"] == "policy"
    assert json.loads(hidden["result"]["content"]) == {"error": 'tool "exec" is not available in this runtime'}
    assert unknown["failure_origin"] == "unknown_tool"
    assert json.loads(unknown["result"]["content"]) == {
        "error": 'there is no tool "restart_servise"; the tools are: read_file, submit, write_file'
    }


def test_it_refuses_submit_in_a_batch_but_still_runs_the_other_calls():
    provider = StubProvider(
        tool_response(("read_file", {}), ("submit", {"answer": "early"})), tool_response(("submit", {"answer": "late"}))
    )
    outcome, _, toolset = run(provider)
    assert [c.name for c in toolset.calls] == ["read_file", "submit"]
    assert outcome.final_output == "late" and outcome.tool_call_count == 1
    refused = provider.requests[1].messages[-1]
    assert json.loads(refused.content) == {"error": "submit must be called by itself"}


def test_it_runs_tool_calls_sequentially_in_order():
    provider = StubProvider(
        tool_response(("write_file", {"n": 1}), ("read_file", {"n": 2}), ("write_file", {"n": 3})),
        tool_response(("submit", {"answer": "a"})),
    )
    _, _, toolset = run(provider)
    assert [json.loads(c.arguments).get("n") for c in toolset.calls] == [1, 2, 3, None]


def test_it_keeps_going_after_a_failed_submit():
    provider = StubProvider(tool_response(("submit", {"answer": " "})), tool_response(("submit", {"answer": "real"})))
    outcome, _, _ = run(provider)
    assert (outcome.final_output, outcome.step_count) == ("real", 2)


@pytest.mark.parametrize(("keep", "last_role"), [(False, "assistant"), (True, "tool")])
def test_it_drops_the_successful_submit_message_unless_asked_to_keep_it(keep, last_role):
    clock = FakeClock()
    request = make_request()
    emitter = make_emitter(request, Recorder(), "native_engine")
    loop = build_loop(
        request,
        provider=StubProvider(tool_response(("submit", {"answer": "a"}))),
        toolset=FakeToolset(),
        emitter=emitter,
        cancel_check=lambda: False,
        clock=clock,
        sleep=clock.sleep,
        started_at=clock(),
        keep_submit_message=keep,
    )
    assert loop.run_until_submit().final_output == "a"
    assert loop.messages[-1].role == last_role


def test_it_fails_with_timeout_when_the_run_deadline_passes():
    clock = FakeClock()
    toolset = FakeToolset(on_execute=lambda call: setattr(clock, "now", clock.now + 100))
    provider = StubProvider(*[tool_response(("read_file", {})) for _ in range(5)])
    outcome, _, _ = run(provider, toolset=toolset, clock=clock, request=make_request(runtime_profile={"run_timeout_seconds": 250}))
    assert outcome.stop_reason == "timeout"
    assert outcome.error == "exceeded runtime budget after 250s (the runtime profile's run timeout)"
    assert len(toolset.calls) == 3


def test_it_bounds_the_model_call_by_the_remaining_run_time():
    clock = FakeClock()
    toolset = FakeToolset(on_execute=lambda call: setattr(clock, "now", clock.now + 95))
    provider = StubProvider(tool_response(("read_file", {})), tool_response(("submit", {"answer": "a"})))
    run(provider, toolset=toolset, clock=clock, request=make_request(runtime_profile={"run_timeout_seconds": 100}))
    assert provider.requests[0].step_timeout_seconds == 30
    assert provider.requests[1].step_timeout_seconds == pytest.approx(5)


def test_a_case_timeout_overrides_the_profile_timeout():
    clock = FakeClock()
    toolset = FakeToolset(on_execute=lambda call: setattr(clock, "now", clock.now + 11))
    request = make_request()
    request.case["case_timeout_seconds"] = 10
    outcome, _, _ = run(StubProvider(*[tool_response(("read_file", {})) for _ in range(3)]), toolset=toolset, clock=clock, request=request)
    assert outcome.stop_reason == "timeout"


def test_it_stops_as_cancelled_before_the_first_step():
    provider = StubProvider(tool_response(("submit", {"answer": "a"})))
    outcome, recorder, _ = run(provider, cancel_check=lambda: True)
    assert (outcome.status, outcome.stop_reason, outcome.step_count) == ("cancelled", "cancelled", 0)
    assert provider.requests == []
    assert recorder.types == ["system.run.started", "system.run.failed"]


def test_it_checks_cancellation_before_each_tool_call():
    flag = {"cancelled": False}
    toolset = FakeToolset(on_execute=lambda call: flag.update(cancelled=True))
    provider = StubProvider(tool_response(("read_file", {}), ("read_file", {})))
    outcome, _, _ = run(provider, toolset=toolset, cancel_check=lambda: flag["cancelled"])
    assert outcome.stop_reason == "cancelled"
    assert len(toolset.calls) == 1


def test_it_reports_sandbox_error_when_the_toolset_raises_engine_error():
    toolset = FakeToolset(broken=frozenset({"read_file"}))
    outcome, recorder, _ = run(StubProvider(tool_response(("read_file", {}))), toolset=toolset)
    assert (outcome.status, outcome.stop_reason) == ("failed", "sandbox_error")
    assert "transport" not in (outcome.error or "")  # raw infrastructure errors are never shown
    assert recorder.types[-1] == "system.run.failed"


def test_it_reports_a_non_retryable_provider_failure_without_retrying():
    clock = FakeClock()
    provider = StubProvider(ProviderError("auth", "HTTP 401: bad key"))
    outcome, recorder, _ = run(provider, clock=clock)
    assert outcome.stop_reason == "provider_error"
    assert outcome.provider_failure == {"provider_key": "stub", "code": "auth", "retryable": False, "message": "HTTP 401: bad key"}
    assert len(provider.requests) == 1 and clock.sleeps == []
    assert recorder.last("system.run.failed").payload["provider_failure"]["code"] == "auth"


def test_it_turns_an_unexpected_provider_exception_into_provider_error():
    outcome, _, _ = run(StubProvider(RuntimeError("bug")))
    assert outcome.stop_reason == "provider_error" and outcome.provider_failure["code"] == "unknown"


def test_it_retries_a_rate_limit_after_retry_after_plus_one_second():
    clock = FakeClock()
    provider = StubProvider(
        ProviderError("rate_limit", "slow down", retryable=True, retry_after=3), tool_response(("submit", {"answer": "a"}))
    )
    outcome, _, _ = run(provider, clock=clock)
    assert outcome.stop_reason == "completed"
    assert len(clock.sleeps) == 1 and 4 * 0.8 <= clock.sleeps[0] <= 4 * 1.2


def test_it_gives_up_after_three_attempts():
    clock = FakeClock()
    errors = [ProviderError("unavailable", "HTTP 503", retryable=True) for _ in range(3)]
    provider = StubProvider(*errors, tool_response(("submit", {"answer": "never"})))
    outcome, _, _ = run(provider, clock=clock)
    assert outcome.stop_reason == "provider_error" and outcome.provider_failure["code"] == "unavailable"
    assert len(provider.requests) == 3
    assert 0.25 * 0.8 <= clock.sleeps[0] <= 0.25 * 1.2
    assert 0.5 * 0.8 <= clock.sleeps[1] <= 0.5 * 1.2


@pytest.mark.parametrize("code", ["unknown", "malformed_response", "invalid_request"])
def test_it_does_not_retry_codes_outside_the_retry_set(code):
    provider = StubProvider(ProviderError(code, "nope", retryable=True), tool_response(("submit", {"answer": "a"})))
    outcome, _, _ = run(provider)
    assert outcome.stop_reason == "provider_error" and len(provider.requests) == 1


def test_it_does_not_sleep_past_the_run_deadline_to_retry():
    clock = FakeClock()
    provider = StubProvider(
        ProviderError("rate_limit", "slow", retryable=True, retry_after=500), tool_response(("submit", {"answer": "a"}))
    )
    outcome, _, _ = run(provider, clock=clock, request=make_request(runtime_profile={"run_timeout_seconds": 60}))
    assert outcome.stop_reason == "provider_error" and clock.sleeps == []


def test_it_uses_the_upstream_default_of_one_step_when_the_profile_is_empty():
    provider = StubProvider(tool_response(("read_file", {})), tool_response(("submit", {"answer": "a"})))
    outcome, _, _ = run(provider, request=make_request(runtime_profile={"max_iterations": None}))
    assert (outcome.stop_reason, outcome.step_count) == ("step_limit", 1)
