"""Race context in the agent loop: when the peers' standings are told, and how they are recorded."""

from __future__ import annotations

from engine.modes import run_case
from engine.tests.loop.fakes import FakeClock, FakeToolset, Recorder, StubProvider, make_request, tool_response

READ = ("read_file", {"path": "a"})


def execute(standings, *, reads: int, execution_mode: str = "native"):
    provider = StubProvider(*[tool_response(READ) for _ in range(reads)], tool_response(("submit", {"answer": "ok"})))
    recorder, clock = Recorder(), FakeClock()
    outcome = run_case(
        make_request(execution_mode=execution_mode, runtime_profile={"max_iterations": 20}),
        provider=provider,
        toolset=FakeToolset(),
        event_sink=recorder,
        cancel_check=lambda: False,
        clock=clock,
        sleep=clock.sleep,
        standings=standings,
    )
    return outcome, recorder, provider


def user_notes(request):
    return [m.content for m in request.messages if m.role == "user" and m.content.startswith("Race context")]


def test_standings_are_told_from_step_three_as_a_user_message_and_recorded():
    outcome, recorder, provider = execute(lambda: "lane B (other) has finished 1/3 cases, 1 passed.", reads=3)
    assert outcome.status == "completed"
    assert [len(user_notes(r)) for r in provider.requests] == [0, 0, 1, 1]
    note = user_notes(provider.requests[2])[0]
    assert note == "Race context (your step 3): lane B (other) has finished 1/3 cases, 1 passed."
    # The note is the last message the step-3 call received, after the previous step's tool result.
    assert provider.requests[2].messages[-1].content == note
    (event,) = recorder.of_type("race.standings.injected")
    assert event.payload["standings_snapshot"] == note and event.payload["triggered_by"] == "cadence"
    assert event.payload["self_step_index"] == 3 and event.payload["tokens_added"] == event.payload["tokens"] > 0
    # model.call.started records the model's input, so the replay shows what the agent was told.
    started = recorder.of_type("model.call.started")[2].payload
    assert note in [m["content"] for m in started["messages"]]


def test_a_change_is_told_at_once_and_unchanged_standings_every_third_step():
    texts = iter(["B: 0/3", "B: 0/3", "B: 1/3", "B: 1/3", "B: 1/3", "B: 1/3", "B: 1/3"])
    _, recorder, _ = execute(lambda: next(texts), reads=7)
    told = [(e.payload["self_step_index"], e.payload["triggered_by"]) for e in recorder.of_type("race.standings.injected")]
    assert told == [(3, "cadence"), (5, "peer_progress"), (8, "cadence")]


def test_nothing_is_told_without_peers_or_when_the_source_fails():
    outcome, recorder, provider = execute(lambda: "", reads=4)
    assert outcome.status == "completed" and not recorder.of_type("race.standings.injected")

    def broken() -> str:
        raise RuntimeError("database went away")

    outcome, recorder, provider = execute(broken, reads=4)
    assert outcome.status == "completed" and not recorder.of_type("race.standings.injected")
    assert not any(user_notes(r) for r in provider.requests)


def test_without_a_standings_source_the_loop_is_unchanged():
    _, with_none, provider = execute(None, reads=4)
    assert not with_none.of_type("race.standings.injected") and not any(user_notes(r) for r in provider.requests)


def test_responses_mode_tells_the_standings_too():
    _, recorder, provider = execute(lambda: "lane B finished", reads=3, execution_mode="responses")
    assert user_notes(provider.requests[2]) == ["Race context (your step 3): lane B finished"]
    assert recorder.of_type("race.standings.injected")[0].source == "responses_engine"
