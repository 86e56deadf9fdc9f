"""The scripted provider's ``script_mix``: one script per trial, drawn by (seed, case key, trial)."""

from __future__ import annotations

import json
from collections import Counter

from engine.providers import create_provider
from engine.providers.scripted import drawn_script
from engine.types import Message, ModelRequest, ToolDefinition

TOOLS = [ToolDefinition("submit", "", {})]
A, B, C = ({"default": [{"submit": name}]} for name in ("a", "b", "c"))


def answer(config, *, case_key="case-1", trial=0):
    provider = create_provider("scripted", api_key=None, base_url=None, deployment_config=config, case_key=case_key, trial=trial)
    response = provider.complete(ModelRequest(model="m", messages=[Message("user", "go")], tools=TOOLS))
    return json.loads(response.tool_calls[0].arguments)["answer"], response.raw_response


def mix(*weighted, seed=None):
    config = {"script_mix": [{"weight": weight, "script": script} for weight, script in weighted]}
    return config if seed is None else {**config, "seed": seed}


def test_the_same_seed_case_and_trial_always_play_the_same_script():
    config = mix((1, A), (1, B), (1, C), seed=3)
    first = [answer(config, case_key=f"k{i}", trial=t)[0] for i in range(20) for t in range(5)]
    assert [answer(config, case_key=f"k{i}", trial=t)[0] for i in range(20) for t in range(5)] == first
    assert set(first) == {"a", "b", "c"}


def test_the_trial_the_case_key_and_the_seed_each_change_the_draw():
    config = mix((1, A), (1, B), seed=1)
    by_trial = {answer(config, trial=t)[0] for t in range(30)}
    by_case = {answer(config, case_key=f"k{i}")[0] for i in range(30)}
    by_seed = {answer({**config, "seed": s})[0] for s in range(30)}
    assert by_trial == by_case == by_seed == {"a", "b"}


def test_the_draws_follow_the_weights():
    config = mix((0.7, A), (0.2, B), (0.1, C), seed=42)
    counts = Counter(drawn_script(config, f"case-{i}", t)[1] for i in range(500) for t in range(6))
    assert abs(counts[0] / 3000 - 0.7) < 0.035 and abs(counts[1] / 3000 - 0.2) < 0.03 and abs(counts[2] / 3000 - 0.1) < 0.025


def test_the_response_names_the_drawn_entry_and_a_plain_script_does_not():
    value, raw = answer(mix((1, A), (0.000001, B)))
    assert value == "a" and raw == {"scripted_step": 0, "scripted_mix_entry": 0}
    value, raw = answer({"script": B})
    assert value == "b" and raw == {"scripted_step": 0}


def test_without_a_seed_or_a_trial_the_draw_is_that_of_seed_0_and_trial_0():
    config = mix((1, A), (1, B), (1, C))
    assert [answer(config, case_key=f"k{i}")[0] for i in range(10)] == [
        answer({**config, "seed": 0}, case_key=f"k{i}", trial=0)[0] for i in range(10)
    ]


def test_entries_without_a_positive_weight_are_never_drawn():
    config = mix((0, A), (-1, B), (True, A), (1, C), seed=5)
    assert {answer(config, trial=t)[0] for t in range(20)} == {"c"}
