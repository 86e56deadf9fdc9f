"""The reviewer's pages through the test client (issue 11): run names, the runs list's columns,
search and sort, comparison titles and case diffs, the pack results chart, search, the New run
form's agent picker, scorecard headers and the sidebar's highlight."""

from __future__ import annotations

from datetime import timedelta
from typing import cast

import pytest
from django.urls import reverse
from django.utils import timezone

from comparisons import presenters
from comparisons.services import comparison_create
from engine.scoring.documents import CaseScoreDocument
from infrastructure.models import ExecutionTarget
from runs import services
from runs.models import Lane, Run
from runs.run_table import duration_text
from runs.services.naming import agents_text
from runs.templatetags.run_table import run_duration
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from scoring.tests.factories import make_pack_version, make_run

pytestmark = pytest.mark.django_db

GOOD = {"two-plus-two": "4", "three-squared": "9"}
SLOPPY = {"two-plus-two": "The answer is 5", "three-squared": "9"}


# -- default run names ------------------------------------------------------------------------------


def test_default_run_names_tell_runs_apart(workspace, admin, deployment):
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    other = make_deployment(workspace, name="challenger")
    first = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk, other.pk])
    second = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk, other.pk])
    solo = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[other.pk])
    stamp = f"{timezone.localtime(first.created_at):%Y-%m-%d %H:%M}"
    assert first.name.startswith(f"{version.pack.name} v1 · reader vs challenger · {stamp}:")  # to the second
    assert len({first.name, second.name, solo.name}) == 3  # same pack, agents and second: suffixed
    assert solo.name.startswith(f"{version.pack.name} v1 · challenger · ")


def test_many_agents_are_summarised_in_the_default_name():
    assert agents_text(["a", "b"]) == "a vs b"
    assert agents_text(["a", "b", "c", "d", "e"]) == "a vs b vs c + 2 more"


def test_a_typed_name_is_kept(workspace, admin, deployment):
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk], name=" Mine ")
    assert run.name == "Mine"


# -- the runs list ----------------------------------------------------------------------------------


@pytest.fixture
def scored_runs(workspace):
    version = make_pack_version(workspace)
    race = make_run(workspace, pack_version=version, lanes=[GOOD, SLOPPY], name="Race of two")
    solo = make_run(workspace, pack_version=version, lanes=[SLOPPY], name="Sloppy alone")
    now = timezone.now()
    Run.objects.filter(pk=race.pk).update(started_at=now - timedelta(seconds=75), finished_at=now)
    Run.objects.filter(pk=solo.pk).update(started_at=now - timedelta(seconds=5), finished_at=now)
    return race, solo


def _ids(response) -> list[int]:
    return [run.pk for run in response.context["runs"]]


def test_the_runs_list_shows_winner_best_score_pass_rate_and_duration(scored_runs, viewer, client_for):
    race, solo = scored_runs
    response = client_for(viewer).get(reverse("runs:list", args=["acme"]))
    rows = {run.pk: run for run in response.context["runs"]}
    assert rows[race.pk].winner_label == "lane-0"
    assert rows[race.pk].best_score == pytest.approx(race.lanes.get(lane_index=0).scorecard.overall_score)
    assert (rows[race.pk].cases_passed, rows[race.pk].cases_scored) == (3, 4)
    assert run_duration(rows[race.pk]) == "1m 15s" and run_duration(rows[solo.pk]) == "5.0s"
    body = response.content.decode()
    assert "75%" in body and "3 / 4" in body and "1m 15s" in body
    for label in ("Winner", "Best score", "Pass rate", "Duration"):
        assert f">{label}</a>" in body


@pytest.mark.parametrize(
    "sort, first",
    [
        ("-best_score", "race"),
        ("best_score", "solo"),
        ("-pass_rate", "race"),
        ("pass_rate", "solo"),
        ("-duration", "race"),
        ("name", "race"),
    ],
)
def test_the_runs_list_sorts_by_each_column(scored_runs, viewer, client_for, sort, first):
    race, solo = scored_runs
    response = client_for(viewer).get(reverse("runs:list", args=["acme"]), {"sort": sort})
    assert _ids(response)[0] == {"race": race.pk, "solo": solo.pk}[first]


def test_the_sorted_header_links_to_the_reverse_order_and_keeps_filters(scored_runs, viewer, client_for):
    response = client_for(viewer).get(reverse("runs:list", args=["acme"]), {"sort": "-best_score", "q": "race", "status": "completed"})
    header = next(c for c in response.context["columns"] if c.key == "best_score")
    assert header.aria_sort == "descending"
    assert header.href == "?status=completed&q=race&sort=best_score"
    assert 'aria-sort="descending"' in response.content.decode()


def test_an_unknown_sort_falls_back_to_newest_first(scored_runs, viewer, client_for):
    race, solo = scored_runs
    response = client_for(viewer).get(reverse("runs:list", args=["acme"]), {"sort": "password"})
    assert _ids(response) == [solo.pk, race.pk]


@pytest.mark.parametrize(
    "query, expected", [("race", ["race"]), ("ALONE", ["solo"]), ("lane-1", ["race"]), ("arithmetic", ["solo", "race"]), ("nothing", [])]
)
def test_the_runs_list_searches_names_packs_and_agents(scored_runs, viewer, client_for, query, expected):
    race, solo = scored_runs
    response = client_for(viewer).get(reverse("runs:list", args=["acme"]), {"q": query})
    assert _ids(response) == [{"race": race.pk, "solo": solo.pk}[name] for name in expected]
    if not expected:
        assert "No runs match" in response.content.decode()


def test_the_runs_list_finds_a_run_by_its_number(scored_runs, viewer, client_for):
    race, _ = scored_runs
    assert _ids(client_for(viewer).get(reverse("runs:list", args=["acme"]), {"q": f"#{race.pk}"})) == [race.pk]


def test_an_htmx_filter_returns_only_the_table(scored_runs, viewer, client_for):
    response = client_for(viewer).get(reverse("runs:list", args=["acme"]), {"q": "race"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="run-table">') and "<html" not in body


def test_the_runs_list_costs_the_same_queries_for_more_runs(workspace, viewer, client_for, django_assert_max_num_queries):
    version = make_pack_version(workspace)
    make_run(workspace, pack_version=version, lanes=[GOOD, SLOPPY])
    client = client_for(viewer)
    client.get(reverse("runs:list", args=["acme"]))
    with django_assert_max_num_queries(14) as few:
        client.get(reverse("runs:list", args=["acme"]), {"sort": "-pass_rate"})
    for _ in range(4):
        make_run(workspace, pack_version=version, lanes=[GOOD, SLOPPY])
    with django_assert_max_num_queries(len(few.captured_queries)):
        client.get(reverse("runs:list", args=["acme"]), {"sort": "-pass_rate"})


def test_duration_text_reads_like_a_person_would_say_it():
    assert duration_text(None) == ""
    assert duration_text(timedelta(seconds=1.24)) == "1.2s"
    assert duration_text(timedelta(seconds=48)) == "48s"
    assert duration_text(timedelta(seconds=185)) == "3m 05s"
    assert duration_text(timedelta(hours=2, minutes=4)) == "2h 04m"


# -- comparisons ------------------------------------------------------------------------------------


@pytest.fixture
def comparison(workspace, admin):
    version = make_pack_version(workspace)
    run = make_run(workspace, pack_version=version, lanes=[GOOD, SLOPPY], name="Arithmetic race")
    Lane.objects.filter(run=run, lane_index=0).update(label="Careful")
    Lane.objects.filter(run=run, lane_index=1).update(label="Hasty")
    careful, hasty = run.lanes.order_by("lane_index")
    return comparison_create(
        workspace=workspace, user=admin, baseline_run=run, candidate_run=run, baseline_lane=careful, candidate_lane=hasty
    )


def test_a_comparison_is_titled_candidate_vs_baseline(comparison, viewer, client_for):
    response = client_for(viewer).get(reverse("comparisons:detail", args=["acme", comparison.pk]))
    body = response.content.decode()
    assert '<h1 id="comparison-title">Hasty vs Careful</h1>' in body
    assert "<title>Hasty vs Careful · AgentClash</title>" in body
    assert "Comparison #" not in body
    listing = client_for(viewer).get(reverse("comparisons:list", args=["acme"])).content.decode()
    assert "Hasty vs Careful" in listing


def test_runs_of_the_same_agent_are_titled_by_run(workspace, admin):
    version = make_pack_version(workspace)
    old = make_run(workspace, pack_version=version, lanes=[GOOD], name="Before the prompt change")
    new = make_run(workspace, pack_version=version, lanes=[SLOPPY], name="After the prompt change")
    compared = comparison_create(workspace=workspace, user=admin, baseline_run=old, candidate_run=new)
    assert presenters.comparison_title(compared) == "After the prompt change vs Before the prompt change"
    same_name = make_run(workspace, pack_version=version, lanes=[GOOD], name="After the prompt change")
    twin = comparison_create(workspace=workspace, user=admin, baseline_run=same_name, candidate_run=new)
    assert presenters.comparison_title(twin) == f"After the prompt change (#{new.pk}) vs After the prompt change (#{same_name.pk})"


def test_a_diverging_case_shows_both_outputs_side_by_side_and_the_validator_that_changed(comparison, viewer, client_for):
    response = client_for(viewer).get(reverse("comparisons:detail", args=["acme", comparison.pk]))
    diffs = response.context["case_diffs"]
    assert [d.case_key for d in diffs] == ["two-plus-two"]
    diff = diffs[0]
    assert (diff.baseline.output, diff.candidate.output, diff.direction) == ("4", "The answer is 5", "worse")
    assert [(c.key, c.baseline_verdict, c.candidate_verdict, c.outcome) for c in diff.changes] == [("answer", "pass", "fail", "worse")]
    body = response.content.decode()
    assert 'class="ln ln-del">4</td>' in body and 'class="ln ln-add">The answer is 5</td>' in body
    assert "/cases/" in body  # links to both replays
    assert "three-squared" not in body.split('id="case-diffs"')[1].split("</section>")[0]  # same verdict: not listed


def test_side_by_side_marks_the_changed_words_and_pads_the_shorter_output():
    rows, truncated = presenters.side_by_side("The answer is 42.\nline two\nsame", "The answer is 43.\nsame\nextra")
    kinds = [(r.baseline.kind, r.candidate.kind) for r in rows]
    assert kinds == [("del", "add"), ("del", "pad"), ("same", "same"), ("pad", "add")]
    assert [(s.text, s.changed) for s in rows[0].candidate.segments] == [("The answer is ", False), ("43", True), (".", False)]
    assert not truncated


def test_side_by_side_cuts_huge_outputs():
    rows, truncated = presenters.side_by_side("a\n" * 50_000, "b\n" * 50_000)
    assert truncated and len(rows) == presenters.MAX_DIFF_ROWS


def test_verdict_changes_cover_validators_and_judges():
    # Stored documents with only the keys the presenter reads (an older document may lack the others).
    base = cast(
        CaseScoreDocument, {"validator_details": [{"key": "v", "verdict": "pass", "normalized_score": 1.0}], "llm_judge_details": []}
    )
    cand = cast(
        CaseScoreDocument,
        {
            "validator_details": [{"key": "v", "verdict": "pass", "normalized_score": 1.0}],
            "llm_judge_details": [{"judge_key": "tone", "state": "available", "normalized_score": 0.25, "reason": "curt"}],
        },
    )
    changes = presenters.verdict_changes(base, cand)
    assert [(c.kind, c.key, c.baseline_verdict, c.candidate_verdict) for c in changes] == [("judge", "tone", "absent", "0.25")]


# -- the pack results chart ---------------------------------------------------------------------------


def test_the_pack_results_chart_has_a_point_per_agent_and_run(workspace, viewer, client_for, django_assert_max_num_queries):
    version = make_pack_version(workspace)
    first = make_run(workspace, pack_version=version, lanes=[GOOD, SLOPPY])
    make_run(workspace, pack_version=version, lanes=[SLOPPY])
    make_run(workspace, pack_version=version, lanes=[GOOD], status="failed", score=False)  # not completed: left out
    url = reverse("scoring:pack_results", args=["acme", version.pack_id])
    client = client_for(viewer)
    with django_assert_max_num_queries(12):
        response = client.get(url, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<section class="card trend-chart" id="pack-results">')
    assert body.count("<circle") == 6  # 3 points × 2 charts
    assert body.count("<polyline") == 2  # lane-0 raced twice (a line), lane-1 once (a dot)
    assert f"lane-0 — run #{first.pk} (v1): pass rate 100%" in body
    assert " style=" not in body and "<script" not in body
    assert client.get(url).status_code == 200


def test_the_pack_results_chart_says_what_to_do_before_any_run(workspace, viewer, client_for):
    version = make_pack_version(workspace)
    body = client_for(viewer).get(reverse("scoring:pack_results", args=["acme", version.pack_id])).content.decode()
    assert "No scored runs of this pack yet" in body and "Start a run" in body


def test_the_pack_page_loads_its_results_from_the_runs_app(workspace, viewer, client_for):
    version = make_pack_version(workspace)
    body = client_for(viewer).get(reverse("packs:detail", args=["acme", version.pack_id])).content.decode()
    url = reverse("scoring:pack_results", args=["acme", version.pack_id])
    assert f'hx-get="{url}" hx-trigger="load"' in body and f'href="{url}"' in body


@pytest.mark.parametrize("persona, expected", [("viewer", 200), ("stranger", 404)])
def test_pack_results_and_search_answer_members_and_hide_from_strangers(request, workspace, client_for, persona, expected):
    version = make_pack_version(workspace)
    client = client_for(request.getfixturevalue(persona))
    assert client.get(reverse("scoring:pack_results", args=["acme", version.pack_id])).status_code == expected
    assert client.get(reverse("search:results", args=["acme"]), {"q": "a"}).status_code == expected


# -- search -------------------------------------------------------------------------------------------


def test_search_finds_runs_packs_and_deployments_by_name(workspace, viewer, client_for, scored_runs):
    make_deployment(workspace, name="Arithmetic whiz")
    response = client_for(viewer).get(reverse("search:results", args=["acme"]), {"q": "arith"})
    found = response.context["found"]
    assert {r.name for r in found.runs} == {"Race of two", "Sloppy alone"}  # by pack name
    assert [p.name for p in found.packs] == [scored_runs[0].pack_version.pack.name]
    assert [d.name for d in found.deployments] == ["Arithmetic whiz"]
    assert 'value="arith"' in response.content.decode()  # the top bar keeps the query


def test_search_says_when_nothing_matches_and_what_it_searches(workspace, viewer, client_for):
    empty = client_for(viewer).get(reverse("search:results", args=["acme"])).content.decode()
    assert "Type part of a name." in empty
    none = client_for(viewer).get(reverse("search:results", args=["acme"]), {"q": "zzz"}).content.decode()
    assert "Nothing matches “zzz”." in none


def test_search_never_shows_another_workspaces_things(workspace, other_workspace, viewer, client_for):
    make_deployment(other_workspace, name="Their agent")
    make_run(other_workspace, name="Their run")
    found = client_for(viewer).get(reverse("search:results", args=["acme"]), {"q": "their"}).context["found"]
    assert found.total == 0


# -- the New run form's agent picker -------------------------------------------------------------------


def test_the_agent_picker_offers_only_deployments_whose_runtime_fits_the_pack(workspace, admin, member, client_for, deployment):
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    prompt_only = make_deployment(workspace, name="prompt-only")
    prompt_only.runtime_profile.execution_target = ExecutionTarget.PROMPT_EVAL
    prompt_only.runtime_profile.save(update_fields=["execution_target"])
    client = client_for(member)
    response = client.get(reverse("runs:create", args=["acme"]), {"pack_version_id": version.pk}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="run-create-fields"')  # only the dependent region re-renders
    assert 'name="name"' not in body  # the name field is outside it: typing never triggers a re-render
    fieldset = body.split("<legend>3. Agents</legend>")[1].split("</fieldset>")[0]
    assert "reader" in fieldset and f'value="{prompt_only.pk}"' not in fieldset
    assert "prompt-only" in body.split('id="run-unfit-agents"')[1]

    # A stale or hand-made pick of an unfit agent gets the service's refusal next to the field.
    refused = client.post(reverse("runs:create", args=["acme"]), {"pack_version_id": version.pk, "deployment_ids": [prompt_only.pk]})
    assert refused.status_code == 200 and not Run.objects.exists()
    error = refused.context["form"].errors["deployment_ids"][0]
    assert "This is a native pack and prompt-only (runtime profile" in error and "runs prompt_eval) cannot run it" in error
    assert "execution target is native" in error
    agents = refused.content.decode().split("<legend>3. Agents</legend>")[1].split("</fieldset>")[0]
    assert '<small class="error">This is a native pack and prompt-only' in agents


# -- scorecard headers and the sidebar ------------------------------------------------------------------


def test_scorecard_sort_headers_are_buttons_and_the_sidebar_highlights_runs(workspace, viewer, client_for):
    run = make_run(workspace, lanes=[GOOD, SLOPPY])
    body = client_for(viewer).get(reverse("scoring:run_scorecard", args=["acme", run.pk])).content.decode()
    assert '<th class="num" data-sort="number"><button type="button" class="th-sort">Overall</button></th>' in body
    nav = body.split('<ul class="nav">')[1].split("</ul>")[0]
    current = [line for line in nav.splitlines() if "aria-current" in line]
    assert len(current) == 1 and ">Runs<" in current[0]
    lane = run.lanes.first()
    lane_nav = client_for(viewer).get(reverse("scoring:lane_scorecard", args=["acme", run.pk, lane.pk])).content.decode()
    assert next(line for line in lane_nav.split('<ul class="nav">')[1].split("</ul>")[0].splitlines() if "aria-current" in line).endswith(
        ">Runs</a></li>"
    )


def test_the_compare_section_is_highlighted_on_comparison_pages(comparison, viewer, client_for):
    body = client_for(viewer).get(reverse("comparisons:detail", args=["acme", comparison.pk])).content.decode()
    current = [line for line in body.split('<ul class="nav">')[1].split("</ul>")[0].splitlines() if "aria-current" in line]
    assert len(current) == 1 and ">Compare<" in current[0]
