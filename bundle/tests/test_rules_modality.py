"""Voice modality (spec §2.11, §3.2): one case per rule, pinning every error of the bundle."""

from __future__ import annotations

from typing import Any

import pytest

from .rules import Errors, Mutation, errors_after

INTERFACE: dict[str, Any] = {"transports": ["sip", "webrtc"], "channel_profile": "telephony"}
SCENARIO: dict[str, Any] = {"persona": "caller", "language": "en", "max_turns": 4, "max_duration_ms": 60000}


def voice(interface: dict[str, Any] | None = INTERFACE, scenario: dict[str, Any] | None = SCENARIO, **top: Any) -> Mutation:
    def mutate(b: dict[str, Any]) -> None:
        b["modality"] = " voice "
        if interface is not None:
            b["interface_spec"] = dict(interface)
        if scenario is not None:
            b["scenario"] = dict(scenario)
        b.update(top)

    return mutate


RULES = [
    pytest.param(
        lambda b: b.update(interface_spec=INTERFACE, scenario=SCENARIO),
        [("modality", "is required when interface_spec is set"), ("modality", "is required when scenario is set")],
        id="modality required by voice blocks",
    ),
    pytest.param(
        lambda b: b.update(modality="video", interface_spec={}),
        [("modality", 'must be "voice" when specified')],
        id="modality enum stops the checks",
    ),
    pytest.param(voice(interface=None), [("interface_spec", "is required when modality is voice")], id="interface required"),
    pytest.param(
        voice(interface={"channel_profile": "p"}),
        [("interface_spec.transports", "must contain at least one transport")],
        id="transports required",
    ),
    pytest.param(
        voice(interface={"transports": ["sip", "fax", "sip", "fax"], "channel_profile": "p"}),
        [
            ("interface_spec.transports[1]", "must be one of text_sim, webrtc, sip, pstn, websocket"),
            ("interface_spec.transports[2]", "must be unique"),
            ("interface_spec.transports[3]", "must be one of text_sim, webrtc, sip, pstn, websocket"),
        ],
        id="transport enum and uniqueness",
    ),
    pytest.param(
        voice(interface={"transports": ["sip"], "channel_profile": " "}),
        [("interface_spec.channel_profile", "is required when modality is voice")],
        id="channel profile required",
    ),
    pytest.param(voice(scenario=None), [("scenario", "is required when modality is voice")], id="scenario required"),
    pytest.param(
        voice(scenario={"max_turns": 0, "max_duration_ms": -1}),
        [
            ("scenario.persona", "is required when modality is voice"),
            ("scenario.language", "is required when modality is voice"),
            ("scenario.max_turns", "must be greater than 0 when modality is voice"),
            ("scenario.max_duration_ms", "must be greater than 0 when modality is voice"),
        ],
        id="scenario fields",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), RULES)
def test_it_reports_each_modality_rule_with_its_field_and_message(mutate: Mutation, expected: Errors) -> None:
    assert errors_after(mutate) == expected


def test_it_accepts_a_voice_pack() -> None:
    assert errors_after(voice()) == []


def test_it_reports_both_missing_voice_blocks() -> None:
    assert errors_after(voice(interface=None, scenario=None)) == [
        ("interface_spec", "is required when modality is voice"),
        ("scenario", "is required when modality is voice"),
    ]
