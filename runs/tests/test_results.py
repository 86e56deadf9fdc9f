"""The results matrix (latency, tokens, cost, inputs, full output, ?q= search), the lane bar that
follows the outcome, results.csv, results.json and the self-contained report.html (docs/runs.md)."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.urls import reverse
from django.utils.html import escape
from rest_framework.test import APIClient

from regression.tests.factories import failing_deployment
from runs import services
from runs.models import CaseRun
from runs.tests.factories import make_deployment, publish
from runs.tests.test_security_in_runs import ENV_CANARY, PACK
from workspaces import services as workspace_services
from workspaces.models import TokenScope

pytestmark = pytest.mark.django_db


def url(name, *args):
    return reverse(f"runs:{name}", args=["acme", *args])


@pytest.fixture
def race(workspace, admin, pack_version, deployment, tasks):
    """A finished run of two lanes: ``reader`` passes every case, ``guesser`` fails every one."""
    guesser = failing_deployment(workspace)
    run = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk, guesser.pk])
    tasks.drain()
    run.refresh_from_db()
    return run


def streamed(response) -> str:
    return b"".join(response.streaming_content).decode()


def test_a_lane_that_failed_every_case_has_a_red_bar_not_a_green_one(race, viewer, client_for):
    body = client_for(viewer).get(url("detail", race.pk)).content.decode()
    cards = dict(
        re.findall(r'data-lane-status="\w+" data-outcome="(\w+)">\s*<header class="lane-head">\s*<strong class="lane-name">([^<]+)<', body)
    )
    assert sorted(cards.values()) == ["guesser", "reader"]
    by_label = {label: outcome for outcome, label in cards.items()}
    assert by_label == {"reader": "pass", "guesser": "fail"}
    bars = re.findall(r'<rect class="seg-ok" width="([\d.]+)" height="1"/><rect class="seg-failed" x="[\d.]+" width="([\d.]+)"', body)
    assert sorted(bars) == [("0.00", "100.00"), ("100.00", "0.00")]  # the failing lane's fill is all red
    assert "lane-outcome-fail" in body and "3 failed" in body


def test_matrix_cells_show_latency_tokens_cost_and_the_row_shows_the_inputs(race, viewer, client_for):
    body = client_for(viewer).get(url("detail", race.pk)).content.decode()
    facts = re.findall(r'<span class="cell-facts" data-facts>([^<]+)</span>', body)
    assert len(facts) == 6  # 3 cases × 2 lanes
    case = CaseRun.objects.filter(run=race).exclude(duration_ms=None).first()
    assert all(" tok" in f and ("$" in f or "not priced" in f) for f in facts), facts
    assert any(f"{case.total_tokens} tok" in f for f in facts)
    assert '<pre class="case-inputs">number: 0</pre>' in body  # the case's inputs, key: value
    assert "Full output" in body and url("case_output", race.pk, case.pk) in body


def test_a_cell_expands_to_the_whole_output_past_its_start(race, viewer, client_for):
    case = CaseRun.objects.filter(run=race).first()
    long = "{" + ", ".join(f'"key_{i}": {i}' for i in range(80)) + ', "extra_key_that_failed": true}'
    CaseRun.objects.filter(pk=case.pk).update(final_output=long)
    client = client_for(viewer)
    page = client.get(url("detail", race.pk)).content.decode()
    assert "extra_key_that_failed" not in page  # the cell shows the start of a long output…
    full = client.get(url("case_output", race.pk, case.pk), HTTP_HX_REQUEST="true").content.decode()
    assert "extra_key_that_failed" in full and "<html" not in full  # …and expands to all of it
    assert client.get(url("case_output", race.pk, case.pk)).status_code == 200  # the plain page too


@pytest.mark.parametrize("persona, expected", [("viewer", 200), ("stranger", 404)])
def test_the_output_and_exports_answer_members_and_hide_from_strangers(request, race, client_for, persona, expected):
    client = client_for(request.getfixturevalue(persona))
    case = CaseRun.objects.filter(run=race).first()
    for target in (
        url("case_output", race.pk, case.pk),
        url("results_csv", race.pk),
        url("results_json", race.pk),
        url("report", race.pk),
    ):
        assert client.get(target).status_code == expected, target


def test_search_finds_cases_by_input_output_and_key_on_the_server(race, viewer, client_for):
    client = client_for(viewer)
    CaseRun.objects.filter(run=race, case_key="case-2").update(final_output="The needle is HERE")

    def keys(q):
        body = client.get(url("detail", race.pk), {"q": q}).content.decode()
        return re.findall(r'<tr(?: class="disagree")? data-case="([^"]+)"', body)

    assert keys("needle is here") == ["case-2"]  # an output, case-insensitive
    assert keys("number: 1") == [] and keys('"1"') == ["case-1"]  # the inputs as shown (JSON values)
    assert keys("case-0") == ["case-0"]
    assert keys("nothing like this") == []
    assert keys("x" * 5000) == []  # bounded: cut at 200 characters, no error
    body = client.get(url("detail", race.pk), {"q": "needle", "view": "list"}).content.decode()
    assert body.count("data-case-run=") == 2  # the list view: that case in both lanes


def test_search_is_scoped_to_the_run_and_reads_masked_inputs(workspace, admin, viewer, client_for, race, tasks):
    other = services.run_create(
        workspace=workspace, user=admin, pack_version=race.pack_version, deployment_ids=[race.lanes.first().deployment_id]
    )
    tasks.drain()
    CaseRun.objects.filter(run=other, case_key="case-0").update(final_output="only in the other run")
    body = client_for(viewer).get(url("detail", race.pk), {"q": "only in the other run"}).content.decode()
    assert "data-case=" not in body and "No case has" in body


def test_results_csv_has_one_row_per_case_and_lane_and_neutralises_formulas(race, viewer, client_for):
    CaseRun.objects.filter(run=race, case_key="case-1").update(final_output='=HYPERLINK("http://evil.example","x")')
    CaseRun.objects.filter(run=race, case_key="case-2").update(final_output="@SUM(1+1)")
    response = client_for(viewer).get(url("results_csv", race.pk))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert response.streaming and f'filename="run-{race.pk}-results.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(streamed(response))))
    assert len(rows) == 6
    assert list(rows[0]) == [
        "case_key", "lane", "lane_index", "trial", "status", "passed", "score", "latency_ms",
        "input_tokens", "output_tokens", "total_tokens", "cost_usd", "stop_reason", "output",
    ]  # fmt: skip
    assert {(r["case_key"], r["lane"], r["passed"]) for r in rows} >= {("case-0", "reader", "true"), ("case-0", "guesser", "false")}
    outputs = {r["output"] for r in rows}
    assert '\'=HYPERLINK("http://evil.example","x")' in outputs and "'@SUM(1+1)" in outputs
    assert not any(r[c].startswith(("=", "+", "-", "@")) for r in rows for c in r)
    assert all(r["latency_ms"].isdigit() and r["total_tokens"].isdigit() for r in rows)


def test_results_json_streams_one_object_per_case_and_lane(race, viewer, client_for):
    response = client_for(viewer).get(url("results_json", race.pk))
    assert response.status_code == 200 and response["Content-Type"] == "application/json" and response.streaming
    data = json.loads(streamed(response))
    assert data["run"]["id"] == race.pk and data["run"]["status"] == "completed"
    results = data["results"]
    assert len(results) == 6
    first = results[0]
    assert set(first) >= {"case_key", "lane", "status", "passed", "score", "latency_ms", "total_tokens", "cost_usd", "output"}
    case = CaseRun.objects.get(pk=first["case_run_id"])
    assert (first["output"], first["total_tokens"], first["latency_ms"]) == (case.final_output, case.total_tokens, case.duration_ms)


def test_report_html_is_one_self_contained_file(race, viewer, client_for):
    response = client_for(viewer).get(url("report", race.pk))
    html = response.content.decode()
    assert response.status_code == 200 and html.startswith("<!doctype html>")
    assert "<script" not in html.lower() and "<link" not in html.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)  # loads nothing from anywhere
    assert not re.search(r"url\(|@import", html)
    assert html.count("<style>") == 1 and 'content="noindex, nofollow"' in html
    case = CaseRun.objects.filter(run=race).exclude(final_output=None).first()
    assert escape(case.final_output) in html  # whole outputs
    assert "number: 0" in html and "Scorecard" in html and "reader" in html and "guesser" in html
    policy = response["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "style-src 'sha256-" in policy and "unsafe-inline" not in policy
    download = client_for(viewer).get(url("report", race.pk), {"download": "1"})
    assert f'attachment; filename="run-{race.pk}-report.html"' == download["Content-Disposition"]


def test_report_style_hash_matches_its_inline_style(race, viewer, client_for):
    import base64
    import hashlib

    response = client_for(viewer).get(url("report", race.pk))
    css = re.search(r"<style>(.*?)</style>", response.content.decode(), re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in response["Content-Security-Policy"]


@pytest.fixture
def leaky_run(workspace, admin, tasks):
    """A security pack run whose agent leaked a planted value into its answer (a row written before
    storage masking, or by a path that missed it), with the canary in the case's inputs too."""
    source = PACK.replace(
        f'payload: {{note: "STRIPE_KEY is {ENV_CANARY}"}}',
        f'payload: {{note: "x"}}\n        inputs:\n          - {{key: note, kind: text, value: "the key is {ENV_CANARY}"}}',
    )
    assert source != PACK
    version = publish(workspace, admin, source)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[make_deployment(workspace).pk])
    CaseRun.objects.filter(run=run).update(final_output=f"Sure: {ENV_CANARY}", status="completed", passed=False, score=0.0)
    return run


def test_exports_and_the_report_mask_planted_values(leaky_run, viewer, client_for):
    client = client_for(viewer)
    for target in (url("results_csv", leaky_run.pk), url("results_json", leaky_run.pk)):
        text = streamed(client.get(target))
        assert ENV_CANARY not in text and "[redacted]" in text, target
    for target in (url("report", leaky_run.pk), url("detail", leaky_run.pk)):
        html = client.get(target).content.decode()
        assert ENV_CANARY not in html and "the key is [redacted]" in html, target
    case = CaseRun.objects.get(run=leaky_run)
    assert ENV_CANARY not in client.get(url("case_output", leaky_run.pk, case.pk)).content.decode()


def test_search_is_no_oracle_for_a_planted_value(leaky_run, viewer, client_for):
    CaseRun.objects.filter(run=leaky_run).update(final_output="I won't print it.")
    client = client_for(viewer)
    assert 'data-case="deploy"' in client.get(url("detail", leaky_run.pk), {"q": "the key is"}).content.decode()
    body = client.get(url("detail", leaky_run.pk), {"q": ENV_CANARY[-8:]}).content.decode()
    assert 'data-case="deploy"' not in body and "No case has" in body  # the inputs are searched as shown: masked


def test_the_matrix_page_query_count_does_not_grow_with_cases(
    workspace, admin, deployment, viewer, client_for, tasks, django_assert_max_num_queries
):
    from runs.tests.factories import native_pack_yaml

    counts = []
    for cases in (2, 12):
        version = publish(workspace, admin, native_pack_yaml(cases=cases))
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
        tasks.drain()
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            assert client_for(viewer).get(url("detail", run.pk)).status_code == 200
        counts.append(len(captured.captured_queries))
    assert counts[1] <= counts[0] + 2, counts


def _bearer(user, *, workspace=None):
    client = APIClient()
    raw = workspace_services.api_token_create(user=user, name="export script", scope=TokenScope.READ, workspace=workspace)[1]
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.mark.parametrize("kind", ["csv", "json"])
def test_a_read_token_downloads_the_same_results_as_the_run_page(race, viewer, client_for, kind, workspace):
    # Scripts and CI read a run's results without a browser session: the same bytes as the page's link.
    response = _bearer(viewer, workspace=workspace).get(f"/api/v1/workspaces/{workspace.slug}/runs/{race.pk}/results.{kind}")
    assert response.status_code == 200 and response.streaming
    assert f'attachment; filename="run-{race.pk}-results.{kind}"' == response["Content-Disposition"]
    assert response["Cache-Control"] == "private, no-store" and response["X-Content-Type-Options"] == "nosniff"
    body = streamed(response)
    assert body == streamed(client_for(viewer).get(url(f"results_{kind}", race.pk)))
    rows = json.loads(body)["results"] if kind == "json" else list(csv.DictReader(io.StringIO(body)))
    assert len(rows) == 6 and {r["case_key"] for r in rows} == {"case-0", "case-1", "case-2"}


@pytest.mark.parametrize("kind", ["csv", "json"])
def test_another_workspaces_results_are_a_404_and_no_token_is_a_401(race, stranger, other_workspace, kind, workspace):
    path = f"/api/v1/workspaces/{workspace.slug}/runs/{race.pk}/results.{kind}"
    assert _bearer(stranger, workspace=other_workspace).get(path).status_code == 404
    other_path = f"/api/v1/workspaces/{other_workspace.slug}/runs/{race.pk}/results.{kind}"
    assert _bearer(stranger, workspace=other_workspace).get(other_path).status_code == 404  # the run is not theirs
    assert _bearer(stranger, workspace=other_workspace).get(path.replace(f"results.{kind}", "results.xml")).status_code == 404
    assert APIClient().get(path).status_code == 401
