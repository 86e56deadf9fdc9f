from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bundle import (
    ValidationError,
    bundle_from_manifest,
    format_errors_text,
    process_bundle,
    publication_rows,
    referenced_secrets,
)

from .rules import manifest_of

HERE = Path(__file__).resolve().parents[2] / "packs" / "tests"
PACKS = (
    sorted((HERE.parent / "library").glob("*.yaml"))
    + sorted(p for p in (HERE / "data" / "examples").glob("*.yaml") if p.name != "cli-smoke-ruff.yaml")
    + sorted((HERE.parent / "demo").glob("*.yaml"))
)


@pytest.mark.parametrize("path", PACKS, ids=lambda p: p.name)
def test_a_manifest_round_trips_to_the_same_manifest_and_checksum(path: Path) -> None:
    first = process_bundle(path.read_bytes())
    assert first.manifest is not None, first.error_text
    again = process_bundle(json.dumps(bundle_from_manifest(first.manifest)))
    assert again.valid, again.error_text
    assert again.manifest == first.manifest
    assert again.checksum == first.checksum


def test_the_manifest_has_the_documented_shape(bundle: dict[str, Any]) -> None:
    bundle["challenges"][0]["definition"] = None
    bundle["version"]["sandbox"] = {}
    manifest = manifest_of(bundle)
    assert manifest["schema_version"] == 1
    assert manifest["version"] == {"number": 1, "assets": None, "execution_mode": "native", "sandbox_template_id": ""}
    assert manifest["sandbox"] == {"network_access": False}
    assert manifest["tool_policy"] is None
    spec = manifest["evaluation_spec"]
    assert spec["metrics"] is None and spec["runtime_limits"] == {} and spec["pricing"] == {}
    assert spec["scorecard"]["dimensions"] == [{"key": "correctness", "source": ""}]
    assert spec["scorecard"]["normalization"] == {}
    assert manifest["challenges"][0]["definition"] == {"instructions": "Do it"}
    case = manifest["input_sets"][0]["cases"][0]
    assert case["case_key"] == case["item_key"] == "k1"
    assert "payload" not in case


def test_publication_rows_describe_pack_version_challenges_and_cases(bundle: dict[str, Any]) -> None:
    bundle["input_sets"][0]["cases"].append({"challenge_key": "c1", "case_key": "k2", "payload": {"a": 1}})
    rows = publication_rows(manifest_of(bundle))
    assert rows["pack"]["slug"] == "demo"
    assert rows["version"]["number"] == 1 and rows["version"]["execution_mode"] == "native"
    assert rows["challenges"][0]["execution_order"] == 0
    [input_set] = rows["input_sets"]
    assert len(input_set["checksum"]) == 64
    first, second = input_set["cases"]
    assert first["stored_payload"]["schema_version"] == 1  # has expectations: document form
    assert second["stored_payload"] == {"a": 1}  # payload only: plain form
    assert second["item_key"] == "k2"


def test_referenced_secrets_lists_sorted_secret_names(bundle: dict[str, Any]) -> None:
    bundle["tools"] = {
        "custom": [
            {
                "name": "call",
                "parameters": {"type": "object"},
                "implementation": {
                    "primitive": "http_request",
                    "args": {"url": "https://x/${secrets.Z_URL}", "headers": {"a": "${json:secrets.API_KEY}"}},
                },
            }
        ]
    }
    assert referenced_secrets(manifest_of(bundle)) == ["API_KEY", "Z_URL"]


def test_format_errors_text_joins_field_and_message() -> None:
    errors = [ValidationError("pack.slug", "is required", 2), ValidationError("", "yaml: line 1: bad", 1)]
    assert format_errors_text(errors) == "pack.slug is required; yaml: line 1: bad"
    assert errors[0].as_dict() == {"field": "pack.slug", "message": "is required", "line": 2}
