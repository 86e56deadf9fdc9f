"""Voice modality rules (spec §2.11, §3.2)."""

from __future__ import annotations

from typing import Any

from bundle.validate.common import Report, blank

TRANSPORTS = ("text_sim", "webrtc", "sip", "pstn", "websocket")


def validate_modality(bundle: dict[str, Any], report: Report) -> None:
    modality = bundle.get("modality") or ""
    interface = bundle.get("interface_spec")
    scenario = bundle.get("scenario")
    if not modality:
        if interface is not None:
            report.add("modality", "is required when interface_spec is set")
        if scenario is not None:
            report.add("modality", "is required when scenario is set")
        return
    if modality != "voice":
        report.add("modality", 'must be "voice" when specified')
        return
    if interface is None:
        report.add("interface_spec", "is required when modality is voice")
    else:
        _check_interface(interface, report)
    if scenario is None:
        report.add("scenario", "is required when modality is voice")
    else:
        _check_scenario(scenario, report)


def _check_interface(interface: dict[str, Any], report: Report) -> None:
    transports = interface.get("transports") or []
    if not transports:
        report.add("interface_spec.transports", "must contain at least one transport")
    seen: set[str] = set()
    for index, transport in enumerate(transports):
        field = f"interface_spec.transports[{index}]"
        if transport not in TRANSPORTS:
            report.add(field, "must be one of text_sim, webrtc, sip, pstn, websocket")
        elif transport in seen:
            report.add(field, "must be unique")
        seen.add(transport)
    if blank(interface.get("channel_profile")):
        report.add("interface_spec.channel_profile", "is required when modality is voice")


def _check_scenario(scenario: dict[str, Any], report: Report) -> None:
    for key in ("persona", "language"):
        if blank(scenario.get(key)):
            report.add(f"scenario.{key}", "is required when modality is voice")
    for key in ("max_turns", "max_duration_ms"):
        if (scenario.get(key) or 0) <= 0:
            report.add(f"scenario.{key}", "must be greater than 0 when modality is voice")
