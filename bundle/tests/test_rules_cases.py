"""Input sets, cases, inputs and expectations (spec §2.9, §3.4): one case per rule, every error pinned."""

from __future__ import annotations

from typing import Any

import pytest

from .rules import Errors, Mutation, case, errors_after

S0 = "input_sets[0]"
C0 = f"{S0}.cases[0]"
E0 = f"{C0}.expectations[0]"


def input_set(**fields: Any) -> Mutation:
    return lambda b: b["input_sets"][0].update(fields)


def with_asset(mutate: Mutation) -> Mutation:
    """``mutate`` on a bundle that declares the version asset ``a``."""

    def both(b: dict[str, Any]) -> None:
        b["version"]["assets"] = [{"key": "a", "path": "a.txt"}]
        mutate(b)

    return both


def expectation(**fields: Any) -> Mutation:
    return lambda b: case(b)["expectations"][0].update(fields)


def add_case(**fields: Any) -> Mutation:
    return lambda b: b["input_sets"][0]["cases"].append({"challenge_key": "c1", "case_key": "k2", **fields})


RULES = [
    pytest.param(input_set(key=" "), [(f"{S0}.key", "is required")], id="set key required"),
    pytest.param(
        lambda b: b["input_sets"].append(dict(b["input_sets"][0])),
        [("input_sets[1].key", "must be unique")],
        id="set key unique",
    ),
    pytest.param(input_set(name=""), [(f"{S0}.name", "is required")], id="set name required"),
    pytest.param(input_set(cases=[]), [(f"{S0}.cases", "must contain at least one case")], id="cases required"),
    pytest.param(
        lambda b: case(b).update(challenge_key=" "),
        [(f"{C0}.challenge_key", "is required")],
        id="challenge key required",
    ),
    pytest.param(
        lambda b: case(b).update(challenge_key="nope"),
        [(f"{C0}.challenge_key", "must reference a declared challenge")],
        id="challenge declared",
    ),
    pytest.param(
        add_case(challenge_key="c2"),
        [
            (f"{S0}.cases[1].challenge_key", "must reference the same challenge as the other cases in this input set"),
            (f"{S0}.cases[1].challenge_key", "must reference a declared challenge"),
        ],
        id="one challenge per set",
    ),
    pytest.param(lambda b: case(b).update(case_key=""), [(f"{C0}.case_key", "is required")], id="case key required"),
    pytest.param(
        add_case(case_key="k1"),
        [(f"{S0}.cases[1].case_key", "must be unique per challenge in the input set")],
        id="case key unique",
    ),
    pytest.param(
        lambda b: case(b).update(inputs=[{"key": "q", "kind": "text"}, {"key": "q"}, {"kind": "text"}]),
        [
            (f"{C0}.inputs[1].key", "must be unique"),
            (f"{C0}.inputs[1].kind", "is required"),
            (f"{C0}.inputs[2].key", "is required"),
        ],
        id="input keys and kinds",
    ),
    pytest.param(
        lambda b: case(b).update(inputs=[{"key": "f", "kind": "file", "artifact_key": "zz"}]),
        [(f"{C0}.inputs[0].artifact_key", "must reference a declared version asset")],
        id="input artifact declared",
    ),
    pytest.param(expectation(key=""), [(f"{E0}.key", "is required")], id="expectation key required"),
    pytest.param(
        lambda b: case(b)["expectations"].append({"key": "answer", "kind": "text"}),
        [(f"{C0}.expectations[1].key", "must be unique")],
        id="expectation key unique",
    ),
    pytest.param(expectation(kind=None), [(f"{E0}.kind", "is required")], id="expectation kind required"),
    pytest.param(
        expectation(artifact_key="zz"),
        [(f"{E0}.artifact_key", "must reference a declared version asset")],
        id="expectation artifact declared",
    ),
    pytest.param(
        expectation(source="input: "),
        [(f"{E0}.source", "must reference a non-empty input key")],
        id="input source not empty",
    ),
    pytest.param(
        expectation(source="input:nope"),
        [(f"{E0}.source", "must reference a declared case input")],
        id="input source declared",
    ),
    pytest.param(
        expectation(source="artifact:"),
        [(f"{E0}.source", "must reference a non-empty artifact key")],
        id="artifact source not empty",
    ),
    pytest.param(
        expectation(source="artifact:zz"),
        [(f"{E0}.source", "must reference a declared version asset")],
        id="artifact source declared",
    ),
    pytest.param(
        expectation(source="case:x"),
        [(f"{E0}.source", "must start with input: or artifact:")],
        id="source prefix",
    ),
    pytest.param(
        lambda b: case(b).update(artifacts=[{"key": "zz"}]),
        [(f"{C0}.artifacts[0].key", "must reference a declared version asset")],
        id="case artifacts declared",
    ),
    pytest.param(
        lambda b: case(b).update(assets=[{"key": "x"}]),
        [(f"{C0}.assets[0].path", "is required")],
        id="case assets",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), RULES)
def test_it_reports_each_case_rule_with_its_field_and_message(mutate: Mutation, expected: Errors) -> None:
    assert errors_after(mutate) == expected


ACCEPTED = [
    pytest.param(
        with_asset(
            lambda b: case(b).update(
                inputs=[{"key": "q", "kind": "text", "value": "6*7"}, {"key": "f", "kind": "file", "artifact_key": "a"}],
                expectations=[
                    {"key": "answer", "kind": "text", "source": "input:q"},
                    {"key": "file", "kind": "file", "source": "artifact: a", "artifact_key": "a"},
                ],
                artifacts=[{"key": "a"}],
            )
        ),
        id="inputs, expectations and artifacts that resolve",
    ),
    pytest.param(add_case(case_key="k2"), id="second case of the same challenge"),
    pytest.param(lambda b: b["input_sets"][0]["cases"].append({"challenge_key": "c1", "item_key": "k3"}), id="legacy item key"),
]


@pytest.mark.parametrize("mutate", ACCEPTED)
def test_it_accepts_well_formed_cases(mutate: Mutation) -> None:
    assert errors_after(mutate) == []


def test_a_case_without_a_challenge_does_not_anchor_the_set() -> None:
    def mutate(b: dict[str, Any]) -> None:
        cases = b["input_sets"][0]["cases"]
        cases.insert(0, {"case_key": "k0"})
        cases.append({"challenge_key": "nope", "case_key": "k0"})

    assert errors_after(mutate) == [
        (f"{C0}.challenge_key", "is required"),
        (f"{S0}.cases[2].challenge_key", "must reference the same challenge as the other cases in this input set"),
        (f"{S0}.cases[2].challenge_key", "must reference a declared challenge"),
    ]
