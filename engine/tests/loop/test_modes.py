from __future__ import annotations

import json

from engine.modes import run_case, unsupported_simulator_actors
from engine.providers import create_provider
from engine.tests.loop.fakes import FakeClock, FakeToolset, Recorder, StubProvider, make_request, tool_response
from engine.types import ModelResponse, ProviderError, Usage


def execute(request, provider, toolset=None):
    recorder, clock = Recorder(), FakeClock()
    outcome = run_case(
        request,
        provider=provider,
        toolset=toolset if toolset is not None else FakeToolset(),
        event_sink=recorder,
        cancel_check=lambda: False,
        clock=clock,
        sleep=clock.sleep,
    )
    return outcome, recorder


def text_response(text):
    return ModelResponse(provider_key="stub", provider_model_id="m", finish_reason="stop", output_text=text, usage=Usage(5, 3, 8))


# -- prompt_eval -------------------------------------------------------------------------------


def test_prompt_eval_renders_the_instructions_and_makes_one_call_without_tools():
    provider = StubProvider(text_response("the answer"))
    request = make_request(execution_mode="prompt_eval", challenge={"instructions": "Order {{order_id}}: {{question}} {{missing.x}}"})
    outcome, recorder = execute(request, provider, toolset=None)
    assert (outcome.status, outcome.final_output, outcome.step_count) == ("completed", "the answer", 1)
    sent = provider.requests[0]
    assert sent.tools == []
    assert [m.role for m in sent.messages] == ["system", "user"]
    assert sent.messages[1].content == "Order ORD-1: What is it? {{missing.x}}"
    assert {e.source for e in recorder.events} == {"prompt_eval_engine"}
    assert recorder.types[-1] == "system.run.completed"


def test_prompt_eval_does_not_retry_a_provider_failure():
    provider = StubProvider(ProviderError("rate_limit", "slow", retryable=True), text_response("late"))
    outcome, _ = execute(make_request(execution_mode="prompt_eval"), provider)
    assert outcome.stop_reason == "provider_error" and len(provider.requests) == 1


def test_prompt_eval_works_with_the_scripted_provider():
    provider = create_provider(
        "scripted", api_key=None, base_url=None, deployment_config={"script": {"default": [{"submit": "scripted answer"}]}}
    )
    outcome, _ = execute(make_request(execution_mode="prompt_eval"), provider)
    assert outcome.final_output == "scripted answer"


# -- multi_turn --------------------------------------------------------------------------------


def simulator(*phases, max_turns=12):
    return {"schema_version": 1, "kind": "hybrid", "max_turns": max_turns, "phases": list(phases)}


def multi_turn_request(sim):
    request = make_request(execution_mode="multi_turn", event_id_prefix="mt:lane-1:case-a:1")
    request.case["user_simulator"] = sim
    return request


OPEN = {
    "id": "open",
    "actor": "scripted",
    "turns": [{"message": "Refund order {{order_id}}", "expects": [{"key": "k", "kind": "contains", "value": "refund"}]}],
}
PUSHBACK = {"id": "pushback", "actor": "scripted", "trigger": "on_assistant_mismatch", "turns": [{"message": "Wrong policy!"}]}


def test_multi_turn_skips_the_mismatch_phase_when_the_agent_meets_expectations():
    provider = StubProvider(tool_response(("submit", {"answer": "Your refund is on its way"})))
    outcome, recorder = execute(multi_turn_request(simulator(OPEN, PUSHBACK)), provider)
    assert (outcome.status, outcome.final_output) == ("completed", "Your refund is on its way")
    assert [t["phase_id"] for t in outcome.transcript] == ["open"]
    assert outcome.transcript[0]["user_message"] == "Refund order ORD-1"
    assert recorder.last("turn.completed").payload["mismatch"] is False
    assert recorder.types[-2:] == ["conversation.completed", "system.run.completed"]
    assert {e.source for e in recorder.events} == {"multi_turn_engine"}


def test_multi_turn_runs_the_mismatch_phase_and_keeps_one_history():
    provider = StubProvider(
        tool_response(("submit", {"answer": "No."})),
        tool_response(("read_file", {})),
        tool_response(("submit", {"answer": "Sorry, full refund today"})),
    )
    outcome, recorder = execute(multi_turn_request(simulator(OPEN, PUSHBACK)), provider)
    assert [t["phase_id"] for t in outcome.transcript] == ["open", "pushback"]
    assert outcome.transcript[0]["mismatch"] is True
    assert outcome.final_output == "Sorry, full refund today"
    assert (outcome.step_count, outcome.tool_call_count) == (3, 1)
    last_request = provider.requests[-1].messages
    roles = [m.role for m in last_request]
    assert roles == ["system", "user", "user", "assistant", "tool", "user", "assistant", "tool"]
    assert last_request[4].content == '{"submitted":true}'  # submit result is kept in multi_turn
    assert recorder.types.count("turn.user.message") == 2


def test_multi_turn_fails_with_max_turns_when_the_script_is_longer():
    phase = {"id": "open", "actor": "scripted", "turns": [{"message": "one"}, {"message": "two"}]}
    provider = StubProvider(tool_response(("submit", {"answer": "a"})), tool_response(("submit", {"answer": "b"})))
    outcome, _ = execute(multi_turn_request(simulator(phase, max_turns=1)), provider)
    assert (outcome.status, outcome.stop_reason, len(outcome.transcript)) == ("failed", "max_turns", 1)


def test_multi_turn_counts_steps_across_turns_against_the_step_limit():
    phase = {"id": "open", "actor": "scripted", "turns": [{"message": "one"}, {"message": "two"}]}
    request = multi_turn_request(simulator(phase))
    request.runtime_profile["max_iterations"] = 1
    provider = StubProvider(tool_response(("submit", {"answer": "a"})), tool_response(("submit", {"answer": "b"})))
    outcome, _ = execute(request, provider)
    assert outcome.stop_reason == "step_limit"


def test_multi_turn_refuses_a_human_phase_whose_trigger_can_fire_before_calling_the_model():
    sim = simulator(OPEN, {"id": "h", "actor": "human", "trigger": "on_assistant_mismatch", "timeout_ms": 1000})
    provider = StubProvider()
    outcome, recorder = execute(multi_turn_request(sim), provider)
    assert (outcome.status, outcome.stop_reason) == ("failed", "simulator_error")
    assert outcome.error == "user simulator actor(s) human cannot run unattended"
    assert provider.requests == []
    assert recorder.types == ["system.run.started", "system.run.failed"]


def test_unsupported_simulator_actors_lists_human_phases_that_can_fire():
    human_on_mismatch = {"id": "h", "actor": "human", "trigger": "on_assistant_mismatch"}
    human_manual = {"id": "m", "actor": "human", "trigger": "manual"}
    llm = {"id": "x", "actor": "llm", "trigger": "on_assistant_mismatch", "persona": "p"}
    assert unsupported_simulator_actors({"user_simulator": simulator(OPEN, llm, human_on_mismatch)}) == ["human"]
    assert unsupported_simulator_actors({"user_simulator": simulator(OPEN, llm, human_manual)}) == []
    assert unsupported_simulator_actors({"user_simulator": simulator({"id": "first", "actor": "human"})}) == ["human"]
    assert unsupported_simulator_actors({}) == []


def test_multi_turn_never_shows_the_simulator_script_to_the_model():
    provider = StubProvider(tool_response(("submit", {"answer": "refund"})))
    execute(multi_turn_request(simulator(OPEN, PUSHBACK)), provider)
    context = provider.requests[0].messages[1].content
    assert "Wrong policy!" not in context and "user_simulator" not in context


def test_an_unknown_execution_mode_fails_with_unsupported_capability():
    outcome, recorder = execute(make_request(execution_mode="research"), StubProvider())
    assert outcome.stop_reason == "provider_error"
    assert outcome.provider_failure["code"] == "unsupported_capability"
    assert json.loads(json.dumps(recorder.last("system.run.failed").payload))["stop_reason"] == "provider_error"
