"""multi_turn with ``llm`` user-simulator phases, trigger state and ``until`` conditions."""

from __future__ import annotations

import dataclasses

from engine.modes import llm_phases, run_case, unsupported_simulator_phases
from engine.modes.simulator import ConversationState, until_met
from engine.providers import create_provider
from engine.scoring.evidence import CaseEvidence, extract
from engine.scoring.references import resolve
from engine.scoring.signals import recovery
from engine.tests.loop.fakes import SECRET_EXPECTATION, FakeClock, FakeToolset, Recorder, StubProvider, make_request, tool_response
from engine.types import JSON, ModelResponse, ProviderError, Usage

OPEN = {
    "id": "open",
    "actor": "scripted",
    "turns": [{"message": "Refund order {{order_id}}", "expects": [{"key": "k", "kind": "contains", "value": "refund"}]}],
}
PUSHBACK = {"id": "pushback", "actor": "scripted", "trigger": "on_assistant_mismatch", "turns": [{"message": "Wrong policy!"}]}
LLM = {
    "id": "follow",
    "actor": "llm",
    "trigger": "on_assistant_mismatch",
    "persona": "A frustrated customer who calms down when given a timeline.",
    "max_turns": 3,
    "until": ["assistant_emitted:timeline"],
}
HUMAN = {"id": "human", "actor": "human", "trigger": "manual", "timeout_ms": 1000}


def simulator(*phases, max_turns=12):
    return {"schema_version": 1, "kind": "hybrid", "max_turns": max_turns, "phases": list(phases)}


def request_for(sim, **overrides):
    request = make_request(execution_mode="multi_turn", event_id_prefix="mt:lane-1:case-a:1", **overrides)
    request.case["user_simulator"] = sim
    return request


def submit(answer):
    return tool_response(("submit", {"answer": answer}))


def said(text, tokens=(4, 2)):
    return ModelResponse(
        provider_key="sim-provider",
        provider_model_id="sim-model",
        finish_reason="stop",
        output_text=text,
        usage=Usage(tokens[0], tokens[1], sum(tokens)),
    )


def execute(request, agent, simulator_provider=None):
    recorder, clock = Recorder(), FakeClock()
    outcome = run_case(
        request,
        provider=agent,
        toolset=FakeToolset(),
        event_sink=recorder,
        cancel_check=lambda: False,
        clock=clock,
        sleep=clock.sleep,
        simulator=simulator_provider,
    )
    return outcome, recorder


def evidence_of(recorder):
    events = [{**dataclasses.asdict(e), "sequence_number": i} for i, e in enumerate(recorder.events, 1)]
    return CaseEvidence(case_key="case-a", events=events)


def test_an_llm_phase_runs_after_the_pushback_while_the_mismatch_is_open_until_its_condition_holds():
    agent = StubProvider(submit("Let me look."), submit("Sorry about that."), submit("Here is the timeline: 3-5 days."))
    sim = StubProvider(said("So when do I get my money?"))
    request = request_for(simulator(OPEN, PUSHBACK, LLM, HUMAN), simulator_model="sim-default")
    outcome, recorder = execute(request, agent, sim)

    assert (outcome.status, outcome.final_output) == ("completed", "Here is the timeline: 3-5 days.")
    assert [(t["phase_id"], t["actor"]) for t in outcome.transcript] == [("open", "scripted"), ("pushback", "scripted"), ("follow", "llm")]
    assert outcome.transcript[2]["user_message"] == "So when do I get my money?"
    # one simulator call: the until condition held after the first llm turn
    assert len(sim.requests) == 1
    sent = sim.requests[0]
    assert sent.model == "sim-default" and sent.tools == [] and sent.metadata["purpose"] == "user_simulator"
    prompt = "\n".join(m.content for m in sent.messages)
    assert "A frustrated customer who calms down" in prompt
    assert "user: Wrong policy!\nassistant: Sorry about that." in prompt
    assert SECRET_EXPECTATION not in prompt and "expects" not in prompt
    simulated = recorder.last("turn.user.simulated").payload
    assert (simulated["actor"], simulated["provider_key"], simulated["usage"]["total_tokens"]) == ("llm", "sim-provider", 6)
    # the simulator's tokens are not the agent's
    assert outcome.usage.total_tokens == 3 * 12
    assert recorder.types.count("turn.user.message") == 3


def test_the_human_phase_behind_a_manual_trigger_is_skipped_and_the_conversation_completes():
    agent = StubProvider(submit("Your refund is on its way"))
    outcome, recorder = execute(request_for(simulator(OPEN, PUSHBACK, LLM, HUMAN)), agent)
    assert (outcome.status, [t["phase_id"] for t in outcome.transcript]) == ("completed", ["open"])
    assert "turn.user.simulated" not in recorder.types


def test_an_llm_phase_stops_at_its_max_turns_and_on_max_llm_turns_fires_next():
    after = {"id": "after", "actor": "scripted", "trigger": "on_max_llm_turns", "turns": [{"message": "Last chance."}]}
    agent = StubProvider(*(submit(f"reply {i}") for i in range(6)))
    sim = StubProvider(said("again?"), said("and again?"), said("still?"))
    outcome, _ = execute(request_for(simulator(OPEN, PUSHBACK, LLM, after)), agent, sim)
    assert [t["phase_id"] for t in outcome.transcript] == ["open", "pushback", "follow", "follow", "follow", "after"]
    assert len(sim.requests) == 3


def test_on_max_llm_turns_does_not_fire_when_the_until_condition_held():
    after = {"id": "after", "actor": "scripted", "trigger": "on_max_llm_turns", "turns": [{"message": "Last chance."}]}
    agent = StubProvider(submit("no"), submit("no"), submit("timeline: tomorrow"))
    outcome, _ = execute(request_for(simulator(OPEN, PUSHBACK, LLM, after)), agent, StubProvider(said("when?")))
    assert [t["phase_id"] for t in outcome.transcript] == ["open", "pushback", "follow"]


def test_the_conversation_limit_ends_an_llm_phase_without_failing_the_case():
    agent = StubProvider(*(submit(f"reply {i}") for i in range(4)))
    sim = StubProvider(*(said(f"msg {i}") for i in range(4)))
    outcome, _ = execute(request_for(simulator(OPEN, PUSHBACK, {**LLM, "max_turns": 0}, max_turns=3)), agent, sim)
    assert (outcome.status, len(outcome.transcript)) == ("completed", 3)


def test_a_passing_checked_turn_closes_the_mismatch():
    recheck = {
        "id": "recheck",
        "actor": "scripted",
        "trigger": "on_assistant_mismatch",
        "turns": [{"message": "Say refund.", "expects": [{"key": "k", "kind": "contains", "value": "refund"}]}],
    }
    agent = StubProvider(submit("no"), submit("fine"), submit("refund issued"))
    outcome, _ = execute(request_for(simulator(OPEN, PUSHBACK, recheck, LLM)), agent, StubProvider(said("x")))
    assert [t["phase_id"] for t in outcome.transcript] == ["open", "pushback", "recheck"]
    state = ConversationState()
    assert state.record_checks([{"passed": False}]) is True and state.open_mismatch
    assert state.record_checks([{"passed": None}]) is False and state.open_mismatch  # unchecked: unchanged
    assert state.record_checks([{"passed": True}]) is False and not state.open_mismatch


def test_an_llm_phase_without_a_simulator_fails_with_simulator_error():
    outcome, _ = execute(request_for(simulator(OPEN, PUSHBACK, LLM)), StubProvider(submit("no"), submit("sorry")))
    assert (outcome.status, outcome.stop_reason) == ("failed", "simulator_error")
    assert "no simulator deployment" in outcome.error


def test_a_simulator_failure_names_the_provider_that_was_called():
    sim = StubProvider(ProviderError("auth", "bad key"))
    outcome, _ = execute(request_for(simulator(OPEN, PUSHBACK, LLM), simulator_model="m"), StubProvider(submit("no"), submit("x")), sim)
    assert outcome.stop_reason == "simulator_error"
    assert outcome.error == "user simulator (stub, model m) failed: auth: bad key"


def test_an_empty_simulated_message_is_a_simulator_error():
    outcome, _ = execute(request_for(simulator(OPEN, PUSHBACK, LLM)), StubProvider(submit("no"), submit("x")), StubProvider(said("  ")))
    assert outcome.stop_reason == "simulator_error" and "empty message" in outcome.error


def test_a_phase_model_overrides_the_simulator_deployment_model():
    sim = StubProvider(said("ok"))
    phase = {**LLM, "model": "phase-model", "until": ["max_turns"], "max_turns": 1}
    execute(
        request_for(simulator(OPEN, PUSHBACK, phase), simulator_model="deployment-model"),
        StubProvider(submit("no"), submit("x"), submit("y")),
        sim,
    )
    assert sim.requests[0].model == "phase-model"


def test_the_scripted_provider_plays_the_simulator_by_what_the_assistant_said():
    config: dict[str, JSON] = {
        "replies": [
            {"purpose": "user_simulator", "when": ["assistant: Sorry, here is the timeline"], "reply": "Thanks, that works."},
            {"purpose": "user_simulator", "reply": "That does not answer me."},
        ]
    }
    sim = create_provider("scripted", api_key=None, base_url=None, deployment_config=config)
    agent = StubProvider(submit("no"), submit("Sorry, here is the timeline"), submit("You're welcome, timeline sent."))
    outcome, _ = execute(request_for(simulator(OPEN, PUSHBACK, LLM)), agent, sim)
    assert outcome.transcript[2]["user_message"] == "Thanks, that works."


def test_until_conditions():
    assert until_met(["assistant_emitted:Timeline"], assistant_text="the timeline", user_message="", phase_turns=1, phase_max=3)
    assert not until_met(
        ["assistant_emitted:timeline", "user_token:thanks"], assistant_text="timeline", user_message="", phase_turns=1, phase_max=3
    )
    assert until_met(["max_turns"], assistant_text="", user_message="", phase_turns=3, phase_max=3)
    assert not until_met([], assistant_text="x", user_message="x", phase_turns=9, phase_max=1)
    assert not until_met(["something_else"], assistant_text="x", user_message="x", phase_turns=1, phase_max=1)


def test_llm_and_unsupported_phases_are_listed_only_when_their_trigger_can_fire():
    case = {"user_simulator": simulator(OPEN, PUSHBACK, LLM, HUMAN, {**LLM, "id": "never", "trigger": "never"})}
    assert [p["id"] for p in llm_phases(case)] == ["follow"]
    assert unsupported_simulator_phases(case) == []
    case = {"user_simulator": simulator(OPEN, {**HUMAN, "trigger": "on_max_llm_turns"})}
    assert [(p.phase_id, p.actor, p.trigger) for p in unsupported_simulator_phases(case)] == [("human", "human", "on_max_llm_turns")]


# -- the mismatch reaches the scorer ------------------------------------------------------------


def test_a_mismatch_reaches_recovery_and_transcript_from_mismatch():
    recovered = StubProvider(submit("Let me look."), submit("Sorry, full refund today."))
    _, recorder = execute(request_for(simulator(OPEN, PUSHBACK)), recovered)
    evidence = evidence_of(recorder)
    extracted = extract(evidence)
    assert [(t.role, t.mismatch) for t in extracted.turns] == [("user", False), ("assistant", True), ("user", False), ("assistant", False)]
    assert recovery(extracted) == 1.0
    resolved = resolve("transcript.from_mismatch", evidence, extracted)
    assert resolved.ok and resolved.value == "assistant: Let me look.\nuser: Wrong policy!\nassistant: Sorry, full refund today."


def test_repeating_the_reply_that_missed_is_no_recovery():
    stuck = StubProvider(submit("Let me look."), submit("Let me look."))
    _, recorder = execute(request_for(simulator(OPEN, PUSHBACK)), stuck)
    assert recovery(extract(evidence_of(recorder))) == 0.0


def test_without_a_mismatch_from_mismatch_is_not_applicable():
    _, recorder = execute(request_for(simulator(OPEN, PUSHBACK)), StubProvider(submit("refund issued")))
    evidence = evidence_of(recorder)
    extracted = extract(evidence)
    assert recovery(extracted) == 1.0
    assert resolve("transcript.from_mismatch", evidence, extracted).state == "not_applicable"
