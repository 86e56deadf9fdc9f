"""Comparisons: services, API and pages — participants, reason codes, idempotency, personas."""

from __future__ import annotations

import json

import pytest

from comparisons.models import Comparison
from comparisons.presenters import side_by_side
from comparisons.services import ComparisonError, comparison_create
from scoring.tests.factories import make_pack_version, make_run

pytestmark = pytest.mark.django_db

GOOD = {"two-plus-two": "4", "three-squared": "9"}
SLOPPY = {"two-plus-two": "5", "three-squared": "9"}
URL = "/api/v1/workspaces/{slug}/comparisons"


@pytest.fixture
def pair(workspace):
    version = make_pack_version(workspace)
    return make_run(workspace, pack_version=version, lanes=[GOOD]), make_run(workspace, pack_version=version, lanes=[SLOPPY])


def test_it_compares_two_single_lane_runs(workspace, admin, pair):
    baseline, candidate = pair
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate)
    assert comparison.status == "comparable"
    assert comparison.baseline_lane == baseline.lanes.get() and comparison.candidate_lane == candidate.lanes.get()
    correctness = comparison.summary["dimension_deltas"]["correctness"]
    assert correctness["delta"] == pytest.approx(-0.5)
    assert comparison.summary["case_divergence"]["passed_to_failed"] == ["two-plus-two"]


def test_repeating_a_comparison_returns_the_same_row(workspace, admin, pair):
    baseline, candidate = pair
    first = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate)
    second = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate)
    assert first.pk == second.pk and Comparison.objects.count() == 1
    assert len(first.fingerprint) == 64


def test_it_compares_two_lanes_of_one_run(workspace, admin):
    run = make_run(workspace, lanes=[GOOD, SLOPPY])
    good, sloppy = run.lanes.order_by("lane_index")
    comparison = comparison_create(
        workspace=workspace, user=admin, baseline_run=run, candidate_run=run, baseline_lane=good, candidate_lane=sloppy
    )
    assert comparison.status == "comparable"


def test_it_needs_lanes_for_multi_lane_runs(workspace, admin, pair):
    multi = make_run(workspace, pack_version=pair[1].pack_version, lanes=[GOOD, SLOPPY])
    with pytest.raises(ComparisonError) as info:
        comparison_create(workspace=workspace, user=admin, baseline_run=multi, candidate_run=pair[1])
    assert info.value.code == "participant_count_mismatch"
    assert (info.value.field, info.value.message) == (
        "baseline_lane_id",
        "The baseline run has several lanes; pick the baseline lane to compare.",
    )


def test_a_multi_lane_run_of_another_pack_is_refused_for_its_pack_not_its_lanes(workspace, admin, pair):
    # Issue 25: picking a lane would not help, so the message must not ask for one.
    other = make_run(workspace, lanes=[GOOD, SLOPPY])
    with pytest.raises(ComparisonError) as info:
        comparison_create(workspace=workspace, user=admin, baseline_run=other, candidate_run=pair[1])
    assert (info.value.code, info.value.field) == ("challenge_pack_version_mismatch", "candidate_run_id")
    packs = (other.pack_version.pack.name, pair[1].pack_version.pack.name)
    assert info.value.message == (
        f"The baseline run is of {packs[0]} v1 and the candidate run of {packs[1]} v1: "
        "a comparison needs two runs of the same pack version; pick runs of one pack version."
    )
    single = make_run(workspace, lanes=[GOOD])  # single lanes: compared, and called not comparable as before
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=single, candidate_run=pair[1])
    assert (comparison.status, comparison.reason_code) == ("not_comparable", "challenge_pack_version_mismatch")


def test_it_rejects_the_same_lane_twice(workspace, admin):
    run = make_run(workspace, lanes=[GOOD, SLOPPY])
    lane = run.lanes.first()
    with pytest.raises(ComparisonError) as info:
        comparison_create(workspace=workspace, user=admin, baseline_run=run, candidate_run=run, baseline_lane=lane, candidate_lane=lane)
    assert info.value.code == "participant_match_not_resolved"


def test_it_rejects_a_lane_of_another_run(workspace, admin, pair):
    baseline, candidate = pair
    with pytest.raises(ComparisonError) as info:
        comparison_create(
            workspace=workspace,
            user=admin,
            baseline_run=baseline,
            candidate_run=candidate,
            baseline_lane=candidate.lanes.get(),
            candidate_lane=candidate.lanes.get(),
        )
    assert info.value.code == "baseline_run_agent_unresolved"


def test_it_stores_non_comparable_pairs_with_their_reason(workspace, admin):
    baseline = make_run(workspace, lanes=[GOOD])
    other_pack = make_run(workspace, lanes=[GOOD])
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=other_pack)
    assert (comparison.status, comparison.reason_code) == ("not_comparable", "challenge_pack_version_mismatch")


def test_it_reports_a_missing_scorecard(workspace, admin):
    version = make_pack_version(workspace)
    baseline = make_run(workspace, pack_version=version, lanes=[GOOD])
    unscored = make_run(workspace, pack_version=version, lanes=[GOOD], score=False)
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=unscored)
    assert comparison.reason_code == "missing_scorecard"


# -- API ------------------------------------------------------------------------------------------


def test_api_creates_then_returns_the_existing_comparison(workspace, member, pair, api_client_for):
    baseline, candidate = pair
    client = api_client_for(member)
    body = {"baseline_run_id": baseline.pk, "candidate_run_id": candidate.pk}
    first = client.post(URL.format(slug=workspace.slug), body, format="json")
    assert first.status_code == 201, first.json()
    second = client.post(URL.format(slug=workspace.slug), body, format="json")
    assert second.status_code == 200
    assert first.json()["id"] == second.json()["id"] == Comparison.objects.get().pk
    assert first.json()["summary"]["dimension_deltas"]["correctness"]["state"] == "available"


def test_api_names_the_reason_code_for_unresolved_participants(workspace, member, api_client_for):
    multi = make_run(workspace, lanes=[GOOD, SLOPPY])
    response = api_client_for(member).post(
        URL.format(slug=workspace.slug), {"baseline_run_id": multi.pk, "candidate_run_id": multi.pk}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == response.json()["reason_code"] == "participant_match_not_resolved"
    assert "candidate_lane_id" in response.json()["error"]["fields"]
    other = make_run(workspace, lanes=[GOOD, SLOPPY])  # another pack version: its packs are the problem
    response = api_client_for(member).post(
        URL.format(slug=workspace.slug), {"baseline_run_id": multi.pk, "candidate_run_id": other.pk}, format="json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["error"]["code"] == body["reason_code"] == "challenge_pack_version_mismatch"
    assert "candidate_run_id" in body["error"]["fields"] and "several lanes" not in json.dumps(body)


def test_api_viewer_cannot_create_a_comparison(workspace, viewer, pair, api_client_for):
    response = api_client_for(viewer).post(
        URL.format(slug=workspace.slug), {"baseline_run_id": pair[0].pk, "candidate_run_id": pair[1].pk}, format="json"
    )
    assert response.status_code == 403
    assert not Comparison.objects.exists()


def test_api_hides_other_workspaces_runs_in_post_bodies(workspace, other_workspace, stranger, member, pair, api_client_for):
    foreign = make_run(other_workspace, lanes=[GOOD])
    # A member here naming a run of another workspace gets 404, not 403.
    response = api_client_for(member).post(
        URL.format(slug=workspace.slug), {"baseline_run_id": pair[0].pk, "candidate_run_id": foreign.pk}, format="json"
    )
    assert response.status_code == 404
    response = api_client_for(member).post(
        URL.format(slug=workspace.slug),
        {"baseline_run_id": pair[0].pk, "candidate_run_id": pair[1].pk, "baseline_lane_id": foreign.lanes.get().pk},
        format="json",
    )
    assert response.status_code == 404
    # The stranger cannot reach this workspace, nor smuggle its runs through their own.
    assert (
        api_client_for(stranger)
        .post(URL.format(slug=workspace.slug), {"baseline_run_id": pair[0].pk, "candidate_run_id": pair[1].pk}, format="json")
        .status_code
        == 404
    )
    assert (
        api_client_for(stranger)
        .post(URL.format(slug=other_workspace.slug), {"baseline_run_id": pair[0].pk, "candidate_run_id": foreign.pk}, format="json")
        .status_code
        == 404
    )
    assert not Comparison.objects.exists()


def test_api_lists_and_shows_comparisons(workspace, admin, viewer, stranger, pair, api_client_for):
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=pair[0], candidate_run=pair[1])
    listing = api_client_for(viewer).get(URL.format(slug=workspace.slug))
    assert listing.status_code == 200
    assert [row["id"] for row in listing.json()["results"]] == [comparison.pk]
    detail = api_client_for(viewer).get(f"{URL.format(slug=workspace.slug)}/{comparison.pk}")
    assert detail.status_code == 200 and detail.json()["status"] == "comparable"
    assert api_client_for(stranger).get(f"{URL.format(slug=workspace.slug)}/{comparison.pk}").status_code == 404
    assert api_client_for(stranger).get(f"/api/v1/workspaces/globex/comparisons/{comparison.pk}").status_code == 404


def test_comparison_list_api_has_a_fixed_query_count(workspace, admin, viewer, api_client_for, django_assert_max_num_queries):
    version = make_pack_version(workspace)
    runs = [make_run(workspace, pack_version=version, lanes=[GOOD]) for _ in range(4)]
    for candidate in runs[1:]:
        comparison_create(workspace=workspace, user=admin, baseline_run=runs[0], candidate_run=candidate)
    client = api_client_for(viewer)
    with django_assert_max_num_queries(4):
        assert len(client.get(URL.format(slug=workspace.slug)).json()["results"]) == 3


# -- pages ----------------------------------------------------------------------------------------


def test_compare_page_preselects_the_baseline(workspace, member, pair, client_for):
    response = client_for(member).get(f"/w/{workspace.slug}/comparisons/?baseline={pair[0].pk}")
    assert response.status_code == 200
    assert f'<option value="{pair[0].pk}" selected>' in response.content.decode()


def test_compare_page_lists_comparisons_for_viewers_without_the_form(workspace, admin, viewer, pair, client_for):
    comparison_create(workspace=workspace, user=admin, baseline_run=pair[0], candidate_run=pair[1])
    html = client_for(viewer).get(f"/w/{workspace.slug}/comparisons/").content.decode()
    assert "Comparable" in html
    assert "New comparison" not in html


def test_compare_page_query_count_does_not_grow_with_comparisons(workspace, admin, viewer, client_for, django_assert_max_num_queries):
    version = make_pack_version(workspace)
    runs = [make_run(workspace, pack_version=version, lanes=[GOOD]) for _ in range(5)]
    for candidate in runs[1:]:
        comparison_create(workspace=workspace, user=admin, baseline_run=runs[0], candidate_run=candidate)
    client = client_for(viewer)
    with django_assert_max_num_queries(10):
        assert client.get(f"/w/{workspace.slug}/comparisons/").status_code == 200


def test_member_creates_a_comparison_from_the_page(workspace, member, pair, client_for):
    response = client_for(member).post(f"/w/{workspace.slug}/comparisons/", {"baseline_run_id": pair[0].pk, "candidate_run_id": pair[1].pk})
    comparison = Comparison.objects.get()
    assert response.status_code == 302 and response.url == f"/w/{workspace.slug}/comparisons/{comparison.pk}/"


def test_compare_page_shows_participant_errors_next_to_the_field(workspace, member, client_for):
    multi = make_run(workspace, lanes=[GOOD, SLOPPY])
    response = client_for(member).post(f"/w/{workspace.slug}/comparisons/", {"baseline_run_id": multi.pk, "candidate_run_id": multi.pk})
    assert response.status_code == 200
    assert "different candidate lane" in response.content.decode().split('id="candidate-lane-picker"')[1].split("</div>")[0]
    assert not Comparison.objects.exists()


def test_viewer_cannot_post_a_comparison(workspace, viewer, pair, client_for):
    response = client_for(viewer).post(f"/w/{workspace.slug}/comparisons/", {"baseline_run_id": pair[0].pk, "candidate_run_id": pair[1].pk})
    assert response.status_code == 403


def test_stranger_gets_404_on_compare_pages(workspace, admin, stranger, pair, client_for):
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=pair[0], candidate_run=pair[1])
    client = client_for(stranger)
    assert client.get(f"/w/{workspace.slug}/comparisons/").status_code == 404
    assert client.get(f"/w/{workspace.slug}/comparisons/{comparison.pk}/").status_code == 404
    assert client.get(f"/w/globex/comparisons/{comparison.pk}/").status_code == 404
    assert client.post("/w/globex/comparisons/", {"baseline_run_id": pair[0].pk, "candidate_run_id": pair[1].pk}).status_code == 200
    assert not Comparison.objects.exclude(pk=comparison.pk).exists()


def test_lane_picker_partial_lists_the_runs_lanes(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[GOOD, SLOPPY])
    response = client_for(viewer).get(
        f"/w/{workspace.slug}/comparisons/lanes/?side=candidate&candidate_run_id={run.pk}", HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert response.status_code == 200 and 'id="candidate-lane-picker"' in html and "lane-1" in html
    assert "<html" not in html


def test_comparison_detail_shows_deltas_and_divergent_cases(workspace, admin, viewer, pair, client_for):
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=pair[0], candidate_run=pair[1])
    html = client_for(viewer).get(f"/w/{workspace.slug}/comparisons/{comparison.pk}/").content.decode()
    assert "Worse" in html and "passed → failed" in html and "two-plus-two" in html
    assert f"/w/{workspace.slug}/runs/{pair[0].pk}/cases/" in html and f"/w/{workspace.slug}/runs/{pair[1].pk}/cases/" in html
    assert "Evaluate release gate" not in html  # viewer


def test_comparison_marks_the_characters_that_differ_in_a_final_output(workspace, admin, viewer, client_for):
    """Issue 25: whole cells were shaded, so `8000` beside `8080` looked identical."""
    version = make_pack_version(workspace)
    baseline = make_run(workspace, pack_version=version, lanes=[GOOD])
    candidate = make_run(workspace, pack_version=version, lanes=[{**GOOD, "two-plus-two": "4.0"}])
    comparison = comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate)
    html = client_for(viewer).get(f"/w/{workspace.slug}/comparisons/{comparison.pk}/").content.decode()
    table = html.split('aria-label="Final outputs of two-plus-two"')[1].split("</table>")[0]
    assert '<td class="ln ln-del">4</td>' in table and '<td class="ln ln-add">4<ins>.0</ins></td>' in table
    rows, _ = side_by_side("listen: 8000", "listen: 8080")  # one word for a like one: its characters
    assert [(seg.text, seg.changed) for seg in rows[0].baseline.segments] == [("listen: 800", False), ("0", True)]
    assert [seg.text for seg in rows[0].candidate.segments if seg.changed] == ["8"]


def test_compare_page_names_the_two_packs_next_to_the_candidate_run(workspace, member, pair, client_for):
    multi = make_run(workspace, lanes=[GOOD, SLOPPY])  # another pack version, two lanes, none picked
    response = client_for(member).post(f"/w/{workspace.slug}/comparisons/", {"baseline_run_id": multi.pk, "candidate_run_id": pair[1].pk})
    assert response.status_code == 200  # the form again, with the error; nothing created
    html = response.content.decode()
    assert "a comparison needs two runs of the same pack version" in html and "The baseline run has several lanes" not in html
    assert not Comparison.objects.exists()
