"""Per-case ``user_simulator`` (spec §2.14, §3.12): one case per rule, pinning every error of the bundle."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from .rules import Errors, Mutation, case, errors_after

US = "input_sets[0].cases[0].user_simulator"
P0 = f"{US}.phases[0]"
P1 = f"{US}.phases[1]"
Change = Callable[[dict[str, Any]], object]

SIMULATOR: dict[str, Any] = {
    "schema_version": 1,
    "kind": "hybrid",
    "max_turns": 4,
    "phases": [
        {"id": "open", "actor": "scripted", "turns": [{"message": "Order {{order_id}}", "expects": [{"key": "answer", "kind": "text"}]}]},
        {"id": "llm", "actor": "llm", "trigger": "on_assistant_mismatch", "persona": "p", "model": "gpt-4o", "until": ["done"]},
        {"id": "human", "actor": "human", "trigger": "manual", "timeout_ms": 1000, "on_timeout": "fail"},
    ],
    "calibration": {"enabled": True, "sample_rate": 0.5},
    "post_run": {"arena": {"enabled": True, "comparison": "pairwise"}},
}


def simulated(change: Change) -> Mutation:
    """A multi_turn bundle whose only case carries ``SIMULATOR`` after ``change``."""

    def mutate(b: dict[str, Any]) -> None:
        b["version"]["execution_mode"] = "multi_turn"
        simulator = copy.deepcopy(SIMULATOR)
        change(simulator)
        case(b).update(payload={"order_id": "A1"}, user_simulator=simulator)

    return mutate


def phase(index: int, **fields: Any) -> Change:
    return lambda s: s["phases"][index].update(fields)


def turn(**fields: Any) -> Change:
    return lambda s: s["phases"][0]["turns"][0].update(fields)


RULES = [
    pytest.param(
        lambda b: case(b).update(user_simulator={"schema_version": 2}),
        [(US, "is only allowed when version.execution_mode is multi_turn")],
        id="only in multi_turn and nothing else checked",
    ),
    pytest.param(
        lambda b: b["version"].update(execution_mode="multi_turn"),
        [(US, "is required when version.execution_mode is multi_turn")],
        id="required in multi_turn",
    ),
    pytest.param(simulated(lambda s: s.update(schema_version=2)), [(f"{US}.schema_version", "must be 1")], id="schema_version"),
    pytest.param(simulated(lambda s: s.pop("schema_version")), [(f"{US}.schema_version", "must be 1")], id="schema_version required"),
    pytest.param(simulated(lambda s: s.update(kind="scripted")), [(f"{US}.kind", 'must be "hybrid"')], id="kind"),
    pytest.param(
        simulated(lambda s: s.update(max_turns=-1)),
        [(f"{US}.max_turns", "must be greater than or equal to 0")],
        id="max_turns not negative",
    ),
    pytest.param(simulated(lambda s: s.update(phases=[])), [(f"{US}.phases", "must contain at least one phase")], id="phases required"),
    pytest.param(simulated(phase(1, id=" ")), [(f"{P1}.id", "is required")], id="phase id required"),
    pytest.param(simulated(phase(1, id="open")), [(f"{P1}.id", "must be unique")], id="phase id unique"),
    pytest.param(simulated(phase(1, actor=" ", model="")), [(f"{P1}.actor", "is required")], id="actor required"),
    pytest.param(
        simulated(phase(1, actor="robot", model="")),
        [(f"{P1}.actor", "must be one of scripted, llm, human")],
        id="actor enum",
    ),
    pytest.param(
        simulated(phase(1, trigger="on_full_moon")),
        [(f"{P1}.trigger", "must be a supported trigger expression")],
        id="trigger enum",
    ),
    pytest.param(
        simulated(phase(0, trigger="manual")),
        [(f"{P0}.trigger", 'first phase trigger must be empty or "always"')],
        id="first trigger",
    ),
    pytest.param(
        simulated(phase(1, trigger="always")),
        [(f"{P1}.trigger", 'only the first phase may use "always"')],
        id="later phase always",
    ),
    pytest.param(
        simulated(phase(2, trigger=" ")),
        [(f"{US}.phases[2].trigger", 'only the first phase may use "always"')],
        id="later phase empty trigger",
    ),
    pytest.param(
        simulated(phase(0, turns=[])),
        [(f"{P0}.turns", "must contain at least one turn for scripted actor")],
        id="scripted needs turns",
    ),
    pytest.param(simulated(turn(message="  ")), [(f"{P0}.turns[0].message", "is required for scripted turns")], id="turn message required"),
    pytest.param(
        simulated(turn(expects=[{"key": "answer", "kind": "text", "source": "input: nope"}])),
        [(f"{P0}.turns[0].expects[0].source", "must reference a declared case input")],
        id="turn expects follow case expectation rules",
    ),
    pytest.param(
        simulated(turn(message="Order {{nope}}")),
        [(f"{P0}.turns[0].message", "unresolved placeholder {{nope}} for case template context")],
        id="turn message placeholders resolve",
    ),
    pytest.param(simulated(phase(1, persona=" ")), [(f"{P1}.persona", "is required for llm actor")], id="llm needs persona"),
    pytest.param(
        simulated(phase(1, max_turns=-1)),
        [(f"{P1}.max_turns", "must be greater than or equal to 0")],
        id="llm max_turns not negative",
    ),
    pytest.param(
        simulated(phase(1, until=["done", " "])),
        [(f"{P1}.until[1]", "must be a non-empty condition expression")],
        id="llm until entries",
    ),
    pytest.param(
        simulated(phase(2, timeout_ms=-1)),
        [(f"{US}.phases[2].timeout_ms", "must be greater than or equal to 0")],
        id="human timeout not negative",
    ),
    *[
        pytest.param(
            simulated(phase(index, model="gpt-4o")),
            [(f"{US}.phases[{index}].model", "is only valid on phases with actor: llm")],
            id=f"no model on {actor}",
        )
        for index, actor in ((0, "scripted"), (2, "human"))
    ],
    pytest.param(
        simulated(lambda s: s.update(calibration={"enabled": True, "sample_rate": 1.5})),
        [(f"{US}.calibration.sample_rate", "must be greater than 0 and at most 1 when calibration is enabled")],
        id="calibration rate range",
    ),
    pytest.param(
        simulated(lambda s: s.update(calibration={"enabled": True})),
        [(f"{US}.calibration.sample_rate", "must be greater than 0 and at most 1 when calibration is enabled")],
        id="calibration rate required",
    ),
    pytest.param(
        simulated(lambda s: s.update(post_run={"arena": {"enabled": True, "comparison": "ranked"}})),
        [(f"{US}.post_run.arena.comparison", 'must be one of "pairwise"')],
        id="arena comparison",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), RULES)
def test_it_reports_each_user_simulator_rule_with_its_field_and_message(mutate: Mutation, expected: Errors) -> None:
    assert errors_after(mutate) == expected


ACCEPTED = [
    pytest.param(simulated(lambda s: None), id="full simulator"),
    pytest.param(simulated(phase(0, trigger="always")), id="first phase always"),
    pytest.param(simulated(phase(0, persona="ignored", timeout_ms=-1, max_turns=-1)), id="other actors' fields ignored"),
    pytest.param(simulated(phase(2, trigger="never", max_turns=-1, until=[""])), id="llm fields ignored on human"),
    pytest.param(simulated(lambda s: s.update(calibration={"enabled": False, "sample_rate": 9})), id="calibration disabled"),
    pytest.param(simulated(lambda s: s.update(calibration={"enabled": True, "sample_rate": 1})), id="calibration rate 1"),
    pytest.param(simulated(lambda s: s.update(post_run={"arena": {"enabled": False, "comparison": "x"}})), id="arena disabled"),
    pytest.param(simulated(lambda s: s.update(post_run={"arena": {"enabled": True}})), id="arena comparison empty"),
    pytest.param(simulated(turn(message="Order {{order-id}}")), id="non-placeholder braces"),
]


@pytest.mark.parametrize("mutate", ACCEPTED)
def test_it_accepts_well_formed_user_simulators(mutate: Mutation) -> None:
    assert errors_after(mutate) == []


def test_it_reports_a_simulators_problems_in_rule_order() -> None:
    broken = {
        "schema_version": 0,
        "kind": "",
        "max_turns": -1,
        "phases": [
            {"id": "a", "actor": "scripted", "trigger": "manual", "model": "m", "turns": [{"message": "", "expects": [{"kind": "text"}]}]},
            {"id": "a", "actor": "", "trigger": "bogus", "model": "m"},
            {"actor": "llm", "persona": "", "max_turns": -1, "until": [""]},
            {"id": "h", "actor": "human", "timeout_ms": -1, "model": "m"},
        ],
        "calibration": {"enabled": True, "sample_rate": 0},
        "post_run": {"arena": {"enabled": True, "comparison": "x"}},
    }

    def replace(simulator: dict[str, Any]) -> None:
        simulator.clear()
        simulator.update(copy.deepcopy(broken))

    assert errors_after(simulated(replace)) == [
        (f"{US}.schema_version", "must be 1"),
        (f"{US}.kind", 'must be "hybrid"'),
        (f"{US}.max_turns", "must be greater than or equal to 0"),
        (f"{P0}.trigger", 'first phase trigger must be empty or "always"'),
        (f"{P0}.turns[0].message", "is required for scripted turns"),
        (f"{P0}.turns[0].expects[0].key", "is required"),
        (f"{P0}.model", "is only valid on phases with actor: llm"),
        (f"{P1}.id", "must be unique"),
        (f"{P1}.actor", "is required"),
        (f"{P1}.trigger", "must be a supported trigger expression"),
        (f"{US}.phases[2].id", "is required"),
        (f"{US}.phases[2].trigger", 'only the first phase may use "always"'),
        (f"{US}.phases[2].persona", "is required for llm actor"),
        (f"{US}.phases[2].max_turns", "must be greater than or equal to 0"),
        (f"{US}.phases[2].until[0]", "must be a non-empty condition expression"),
        (f"{US}.phases[3].trigger", 'only the first phase may use "always"'),
        (f"{US}.phases[3].timeout_ms", "must be greater than or equal to 0"),
        (f"{US}.phases[3].model", "is only valid on phases with actor: llm"),
        (f"{US}.calibration.sample_rate", "must be greater than 0 and at most 1 when calibration is enabled"),
        (f"{US}.post_run.arena.comparison", 'must be one of "pairwise"'),
    ]
