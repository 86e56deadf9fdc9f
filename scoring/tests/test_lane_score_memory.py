"""A lane scorecard reads its case scores with their strings shared (docs/performance.md "Memory at 5,000 cases")."""

from __future__ import annotations

import pytest

from engine.scoring import aggregate_lane
from engine.scoring.documents import LaneRefs
from scoring import services as scoring
from scoring.models import CaseScore, LaneScorecard
from scoring.services import evaluation_spec_for
from scoring.services.scorecards import _share_strings
from scoring.tests.factories import make_run
from scoring.tests.test_scoring_judges import judged, ranked_nwise_run  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db

SLOPPY = {"two-plus-two": "5", "three-squared": "9"}


def test_shared_strings_give_an_equal_value_with_one_copy_of_each_key_and_label():
    strings: dict[str, str] = {}
    long_text = "x" * 65
    first = _share_strings({"state": "available", "items": [{"state": "available", "n": 1.0}], "text": long_text}, strings)
    second = _share_strings({"state": "".join(["avail", "able"]), "items": [], "text": "x" * 65}, strings)
    assert first == {"state": "available", "items": [{"state": "available", "n": 1.0}], "text": long_text}
    assert second == {"state": "available", "items": [], "text": "x" * 65}
    assert next(iter(first)) is next(iter(second)) and first["state"] is second["state"]
    assert first["text"] is long_text  # long strings are left as they are


def test_the_lane_scorecard_is_what_the_case_scores_aggregate_to(workspace):
    run = make_run(workspace, lanes=[SLOPPY])
    lane = run.lanes.get()
    card = LaneScorecard.objects.get(lane=lane)
    LaneScorecard.objects.filter(pk=card.pk).update(document={})
    scoring.lane_score(lane_id=lane.pk)
    documents = [cs.document for cs in CaseScore.objects.filter(lane=lane).order_by("case_run__position", "case_run_id")]
    refs: LaneRefs = {"run_id": run.pk, "lane_id": lane.pk, "pack_version_id": run.pack_version_id, "input_set_id": run.input_set_id}
    expected = aggregate_lane(evaluation_spec_for(run), documents, refs=refs)
    stored = LaneScorecard.objects.get(lane=lane).document
    statistics = stored.pop("statistics")
    assert stored == expected
    assert expected["case_counts"]["total"] == 2 and expected["pass_rate"] == 0.5
    # The trial statistics are stored with it; one trial per case gives no interval, and says so.
    assert statistics["pass_rate"] == 0.5 and statistics["trials"] == 1 and statistics["pass_rate_ci"] is None
    assert statistics["case_pass_rates"] == {"three-squared": 1.0, "two-plus-two": 0.0} and statistics["uncertainty"]


def test_n_wise_judging_does_not_read_the_manifest_again_with_every_case_run(workspace, admin, judged, tasks):  # noqa: F811
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    run, _, _ = ranked_nwise_run(workspace, admin, judged[1])
    with CaptureQueriesContext(connection) as queries:
        tasks.drain()
    run.refresh_from_db()
    assert run.score_status == "scored"
    # A 2,500-case pack's manifest is about 5 MB parsed: one copy per case run would not fit in memory.
    assert [sql for sql in (q["sql"] or "" for q in queries) if '"runs_caserun"' in sql and '"packs_packversion"."manifest",' in sql] == []
