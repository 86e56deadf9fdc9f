"""Issue 25: two scripted lanes both under the pack's latency target score latency 1.000 each, even
when one is 30× slower; the run scorecard must still name a winner, on the raw p50 latency."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest

from runs.models import RunEvent
from scoring.models import RunScorecard
from scoring.presenters import run_scorecard_rows
from scoring.tests.factories import SPEC, make_pack_version, make_run, score_run

pytestmark = pytest.mark.django_db

GOOD = {"two-plus-two": "4", "three-squared": "9"}


def test_the_faster_of_two_equal_lanes_wins_with_the_reason_shown(workspace):
    spec = copy.deepcopy(SPEC)
    spec["scorecard"]["normalization"]["latency"] = {"target_ms": 120_000, "max_ms": 600_000}  # both lanes under it
    version = make_pack_version(workspace, spec=spec)
    run = make_run(workspace, pack_version=version, lanes=[GOOD, GOOD], score=False)
    slow, fast = run.lanes.order_by("lane_index")  # the first lane (which a stable sort would favour) is the slow one
    for event in RunEvent.objects.filter(lane=slow, event_type="system.run.completed"):
        event.occurred_at += timedelta(seconds=58)  # 60 s from start to end instead of 2 s: 30× slower
        event.save(update_fields=["occurred_at"])
    score_run(run)

    rows = run_scorecard_rows(run)
    by_lane = {row["lane_id"]: row for row in rows["lanes"]}
    assert by_lane[slow.pk]["latency_p50_ms"] == 60_000 and by_lane[fast.pk]["latency_p50_ms"] == 2_000
    latency = {row["lane_id"]: row["dimensions"]["latency"] for row in rows["lanes"]}
    assert latency == {slow.pk: 1.0, fast.pk: 1.0}  # the pack's budget: both within it
    card = RunScorecard.objects.get(run=run)
    assert card.winner_lane_id == fast.pk
    assert rows["winner_reason"] == "equal scores, faster (p50 latency 2000 ms vs 60000 ms)"
