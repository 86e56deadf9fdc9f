"""Trial statistics on every scorecard (issue 24): the API, the pages, the Markdown copy and the results chart.

Lanes with real case runs per trial (``CaseRun.trial``), scored by the scoring services; the
numbers are checked against engine/scoring/stats.py's estimators worked by hand.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from engine.scoring import stats
from scoring.models import LaneScorecard
from scoring.tests.factories import make_pack_version, make_run

pytestmark = pytest.mark.django_db

# c0 always right, c1 right in 3 of 4 trials (flaky), c2 never right.
ANSWERS = {"c0": "0", "c1": "1", "c2": "2"}
TRIALS = {"c0": ["0"] * 4, "c1": ["1", "1", "x", "1"], "c2": ["x"] * 4}


@pytest.fixture
def version(workspace):
    return make_pack_version(workspace, answers=ANSWERS)


def _lane_api(client, workspace, run):
    lane = run.lanes.get()
    return client.get(f"/api/v1/workspaces/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard")


def test_the_lane_scorecard_api_gives_the_trial_statistics(workspace, viewer, api_client_for, version):
    run = make_run(workspace, pack_version=version, lanes=[TRIALS])
    body = _lane_api(api_client_for(viewer), workspace, run).json()
    statistics = body["statistics"]
    assert statistics["trials"] == 4 and statistics["cases"] == 3 and statistics["trials_total"] == 12
    assert statistics["case_pass_rates"] == {"c0": 1.0, "c1": 0.75, "c2": 0.0}
    assert statistics["pass_rate"] == pytest.approx(1.75 / 3)
    low, high = statistics["pass_rate_ci"]
    assert 0 < low < statistics["pass_rate"] < high < 1
    assert statistics["score_ci"][0] <= statistics["score"] <= statistics["score_ci"][1]
    assert statistics["flaky_cases"] == ["c1"] and statistics["uncertainty"] == ""
    # pass@k, pass^k: the mean over cases of the unbiased per-case estimates (c1: 3 of 4).
    assert statistics["pass_at_k"]["2"] == pytest.approx((1 + stats.pass_at_k(4, 3, 2) + 0) / 3)
    assert statistics["pass_hat_k"]["2"] == pytest.approx((1 + 3 / 6 + 0) / 3)
    assert sorted(statistics["pass_at_k"], key=int) == ["1", "2", "3", "4"]
    # Stored with the scorecard: what the API says is what scoring saved.
    assert LaneScorecard.objects.get(lane=run.lanes.get()).document["statistics"] == statistics


def test_a_one_trial_scorecard_says_plainly_it_has_no_uncertainty_estimate(workspace, viewer, api_client_for, client_for, version):
    run = make_run(workspace, pack_version=version, lanes=[{**ANSWERS, "c2": "x"}])
    statistics = _lane_api(api_client_for(viewer), workspace, run).json()["statistics"]
    assert statistics["trials"] == 1 and statistics["pass_rate_ci"] is None and statistics["score_ci"] is None
    assert statistics["uncertainty"] == stats.NO_UNCERTAINTY
    assert statistics["pass_at_k"] == {"1": pytest.approx(2 / 3)} and statistics["flaky_cases"] == []
    lane = run.lanes.get()
    page = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard/").content.decode()
    assert "One trial per case: no uncertainty estimate" in page and 'id="pass-at-k"' not in page
    assert "- Pass rate: 67 % (1 trial: no uncertainty estimate)" in page


def test_a_scorecard_stored_before_statistics_gets_them_computed_on_read(workspace, viewer, api_client_for, version):
    run = make_run(workspace, pack_version=version, lanes=[TRIALS])
    card = LaneScorecard.objects.get(lane=run.lanes.get())
    stored = card.document.pop("statistics")
    LaneScorecard.objects.filter(pk=card.pk).update(document=card.document)
    assert _lane_api(api_client_for(viewer), workspace, run).json()["statistics"] == stored


def test_the_run_scorecard_api_and_page_show_each_lanes_interval(workspace, viewer, api_client_for, client_for, version):
    run = make_run(workspace, pack_version=version, lanes=[TRIALS, {k: [v] * 4 for k, v in ANSWERS.items()}])
    body = api_client_for(viewer).get(f"/api/v1/workspaces/{workspace.slug}/runs/{run.pk}/scorecard").json()
    rows = {row["label"]: row for row in body["lanes"]}
    assert rows["lane-1"]["statistics"]["pass_rate_ci"][1] == 1.0 and rows["lane-0"]["statistics"]["flaky_cases"] == ["c1"]
    low, high = rows["lane-0"]["statistics"]["pass_rate_ci"]
    assert rows["lane-0"]["pass_rate_text"] == f"58 % ({low * 100:.0f}–{high * 100:.0f} %, 95 % CI, 4 trials)"
    page = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/scorecard/").content.decode()
    assert f'title="{low * 100:.0f}–{high * 100:.0f} %, 95 % CI, 4 trials">{low * 100:.0f}–{high * 100:.0f} % · 4 trials<' in page
    assert page.count("data-error-bar") == 2  # one error bar on each lane's pass-rate bar


def test_the_lane_page_and_markdown_copy_show_the_interval_pass_at_k_and_flaky_cases(workspace, viewer, client_for, version):
    run = make_run(workspace, pack_version=version, lanes=[TRIALS])
    lane = run.lanes.get()
    page = client_for(viewer).get(f"/w/{workspace.slug}/runs/{run.pk}/lanes/{lane.pk}/scorecard/").content.decode()
    low, high = LaneScorecard.objects.get(lane=lane).document["statistics"]["pass_rate_ci"]
    interval = f"58 % ({low * 100:.0f}–{high * 100:.0f} %, 95 % CI, 4 trials)"
    assert f"data-pass-rate-text>{interval}<" in page
    assert 'id="pass-at-k"' in page and "<code>c1</code>" in page.split('id="flaky-cases"')[1][:300]
    assert f"- Pass rate: {interval}" in page  # the Markdown copy
    assert "- Flaky cases (mixed outcomes): `c1`" in page and "pass@4 0.67" in page and "pass^4 0.33" in page


def test_the_pack_results_chart_draws_error_bars_for_runs_with_trials(workspace, viewer, client_for, version):
    make_run(workspace, pack_version=version, lanes=[TRIALS])
    make_run(workspace, pack_version=version, lanes=[ANSWERS])  # one trial: a point without a bar
    page = client_for(viewer).get(f"/w/{workspace.slug}/packs/{version.pack_id}/results/").content.decode()
    assert page.count("data-error-bar") == 2  # the trials run, on the pass-rate and the score chart
    assert "95 % CI, 4 trials" in page and "1 trial: no uncertainty estimate" in page


def test_the_lane_scorecard_api_makes_as_many_queries_whatever_the_number_of_trials(workspace, viewer, api_client_for, version):
    few = make_run(workspace, pack_version=version, lanes=[{k: [v] * 2 for k, v in ANSWERS.items()}])
    many = make_run(workspace, pack_version=version, lanes=[{k: [v] * 8 for k, v in ANSWERS.items()}])
    client = api_client_for(viewer)
    counts = []
    for run in (few, many):
        with CaptureQueriesContext(connection) as queries:
            assert _lane_api(client, workspace, run).json()["statistics"]["trials"] in (2, 8)
        counts.append(len(queries))
    assert counts[0] == counts[1]
