"""Scoring services and the scorecard API: idempotent re-scoring, 202 / 409 / 200, personas."""

from __future__ import annotations

import pytest

from engine.events import SCORING_COMPLETED, SCORING_FAILED, SCORING_METRIC_RECORDED, SCORING_STARTED
from runs.models import CaseRun, RunEvent, ScoreStatus
from scoring import services as scoring
from scoring.models import CaseScore, LaneScorecard, RunScorecard
from scoring.tests.factories import make_run, score_run

pytestmark = pytest.mark.django_db

GOOD = {"two-plus-two": "4", "three-squared": "9"}
SLOPPY = {"two-plus-two": "5", "three-squared": "9"}


def _api(slug: str, path: str) -> str:
    return f"/api/v1/workspaces/{slug}/{path}"


def test_it_scores_each_case_lane_and_run(workspace):
    run = make_run(workspace, lanes=[GOOD, SLOPPY])
    good, sloppy = run.lanes.order_by("lane_index")
    verdicts = {(c.lane_id, c.case_key): c.passed for c in CaseRun.objects.filter(run=run)}
    assert verdicts == {
        (good.pk, "two-plus-two"): True,
        (good.pk, "three-squared"): True,
        (sloppy.pk, "two-plus-two"): False,
        (sloppy.pk, "three-squared"): True,
    }
    assert set(CaseRun.objects.filter(run=run).values_list("score_status", flat=True)) == {ScoreStatus.SCORED}
    assert LaneScorecard.objects.get(lane=sloppy).pass_rate == 0.5
    assert run.score_status == ScoreStatus.SCORED
    assert run.scorecard.winner_lane_id == good.pk


def test_it_rescoring_is_idempotent(workspace):
    run = make_run(workspace, lanes=[GOOD])
    events_before = RunEvent.objects.filter(run=run).count()
    documents = {cs.case_run_id: cs.document for cs in CaseScore.objects.all()}
    score_run(run)
    assert RunEvent.objects.filter(run=run).count() == events_before
    assert CaseScore.objects.count() == 2 and LaneScorecard.objects.count() == 1 and RunScorecard.objects.count() == 1
    assert {cs.case_run_id: cs.document for cs in CaseScore.objects.all()} == documents


def test_it_writes_scoring_events_with_fresh_sequence_numbers(workspace):
    run = make_run(workspace, lanes=[GOOD])
    lane = run.lanes.get()
    types = list(RunEvent.objects.filter(lane=lane, event_type__startswith="scoring.").values_list("event_type", flat=True))
    assert types.count(SCORING_STARTED) == 2 and SCORING_METRIC_RECORDED in types and types.count(SCORING_COMPLETED) == 3
    sequences = list(RunEvent.objects.filter(lane=lane).values_list("sequence_number", flat=True))
    assert len(sequences) == len(set(sequences))
    lane.refresh_from_db()
    assert lane.next_sequence == max(sequences) + 1


def test_it_marks_a_case_errored_instead_of_raising(workspace, monkeypatch):
    run = make_run(workspace, lanes=[GOOD], score=False)
    case_run = CaseRun.objects.filter(run=run).first()

    def boom(*args, **kwargs):
        raise RuntimeError("kernel exploded")

    monkeypatch.setattr(scoring.cases, "score_case", boom)  # the name the case scoring uses
    scoring.case_run_score(case_run_id=case_run.pk)
    case_run.refresh_from_db()
    assert case_run.score_status == ScoreStatus.ERRORED
    failed = RunEvent.objects.get(case_run=case_run, event_type=SCORING_FAILED)
    assert "kernel exploded" in failed.payload["error"]


def test_it_ignores_a_missing_case_run():
    scoring.case_run_score(case_run_id=999999)
    scoring.lane_score(lane_id=999999)
    scoring.run_score(run_id=999999)


def test_run_scorecard_api_is_202_while_pending(workspace, viewer, api_client_for):
    run = make_run(workspace, lanes=[GOOD], score=False)
    response = api_client_for(viewer).get(_api(workspace.slug, f"runs/{run.pk}/scorecard"))
    assert response.status_code == 202
    assert response.json() == {"status": "pending"}


def test_run_scorecard_api_is_409_when_scoring_errored(workspace, viewer, api_client_for):
    run = make_run(workspace, lanes=[GOOD], score=False)
    run.score_status = ScoreStatus.ERRORED
    run.save(update_fields=["score_status"])
    response = api_client_for(viewer).get(_api(workspace.slug, f"runs/{run.pk}/scorecard"))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "scoring_failed"


def test_run_scorecard_api_ranks_lanes(workspace, viewer, api_client_for):
    run = make_run(workspace, lanes=[SLOPPY, GOOD])
    sloppy, good = run.lanes.order_by("lane_index")
    body = api_client_for(viewer).get(_api(workspace.slug, f"runs/{run.pk}/scorecard")).json()
    assert body["status"] == "scored"
    assert body["winner_lane_id"] == good.pk
    assert [lane["lane_id"] for lane in body["lanes"]] == [good.pk, sloppy.pk]
    assert body["lanes"][0]["rank"] == 1 and body["lanes"][0]["pass_rate"] == 1.0
    assert "correctness" in body["lanes"][1]["dimensions"]


def test_lane_scorecard_api_lists_cases_and_filters_failures(workspace, viewer, api_client_for):
    run = make_run(workspace, lanes=[SLOPPY])
    lane = run.lanes.get()
    client = api_client_for(viewer)
    body = client.get(_api(workspace.slug, f"runs/{run.pk}/lanes/{lane.pk}/scorecard")).json()
    assert body["scorecard"]["pass_rate"] == 0.5
    assert [c["case_key"] for c in body["cases"]] == ["two-plus-two", "three-squared"]
    failures = client.get(_api(workspace.slug, f"runs/{run.pk}/lanes/{lane.pk}/scorecard?failures=1")).json()
    assert [(c["case_key"], c["failed_validators"]) for c in failures["cases"]] == [("two-plus-two", ["answer"])]


def test_lane_scorecard_api_is_202_before_the_lane_is_scored(workspace, viewer, api_client_for):
    run = make_run(workspace, lanes=[GOOD], score=False)
    lane = run.lanes.get()
    response = api_client_for(viewer).get(_api(workspace.slug, f"runs/{run.pk}/lanes/{lane.pk}/scorecard"))
    assert response.status_code == 202


def test_case_verdicts_api_shows_expected_actual_and_replay_link(workspace, viewer, api_client_for):
    run = make_run(workspace, lanes=[SLOPPY])
    case_run = CaseRun.objects.get(run=run, case_key="two-plus-two")
    body = api_client_for(viewer).get(_api(workspace.slug, f"runs/{run.pk}/cases/{case_run.pk}/verdicts")).json()
    assert body["passed"] is False
    validator = body["validators"][0]
    assert (validator["key"], validator["verdict"], validator["expected"], validator["actual"]) == ("answer", "fail", "4", "5")
    assert validator["replay_url"].startswith(f"/w/{workspace.slug}/runs/{run.pk}/cases/{case_run.pk}/")
    assert any(line["kind"] == "add" and line["text"] == "+5" for line in validator["diff"])


def test_case_verdicts_api_is_202_then_409(workspace, viewer, api_client_for):
    run = make_run(workspace, lanes=[GOOD], score=False)
    case_run = CaseRun.objects.filter(run=run).first()
    client = api_client_for(viewer)
    url = _api(workspace.slug, f"runs/{run.pk}/cases/{case_run.pk}/verdicts")
    assert client.get(url).status_code == 202
    CaseRun.objects.filter(pk=case_run.pk).update(score_status=ScoreStatus.ERRORED)
    assert client.get(url).status_code == 409


@pytest.mark.parametrize("path", ["runs/{run}/scorecard", "runs/{run}/lanes/{lane}/scorecard", "runs/{run}/cases/{case}/verdicts"])
def test_scorecard_api_hides_runs_from_strangers(workspace, stranger, api_client_for, path):
    run = make_run(workspace, lanes=[GOOD])
    lane = run.lanes.get()
    case_run = CaseRun.objects.filter(run=run).first()
    url = path.format(run=run.pk, lane=lane.pk, case=case_run.pk)
    assert api_client_for(stranger).get(_api(workspace.slug, url)).status_code == 404
    # The stranger's own workspace does not reveal this run either.
    assert api_client_for(stranger).get(_api("globex", url)).status_code == 404


@pytest.mark.parametrize("persona", ["admin", "member", "viewer"])
def test_every_member_role_can_read_scorecards(workspace, api_client_for, persona, request):
    run = make_run(workspace, lanes=[GOOD])
    user = request.getfixturevalue(persona)
    assert api_client_for(user).get(_api(workspace.slug, f"runs/{run.pk}/scorecard")).status_code == 200
