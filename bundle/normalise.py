"""Normalisation (spec §2.13). Works in place on the freshly decoded bundle dict."""

from __future__ import annotations

from typing import Any


def _trim(obj: dict[str, Any], *keys: str, lower: bool = False) -> None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str):
            value = value.strip()
            obj[key] = value.lower() if lower else value


def _assets(items: list[dict[str, Any]] | None) -> None:
    for asset in items or ():
        _trim(asset, "key", "kind", "path", "media_type")


def _refs(items: list[dict[str, Any]] | None) -> None:
    for ref in items or ():
        _trim(ref, "key")


def normalise_bundle(bundle: dict[str, Any]) -> dict[str, Any]:
    pack = bundle.get("pack")
    if pack is not None:
        _trim(pack, "slug", "name")
        _trim(pack, "family", lower=True)
    _trim(bundle, "modality")
    version = bundle.get("version")
    if version is not None:
        _normalise_version(version)
    for challenge in bundle.get("challenges") or ():
        _normalise_challenge(challenge)
    for input_set in bundle.get("input_sets") or ():
        _normalise_input_set(input_set)
    interface = bundle.get("interface_spec")
    if interface is not None:
        _trim(interface, "channel_profile")
        if interface.get("transports"):
            interface["transports"] = [t.strip() for t in interface["transports"]]
    scenario = bundle.get("scenario")
    if scenario is not None:
        _trim(scenario, "persona", "language")
    security = bundle.get("security")
    if security is not None:
        _normalise_security(security)
    return bundle


def _normalise_version(version: dict[str, Any]) -> None:
    _trim(version, "execution_mode")
    _assets(version.get("assets"))
    defaults = version.get("deployment_defaults")
    if defaults is not None:
        _normalise_deployment_defaults(defaults)
        if not defaults.get("aliases") and not defaults.get("lineups"):
            del version["deployment_defaults"]


def _normalise_challenge(challenge: dict[str, Any]) -> None:
    _trim(challenge, "key", "title", "category", "difficulty", "instructions")
    definition = challenge.get("definition")
    if definition is None:
        definition = challenge["definition"] = {}
    instructions = challenge.get("instructions")
    if instructions and "instructions" not in definition:
        definition["instructions"] = instructions
    _assets(challenge.get("assets"))
    _refs(challenge.get("artifact_refs"))


def _normalise_input_set(input_set: dict[str, Any]) -> None:
    _trim(input_set, "key", "name")
    items = input_set.pop("items", None)
    if not input_set.get("cases") and items:
        input_set["cases"] = [_case_from_item(item) for item in items]
    for case in input_set.get("cases") or ():
        _normalise_case(case)


def _case_from_item(item: dict[str, Any]) -> dict[str, Any]:
    """A legacy ``items[]`` entry as a case: its ``item_key`` is the case key."""
    fields = (
        ("challenge_key", item.get("challenge_key")),
        ("case_key", item.get("item_key")),
        ("item_key", item.get("item_key")),
        ("payload", item.get("payload")),
        ("assets", item.get("assets")),
    )
    return {key: value for key, value in fields if value is not None}


def _normalise_case(case: dict[str, Any]) -> None:
    _trim(case, "challenge_key", "case_key", "item_key")
    if not case.get("case_key") and case.get("item_key"):
        case["case_key"] = case["item_key"]
    if not case.get("item_key") and case.get("case_key"):
        case["item_key"] = case["case_key"]
    if case.get("payload") is None:
        case["payload"] = {}
    for item in case.get("inputs") or ():
        _trim(item, "key", "kind", "artifact_key", "path")
    for item in case.get("expectations") or ():
        _trim(item, "key", "kind", "artifact_key", "source")
    _refs(case.get("artifacts"))
    _assets(case.get("assets"))


def _normalise_deployment_defaults(defaults: dict[str, Any]) -> None:
    aliases = defaults.get("aliases")
    if aliases is not None:
        defaults["aliases"] = {k.strip(): v.strip() for k, v in aliases.items()}
    lineups = defaults.get("lineups")
    if lineups is not None:
        defaults["lineups"] = {k.strip(): [s.strip() for s in selectors] for k, selectors in lineups.items()}


def _normalise_security(security: dict[str, Any]) -> None:
    _trim(security, "default_severity", lower=True)
    for secret in security.get("planted_secrets") or ():
        _trim(secret, "name", "value", "file_path")
        _trim(secret, "location", "severity", lower=True)
    for output in security.get("forbidden_outputs") or ():
        _trim(output, "description", "pattern", "substring")
        _trim(output, "severity", lower=True)
    for egress in security.get("forbidden_egress") or ():
        _trim(egress, "description")
        _trim(egress, "host", "severity", lower=True)
        if egress.get("allow"):
            egress["allow"] = [a.strip().lower() for a in egress["allow"]]
    for prompt in security.get("adversarial_prompts") or ():
        _trim(prompt, "name", "expected_refusal_pattern")
        _trim(prompt, "strategy", lower=True)
