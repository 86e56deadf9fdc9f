"""The pack results chart keeps every agent visible when their values coincide (issue 25)."""

from __future__ import annotations

from scoring.trends import DODGE, Point, Series, _dodge


def _series(name: str, values: list[float]) -> Series:
    return Series(name, "s-0", [Point(100.0 + 50 * i, 200 - 100 * v, v, f"{name} {v}") for i, v in enumerate(values)])


def test_agents_with_the_same_value_in_a_run_are_drawn_side_by_side():
    good, copy, other = _series("good", [1.0, 1.0]), _series("copy", [1.0, 0.5]), _series("other", [1.0, 0.0])
    _dodge([good, copy, other])
    first = [s.points[0].x for s in (good, copy, other)]
    assert first == [100.0 - DODGE, 100.0, 100.0 + DODGE]  # three on one spot: spread, centred on the run
    assert [s.points[1].x for s in (good, copy, other)] == [150.0, 150.0, 150.0]  # different values: untouched
    assert good.path.startswith(f"{100.0 - DODGE:.1f},100.0 ")  # the line follows its dot


def test_two_agents_on_one_spot_move_half_a_step_each_way():
    left, right = _series("a", [0.25]), _series("b", [0.25])
    _dodge([left, right])
    assert (left.points[0].x, right.points[0].x) == (100.0 - DODGE / 2, 100.0 + DODGE / 2)
