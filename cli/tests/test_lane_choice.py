"""``--baseline-lane`` / ``--candidate-lane`` take what a user sees: a label, a deployment name,
a position (``lane 2``, ``#2``, ``2``) — and a lane id still works."""

from __future__ import annotations

from typing import Any

import pytest
from agentclash_cli.client import CliError
from agentclash_cli.gate import resolve_lane

RUN: dict[str, Any] = {
    "id": 7,
    "lanes": [  # listed out of order: positions follow lane_index, not the API's order
        {"id": 902, "lane_index": 1, "label": "Sloppy agent", "deployment_name": "sloppy-v2"},
        {"id": 901, "lane_index": 0, "label": "Good agent", "deployment_name": "good-v1"},
    ],
}


@pytest.mark.parametrize(
    ("choice", "lane_id"),
    [
        ("Sloppy agent", 902),
        ("sloppy-v2", 902),
        (" Good agent ", 901),
        ("902", 902),
        ("1", 901),
        ("2", 902),
        ("lane 2", 902),
        ("Lane 1", 901),
        ("#2", 902),
    ],
)
def test_a_lane_is_chosen_by_name_id_or_position(choice: str, lane_id: int) -> None:
    assert resolve_lane(RUN, choice, "candidate") == lane_id


def test_an_unknown_or_ambiguous_lane_names_the_lanes_with_their_numbers() -> None:
    with pytest.raises(CliError, match=r"^--baseline-lane: baseline run 7 has no lane '3' \(lanes: 1: 'Good agent', 2: 'Sloppy agent'\)$"):
        resolve_lane(RUN, "3", "baseline")
    with pytest.raises(CliError, match=r"no lane '#901'"):  # "#N" is a position, never an id
        resolve_lane(RUN, "#901", "baseline")
    twins = {"id": 8, "lanes": [{"id": 1, "lane_index": 0, "label": "A"}, {"id": 2, "lane_index": 1, "label": "A"}]}
    with pytest.raises(CliError, match=r"has 2 lanes named 'A': give its number instead"):
        resolve_lane(twins, "A", "candidate")
    assert resolve_lane(twins, "lane 2", "candidate") == 2
    assert resolve_lane(twins, "2", "candidate") == 2  # id 2 is lane number 2: no doubt
    crossed = {"id": 9, "lanes": [{"id": 2, "lane_index": 0, "label": "A"}, {"id": 3, "lane_index": 1, "label": "B"}]}
    with pytest.raises(CliError, match=r"'2' is both the id of lane 'A' and the number of lane 'B': write 'lane 2' for the number"):
        resolve_lane(crossed, "2", "candidate")
    assert (resolve_lane(crossed, "lane 2", "candidate"), resolve_lane(crossed, "3", "candidate")) == (3, 3)
    with pytest.raises(CliError, match=r"choose one with --candidate-lane NAME or its number"):
        resolve_lane(twins, None, "candidate")
    assert resolve_lane({"id": 9, "lanes": [{"id": 5, "lane_index": 0, "label": "A"}]}, None, "candidate") is None
