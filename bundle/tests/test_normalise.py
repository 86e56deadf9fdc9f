"""Normalisation (spec §2.13): what a decoded bundle looks like once trimmed, lower-cased and upgraded."""

from __future__ import annotations

import copy
from typing import Any

from bundle.normalise import normalise_bundle

USER_SIMULATOR = {
    "schema_version": 1,
    "kind": " hybrid ",
    "phases": [{"id": " p ", "turns": [{"message": " hi ", "expects": [{"key": " k "}]}]}],
}


def messy() -> dict[str, Any]:
    return {
        "pack": {"slug": " demo ", "name": " Demo ", "family": " Security "},
        "modality": " voice ",
        "version": {
            "execution_mode": " native ",
            "assets": [{"key": " a ", "kind": " file ", "path": " a.txt ", "media_type": " text/plain "}],
            "deployment_defaults": {"aliases": {" cand ": " gpt-4o "}, "lineups": {" default ": [" cand "]}},
        },
        "challenges": [
            {
                "key": " c1 ",
                "title": " T ",
                "category": " cat ",
                "difficulty": " easy ",
                "instructions": " Do it ",
                "artifact_refs": [{"key": " a "}],
            },
            {"key": "c2", "instructions": "Keep", "definition": {"instructions": "Mine"}},
        ],
        "input_sets": [
            {
                "key": " s1 ",
                "name": " Set ",
                "cases": [
                    {
                        "challenge_key": " c1 ",
                        "case_key": " k1 ",
                        "inputs": [{"key": " q ", "kind": " text ", "artifact_key": " a ", "path": " p ", "value": " 6*7 "}],
                        "expectations": [{"key": " e ", "kind": " text ", "artifact_key": " a ", "source": " input:q "}],
                        "artifacts": [{"key": " a "}],
                        "assets": [{"key": " x ", "path": " x "}],
                        "user_simulator": copy.deepcopy(USER_SIMULATOR),
                    },
                    {"challenge_key": "c1", "item_key": " i2 ", "payload": {"a": 1}},
                ],
                "items": [{"challenge_key": "c1", "item_key": "dropped"}],
            },
            {
                "key": "s2",
                "items": [{"challenge_key": "c1", "item_key": " i1 ", "payload": {"p": " v "}, "assets": []}, {"item_key": "i2"}],
            },
        ],
        "interface_spec": {"transports": [" sip ", "webrtc"], "channel_profile": " tel "},
        "scenario": {"persona": " p ", "language": " en "},
        "security": {
            "default_severity": " HIGH ",
            "planted_secrets": [{"name": " N ", "value": " v ", "file_path": " /f ", "location": " FILE ", "severity": " Low "}],
            "forbidden_outputs": [{"description": " d ", "pattern": " p ", "substring": " s ", "severity": " MEDIUM "}],
            "forbidden_egress": [{"description": " d ", "host": " *.EVIL.test ", "severity": " CRITICAL ", "allow": [" OK.test "]}],
            "adversarial_prompts": [{"name": " n ", "text": " keep me ", "strategy": " Jailbreak ", "expected_refusal_pattern": " no "}],
        },
    }


def test_it_normalises_every_trimmed_lowered_and_upgraded_field() -> None:
    assert normalise_bundle(messy()) == {
        "pack": {"slug": "demo", "name": "Demo", "family": "security"},
        "modality": "voice",
        "version": {
            "execution_mode": "native",
            "assets": [{"key": "a", "kind": "file", "path": "a.txt", "media_type": "text/plain"}],
            "deployment_defaults": {"aliases": {"cand": "gpt-4o"}, "lineups": {"default": ["cand"]}},
        },
        "challenges": [
            {
                "key": "c1",
                "title": "T",
                "category": "cat",
                "difficulty": "easy",
                "instructions": "Do it",
                "artifact_refs": [{"key": "a"}],
                "definition": {"instructions": "Do it"},
            },
            {"key": "c2", "instructions": "Keep", "definition": {"instructions": "Mine"}},
        ],
        "input_sets": [
            {
                "key": "s1",
                "name": "Set",
                "cases": [
                    {
                        "challenge_key": "c1",
                        "case_key": "k1",
                        "item_key": "k1",
                        "payload": {},
                        "inputs": [{"key": "q", "kind": "text", "artifact_key": "a", "path": "p", "value": " 6*7 "}],
                        "expectations": [{"key": "e", "kind": "text", "artifact_key": "a", "source": "input:q"}],
                        "artifacts": [{"key": "a"}],
                        "assets": [{"key": "x", "path": "x"}],
                        "user_simulator": USER_SIMULATOR,
                    },
                    {"challenge_key": "c1", "item_key": "i2", "case_key": "i2", "payload": {"a": 1}},
                ],
            },
            {
                "key": "s2",
                "cases": [
                    {"challenge_key": "c1", "case_key": "i1", "item_key": "i1", "payload": {"p": " v "}, "assets": []},
                    {"case_key": "i2", "item_key": "i2", "payload": {}},
                ],
            },
        ],
        "interface_spec": {"transports": ["sip", "webrtc"], "channel_profile": "tel"},
        "scenario": {"persona": "p", "language": "en"},
        "security": {
            "default_severity": "high",
            "planted_secrets": [{"name": "N", "value": "v", "file_path": "/f", "location": "file", "severity": "low"}],
            "forbidden_outputs": [{"description": "d", "pattern": "p", "substring": "s", "severity": "medium"}],
            "forbidden_egress": [{"description": "d", "host": "*.evil.test", "severity": "critical", "allow": ["ok.test"]}],
            "adversarial_prompts": [{"name": "n", "text": " keep me ", "strategy": "jailbreak", "expected_refusal_pattern": "no"}],
        },
    }


def test_it_drops_empty_deployment_defaults_and_leaves_absent_blocks_absent() -> None:
    bundle: dict[str, Any] = {"version": {"deployment_defaults": {"aliases": {}, "lineups": None}}, "challenges": [{"key": "c"}]}
    assert normalise_bundle(bundle) == {"version": {}, "challenges": [{"key": "c", "definition": {}}]}
    assert normalise_bundle({}) == {}


def test_it_keeps_the_deployment_defaults_it_has() -> None:
    version = normalise_bundle({"version": {"deployment_defaults": {"lineups": {" a ": [" x "]}}}})["version"]
    assert version == {"deployment_defaults": {"lineups": {"a": ["x"]}}}
