"""The shape of a scripted deployment's ``script_mix`` and ``seed`` (infrastructure/scripted_config.py)."""

from __future__ import annotations

import pytest

from infrastructure.scripted_config import scripted_config_errors

SCRIPT = {"default": [{"submit": "a"}]}


def test_a_weighted_mix_with_a_seed_is_valid():
    assert scripted_config_errors({"script_mix": [{"weight": 0.7, "script": SCRIPT}, {"weight": 3, "script": SCRIPT}], "seed": 7}) == []


@pytest.mark.parametrize(
    ("config", "error"),
    [
        (
            {"script": SCRIPT, "script_mix": [{"weight": 1, "script": SCRIPT}]},
            "deployment_config.script_mix: use script or script_mix, not both",
        ),
        ({"script_mix": []}, "deployment_config.script_mix: must be a non-empty list"),
        ({"script_mix": {"weight": 1}}, "deployment_config.script_mix: must be a non-empty list"),
        ({"script_mix": ["x"]}, "deployment_config.script_mix[0]: must be an object"),
        ({"script_mix": [{"weight": 0, "script": SCRIPT}]}, "deployment_config.script_mix[0].weight: must be a number greater than 0"),
        ({"script_mix": [{"weight": -1, "script": SCRIPT}]}, "deployment_config.script_mix[0].weight: must be a number greater than 0"),
        ({"script_mix": [{"weight": True, "script": SCRIPT}]}, "deployment_config.script_mix[0].weight: must be a number greater than 0"),
        ({"script_mix": [{"script": SCRIPT}]}, "deployment_config.script_mix[0].weight: must be a number greater than 0"),
        ({"script_mix": [{"weight": 1}]}, "deployment_config.script_mix[0].script: is required"),
        (
            {"script_mix": [{"weight": 1, "script": "go"}]},
            "deployment_config.script_mix[0].script: must be an object with default and/or cases",
        ),
        (
            {"script_mix": [{"weight": 1, "script": SCRIPT}, {"weight": 1, "script": {"default": [{"tool": ""}]}}]},
            "deployment_config.script_mix[1].script.default[0].tool: must be the tool's name",
        ),
        ({"script_mix": [{"weight": 1, "script": SCRIPT, "p": 1}]}, "deployment_config.script_mix[0]: unknown field(s) p"),
        ({"script": SCRIPT, "seed": "7"}, "deployment_config.seed: must be an integer"),
        ({"script_mix": [{"weight": 1, "script": SCRIPT}], "seed": 1.5}, "deployment_config.seed: must be an integer"),
    ],
)
def test_a_bad_mix_or_seed_is_refused_with_its_path(config, error):
    errors = scripted_config_errors(config)
    assert any(message.startswith(error) for message in errors), errors
