"""The failures review of a run: clusters across lanes, filters, the page, the API and its isolation."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from engine.events import SANDBOX_EGRESS_DENIED, TOOL_CALL_FAILED
from regression.failures.selectors import failure_review
from runs.events import payload_store
from runs.models import CaseRun, Lane, RunEvent
from scoring.tests.factories import ANSWERS, make_pack_version, make_run

pytestmark = pytest.mark.django_db

WRONG_TITLE = "Wrong answer · exact_match(answer)"


def _page(run, **query):
    return f"/w/{run.workspace.slug}/runs/{run.pk}/failures/" + (f"?{urlencode(query)}" if query else "")


def _api(run, slug=None):
    return f"/api/v1/workspaces/{slug or run.workspace.slug}/runs/{run.pk}/failures"


def _event(case_run, event_type, payload, *, ref=""):
    lane = Lane.objects.get(pk=case_run.lane_id)
    sequence = lane.next_sequence
    Lane.objects.filter(pk=lane.pk).update(next_sequence=sequence + 1)
    event_id = f"test:{case_run.pk}:{event_type}:{sequence}"
    if ref == "stored":
        payload, ref = payload_store(lane_id=lane.pk, event_id=event_id, event_type=event_type, payload=payload)
    return RunEvent.objects.create(
        run_id=case_run.run_id, lane=lane, case_run=case_run, event_id=event_id, sequence_number=sequence, event_type=event_type,
        source="native_engine", occurred_at=case_run.run.created_at, case_key=case_run.case_key, payload=payload, payload_ref=ref,
    )  # fmt: skip


@pytest.fixture
def race(workspace):
    """Three lanes: lane-0 right everywhere; lane-1 and lane-2 answer 'three-squared' with 10."""
    wrong = {**ANSWERS, "three-squared": "10"}
    return make_run(workspace, lanes=[dict(ANSWERS), dict(wrong), dict(wrong)])


def case(run, lane_index, case_key):
    return CaseRun.objects.get(run=run, lane__lane_index=lane_index, case_key=case_key)


def test_the_same_wrong_answer_in_two_lanes_is_one_cluster(race):
    review = failure_review(run=race)
    assert [c.title for c in review.all_clusters] == [WRONG_TITLE]
    cluster = review.all_clusters[0]
    assert cluster.lanes == ["lane-1", "lane-2"]
    assert [c.case_key for c in cluster.cases] == ["three-squared", "three-squared"]
    assert cluster.severity == "blocking"  # correctness is a gate in the factory's scorecard
    assert cluster.failed_validators == ["exact_match(answer)"] and "correctness" in cluster.failed_dimensions
    assert review.failed_cases == 2 and review.cancelled_cases == 0


def test_tool_failures_timeouts_and_cancellations_are_told_apart(race):
    tool_case = case(race, 1, "two-plus-two")
    result = {"content": '{"error": "read_file failed: no such file: notes.txt"}', "is_error": True}
    _event(tool_case, TOOL_CALL_FAILED, {"tool_name": "read_file", "failure_origin": "primitive", "result": result})
    CaseRun.objects.filter(pk=case(race, 0, "two-plus-two").pk).update(status="failed", stop_reason="timeout", error="run timed out")
    CaseRun.objects.filter(pk=case(race, 0, "three-squared").pk).update(status="cancelled", stop_reason="cancelled", passed=None)
    review = failure_review(run=race)
    titles = {c.title: c for c in review.all_clusters}
    assert set(titles) == {WRONG_TITLE, "Tool failure · tool read_file failed", "Timeout or limit · timeout"}
    assert titles["Tool failure · tool read_file failed"].severity == "info"  # lane-1 still answered 4: the case passed
    assert titles["Tool failure · tool read_file failed"].cases[0].failure.reason == "read_file failed: no such file: notes.txt"
    assert review.cancelled_cases == 1
    assert review.failed_cases == 3 and review.info_cases == 1


def test_a_policy_denial_stored_out_of_line_is_still_read(race, settings):
    settings.RUN_EVENT_INLINE_MAX_BYTES = 200
    denied = case(race, 2, "two-plus-two")
    refused = {"content": '{"error": "tool is not allowed in this runtime"}', "is_error": True}
    payload = {"tool_name": "shell_exec", "failure_origin": "policy", "arguments": {"command": "x" * 500}, "result": refused}
    _event(denied, TOOL_CALL_FAILED, payload, ref="stored")
    _event(denied, SANDBOX_EGRESS_DENIED, {"host": "evil.example", "port": 443, "decision": "denied", "reason": "host not in allowlist"})
    review = failure_review(run=race)
    policy = next(c for c in review.all_clusters if c.failure_class == "policy_denial")
    assert policy.title == "Policy denial · egress to evil.example denied, tool shell_exec denied"
    assert RunEvent.objects.filter(case_run=denied, event_type=TOOL_CALL_FAILED).exclude(payload_ref="").exists()
    assert policy.severity == "blocking"  # even though the case's answer passed
    reasons = {c.label: c.reason for c in policy.cases[0].failure.checks}
    assert reasons == {
        "egress to evil.example denied": "host not in allowlist",
        "tool shell_exec denied": "tool is not allowed in this runtime",
    }
    assert review.failed_cases == 2 and review.info_cases == 1  # the case itself did not fail
    assert policy.cases[0].evidence_url.startswith(policy.cases[0].replay_url + "?event=")


def test_it_filters_by_lane_class_cluster_and_severity(race):
    _event(case(race, 1, "two-plus-two"), TOOL_CALL_FAILED, {"tool_name": "read_file", "failure_origin": "primitive"})
    lane2 = Lane.objects.get(run=race, lane_index=2)
    wrong = next(c for c in failure_review(run=race).all_clusters if c.failure_class == "wrong_answer")

    by_lane = failure_review(run=race, query={"lane": str(lane2.pk)})
    assert [(c.title, [x.lane_label for x in c.cases]) for c in by_lane.clusters] == [(WRONG_TITLE, ["lane-2"])]
    assert len(by_lane.all_clusters) == 2  # the choices and counts ignore the filters
    assert [c.failure_class for c in failure_review(run=race, query={"class": "tool_failure"}).clusters] == ["tool_failure"]
    assert [c.fingerprint for c in failure_review(run=race, query={"cluster": wrong.fingerprint}).clusters] == [wrong.fingerprint]
    assert [c.failure_class for c in failure_review(run=race, query={"severity": "info"}).clusters] == ["tool_failure"]
    assert failure_review(run=race, query={"class": "timeout"}).clusters == []


# -- the API --------------------------------------------------------------------------------------


def test_the_api_returns_clusters_with_their_cases_and_links(race, viewer, api_client_for):
    response = api_client_for(viewer).get(_api(race))
    assert response.status_code == 200
    data = response.json()
    assert data["summary"]["failed_cases"] == 2 and data["summary"]["clusters"] == 1
    assert data["summary"]["by_class"]["wrong_answer"] == 2 and data["summary"]["by_severity"]["blocking"] == 2
    [cluster] = data["clusters"]
    assert cluster["title"] == WRONG_TITLE and cluster["case_count"] == 2 and cluster["lanes"] == ["lane-1", "lane-2"]
    first = cluster["cases"][0]
    assert first["failure_class"] == "wrong_answer" and first["severity"] == "blocking"
    assert first["failed_validators"][0]["key"] == "answer" and first["failed_validators"][0]["verdict"] == "fail"
    assert first["replay_url"] == f"/w/{race.workspace.slug}/runs/{race.pk}/cases/{first['case_run_id']}/"
    assert first["evidence_url"].startswith(first["replay_url"] + "?event=")
    assert api_client_for(viewer).get(_api(race) + "?class=wrong_answer&severity=blocking").json()["shown_cases"] == 2
    assert api_client_for(viewer).get(_api(race) + "?severity=warning").json()["clusters"] == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("lane=abc", "lane"),
        ("lane=999999", "lane"),
        ("class=oops", "class"),
        ("severity=fatal", "severity"),
        ("cluster=ffffffffffff", "cluster"),
    ],
)
def test_the_api_names_the_parameter_it_refuses(race, viewer, api_client_for, query, field):
    response = api_client_for(viewer).get(f"{_api(race)}?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and list(error["fields"]) == [field] and field in error["message"]


def test_another_workspaces_run_is_a_404(race, stranger, admin, other_workspace, api_client_for, client_for):
    assert api_client_for(stranger).get(_api(race)).status_code == 404  # not a member of acme
    assert api_client_for(stranger).get(_api(race, slug=other_workspace.slug)).status_code == 404  # acme's run under globex
    assert client_for(stranger).get(f"/w/{other_workspace.slug}/runs/{race.pk}/failures/").status_code == 404
    assert api_client_for(None).get(_api(race)).status_code in (401, 403)
    client_for(stranger).logout()
    assert client_for(admin).get(_page(race)).status_code == 200


def test_a_lane_of_another_run_is_refused_as_a_filter(race, workspace, viewer, api_client_for):
    other = make_run(workspace)
    lane = Lane.objects.filter(run=other).first()
    assert api_client_for(viewer).get(f"{_api(race)}?lane={lane.pk}").status_code == 400


def test_the_query_count_does_not_grow_with_the_cases(workspace, viewer, api_client_for, django_assert_max_num_queries):
    small = make_run(workspace, lanes=[{"two-plus-two": "5", "three-squared": "10"}])
    answers = {f"case-{i}": str(i) for i in range(40)}
    big = make_run(workspace, pack_version=make_pack_version(workspace, answers=answers), lanes=[{}, {}, {"case-1": "1"}])
    client = api_client_for(viewer)
    with django_assert_max_num_queries(12) as few:
        assert client.get(_api(small)).json()["summary"]["failed_cases"] == 2
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(_api(big)).json()["summary"]["failed_cases"] == 119


# -- the page -------------------------------------------------------------------------------------


def test_the_page_query_count_does_not_grow_with_the_cases(workspace, viewer, client_for, django_assert_max_num_queries):
    small = make_run(workspace, lanes=[{"two-plus-two": "5", "three-squared": "10"}])
    answers = {f"case-{i}": str(i) for i in range(40)}
    big = make_run(workspace, pack_version=make_pack_version(workspace, answers=answers), lanes=[{}, {}, {"case-1": "1"}])
    client = client_for(viewer)
    with django_assert_max_num_queries(15) as few:  # one read of the run's promoted cases (issue 25: no Promote on them)
        assert client.get(_page(small)).status_code == 200
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(_page(big)).status_code == 200


def test_an_anonymous_visitor_is_sent_to_log_in(race, client):
    response = client.get(_page(race))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_page_shows_clusters_with_replay_and_evidence_links(race, viewer, client_for):
    response = client_for(viewer).get(_page(race))
    assert response.status_code == 200
    body = response.content.decode()
    assert WRONG_TITLE in body and body.count("data-case-run=") == 2
    wrong = case(race, 1, "three-squared")
    assert f'href="/w/{race.workspace.slug}/runs/{race.pk}/cases/{wrong.pk}/" data-replay-link' in body
    assert "data-evidence-link" in body and 'data-case-actions="' in body


def test_the_page_filters_and_explains_a_bad_filter(race, viewer, client_for):
    client = client_for(viewer)
    empty = client.get(_page(race, **{"class": "timeout"})).content.decode()
    assert "No failure matches these filters." in empty and "data-case-run=" not in empty
    bad = client.get(_page(race, severity="fatal"))
    assert bad.status_code == 400
    assert 'data-filter-error="severity"' in bad.content.decode()


def test_a_run_with_nothing_failed_says_so(workspace, viewer, client_for):
    run = make_run(workspace)
    body = client_for(viewer).get(_page(run)).content.decode()
    assert "Nothing failed in this run." in body


def test_the_run_page_links_to_the_review_with_the_failed_count(race, viewer, client_for):
    body = client_for(viewer).get(f"/w/{race.workspace.slug}/runs/{race.pk}/").content.decode()
    assert f'href="/w/{race.workspace.slug}/runs/{race.pk}/failures/" data-failures-link' in body
    assert '<span class="num" data-count="failures-review">2</span>' in body
    assert failure_review(run=race).failed_cases == 2  # the same count the review page shows
