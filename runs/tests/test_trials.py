"""Repeated trials in runs (docs/runs.md, "Trials"): model, API, dispatch, matrix, replay, adaptive rounds."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from core.errors import DomainError
from engine.providers.scripted import drawn_script
from engine.scoring import stats
from regression.tests.factories import WRONG
from runs import services
from runs.models import CaseRun, CaseStatus, LaneStatus, RepeatsMode, Run, RunStatus
from runs.pipeline import run_round_advance
from runs.tests.factories import READ_AND_SUBMIT, make_deployment, native_pack_yaml, publish

BASE = "/api/v1/workspaces/acme/runs"


def mixed_deployment(workspace, *, name: str, pass_weight: float, seed: int = 7):
    """A stochastic scripted agent: passes with probability ``pass_weight`` (engine/providers/scripted.py)."""
    deployment = make_deployment(workspace, name=name)
    deployment.deployment_config = {
        "script_mix": [
            {"weight": pass_weight, "script": {"default": READ_AND_SUBMIT}},
            {"weight": 1 - pass_weight, "script": {"default": WRONG}},
        ],
        "seed": seed,
    }
    deployment.save(update_fields=["deployment_config"])
    return deployment


def _create(workspace, admin, version, deployments, **extra) -> Run:
    return services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[d.pk for d in deployments], **extra)


# -- the model -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_lane_holds_one_case_run_per_case_and_trial(workspace, admin, pack_version, deployment):
    run = _create(workspace, admin, pack_version, [deployment], repeats=2)
    first = CaseRun.objects.get(run=run, case_key="case-0", trial=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        CaseRun.objects.create(run=run, lane=first.lane, case=first.case, case_key="case-0", trial=2)
    with pytest.raises(IntegrityError), transaction.atomic():
        CaseRun.objects.create(run=run, lane=first.lane, case=first.case, case_key="case-0", trial=0)
    CaseRun.objects.create(run=run, lane=first.lane, case=first.case, case_key="case-0", trial=3)  # a new trial is fine


@pytest.mark.django_db
def test_the_database_refuses_repeats_out_of_range_and_max_repeats_without_auto(workspace, admin, pack_version, deployment):
    run = _create(workspace, admin, pack_version, [deployment])
    for values in ({"repeats": 0}, {"repeats": 51}, {"max_repeats": 5}, {"repeats_mode": "auto"}, {"repeats_mode": "often"}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Run.objects.filter(pk=run.pk).update(**values)


# -- run creation and the API -------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body, field",
    [
        ({"repeats": 0}, "repeats"),
        ({"repeats": 51}, "repeats"),
        ({"repeats": "x"}, "repeats"),
        ({"repeats": True}, "repeats"),
        ({"repeats": 2.5}, "repeats"),
        ({"repeats": "auto"}, "max_repeats"),
        ({"repeats": "auto", "max_repeats": 51}, "max_repeats"),
        ({"repeats": "auto", "max_repeats": 1}, "max_repeats"),
        ({"repeats": 3, "max_repeats": 5}, "max_repeats"),
    ],
)
def test_the_api_refuses_bad_repeats_naming_the_field(api_client_for, member, pack_version, deployment, body, field):
    response = api_client_for(member).post(
        BASE, {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk], **body}, format="json"
    )
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert field in error["fields"], error
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_auto_repeats_need_two_deployments(api_client_for, member, pack_version, deployment):
    body = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk], "repeats": "auto", "max_repeats": 5}
    response = api_client_for(member).post(BASE, body, format="json")
    assert response.status_code == 400
    assert "two deployments" in response.json()["error"]["fields"]["repeats"][0]


@pytest.mark.django_db
def test_the_api_starts_a_run_with_repeats_and_reports_trials(api_client_for, member, workspace, pack_version, deployment, tasks):
    other = make_deployment(workspace, name="other")
    body = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk, other.pk], "repeats": 3}
    response = api_client_for(member).post(BASE, body, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["repeats"] == 3 and created["repeats_mode"] == "fixed" and created["max_repeats"] is None
    assert created["case_counts"]["total"] == 18  # 3 cases × 3 trials × 2 lanes
    assert [lane["trials"] for lane in created["lanes"]] == [3, 3]
    tasks.drain()
    cases = api_client_for(member).get(f"{BASE}/{created['id']}/cases?lane={created['lanes'][0]['id']}").json()
    assert cases["count"] == 9
    assert sorted((c["case_key"], c["trial"]) for c in cases["results"]) == [(f"case-{i}", t) for i in range(3) for t in (1, 2, 3)]
    assert all(c["attempt"] == 1 for c in cases["results"])
    second = api_client_for(member).get(f"{BASE}/{created['id']}/cases?trial=2").json()
    assert second["count"] == 6 and {c["trial"] for c in second["results"]} == {2}
    assert api_client_for(member).get(f"{BASE}/{created['id']}/cases?trial=x").json()["count"] == 0


@pytest.mark.django_db
def test_the_api_accepts_auto_with_max_repeats(api_client_for, member, workspace, pack_version, deployment):
    other = make_deployment(workspace, name="other")
    body = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk, other.pk], "repeats": "auto", "max_repeats": 6}
    created = api_client_for(member).post(BASE, body, format="json").json()
    assert created["repeats"] == "auto" and created["repeats_mode"] == "auto" and created["max_repeats"] == 6
    assert created["rounds"] == 1 and created["case_counts"]["total"] == 12  # first round: 2 trials


@pytest.mark.django_db
def test_a_run_without_repeats_keeps_one_trial(workspace, admin, pack_version, deployment, tasks):
    run = _create(workspace, admin, pack_version, [deployment])
    assert run.repeats == 1 and run.repeats_mode == RepeatsMode.FIXED
    assert set(CaseRun.objects.filter(run=run).values_list("trial", flat=True)) == {1}


# -- dispatch and execution ------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_trial_runs_with_its_own_events_and_score(workspace, admin, pack_version, deployment, tasks):
    run = _create(workspace, admin, pack_version, [deployment], repeats=4)
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    rows = list(CaseRun.objects.filter(run=run))
    assert len(rows) == 12 and all(r.status == CaseStatus.COMPLETED and r.passed for r in rows)
    assert all(r.events.exists() for r in rows)
    assert len({r.events.first().event_id for r in rows}) == 12  # events are per case run


def _passes(run: Run) -> dict[tuple[str, str, int], bool | None]:
    return {(c.lane.label, c.case_key, c.trial): c.passed for c in CaseRun.objects.filter(run=run).select_related("lane")}


@pytest.mark.django_db
def test_a_stochastic_agent_draws_one_script_per_trial_reproducibly(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=4))
    mixed = mixed_deployment(workspace, name="coin", pass_weight=0.5, seed=11)
    first = _create(workspace, admin, version, [mixed], repeats=6)
    tasks.drain()
    second = _create(workspace, admin, version, [mixed], repeats=6)
    tasks.drain()
    once, again = _passes(first), _passes(second)
    assert once == again  # seeded by (seed, case key, trial)
    # Each trial plays the draw of (seed, case key, trial - 1): a pass exactly when the mix drew its passing script.
    for (_, case_key, trial), passed in once.items():
        _, index = drawn_script(mixed.deployment_config, case_key, trial - 1)
        assert passed is (index == 0), (case_key, trial)
    assert {True, False} <= set(once.values())  # trials of one agent differ


@pytest.mark.django_db
def test_a_retried_trial_keeps_its_trial_index(workspace, admin, pack_version, deployment, tasks):
    run = _create(workspace, admin, pack_version, [deployment], repeats=2)
    tasks.drain()
    trial = CaseRun.objects.get(run=run, case_key="case-1", trial=2)
    assert trial.attempt == 1
    # A retry claims the same row again (attempt + 1): the trial index does not move.
    CaseRun.objects.filter(pk=trial.pk).update(status=CaseStatus.QUEUED, dispatched_at=None)
    from runs.lifecycle import case_claim

    claimed = case_claim(case_run_id=trial.pk)
    assert claimed is not None and claimed.attempt == 2 and claimed.trial == 2


@pytest.mark.django_db
def test_cancelling_a_run_with_trials_cancels_every_open_trial(workspace, admin, pack_version, deployment, tasks):
    run = _create(workspace, admin, pack_version, [deployment], repeats=3)
    services.run_cancel(run=run, user=admin)
    tasks.drain()
    assert set(CaseRun.objects.filter(run=run).values_list("status", flat=True)) == {CaseStatus.CANCELLED}


# -- pages: the run page, the matrix and the replay's trial switcher ------------------------------


@pytest.mark.django_db
def test_the_run_page_counts_case_runs_as_cases_times_trials(client_for, member, workspace, admin, pack_version, deployment, tasks):
    other = make_deployment(workspace, name="other")
    run = _create(workspace, admin, pack_version, [deployment, other], repeats=3)
    tasks.drain()
    html = client_for(member).get(f"/w/acme/runs/{run.pk}/").content.decode()
    assert "18 case runs (3 cases × 3 trials × 2 lanes)" in html
    assert "9 / 9 case runs (3 trials per case) done" in html  # each lane card


@pytest.mark.django_db
def test_the_matrix_shows_k_of_n_passed_per_cell(client_for, member, workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=4))
    mixed = mixed_deployment(workspace, name="coin", pass_weight=0.5, seed=11)
    run = _create(workspace, admin, version, [mixed], repeats=6)
    tasks.drain()
    html = client_for(member).get(f"/w/acme/runs/{run.pk}/").content.decode()
    for case_key in ("case-0", "case-1", "case-2", "case-3"):
        rows = CaseRun.objects.filter(run=run, case_key=case_key)
        k = rows.filter(passed=True).count()
        first = rows.get(trial=1)
        assert f"{k}/6 passed" in html
        assert f'data-cell="{first.pk}"' in html  # the cell links to trial 1
    assert "mean per trial" in html  # the cells' latency, tokens and cost are their trials' means


@pytest.mark.django_db
def test_one_trial_cells_are_unchanged(client_for, member, workspace, admin, pack_version, deployment, tasks):
    run = _create(workspace, admin, pack_version, [deployment])
    tasks.drain()
    html = client_for(member).get(f"/w/acme/runs/{run.pk}/").content.decode()
    assert "/1 passed" not in html and "mean per trial" not in html and "every trial counted" not in html
    assert 'class="cell-label">Pass<' in html


@pytest.mark.django_db
def test_the_replay_moves_between_trials(client_for, member, workspace, admin, pack_version, deployment, tasks):
    run = _create(workspace, admin, pack_version, [deployment], repeats=3)
    tasks.drain()
    trials = list(CaseRun.objects.filter(run=run, case_key="case-1").order_by("trial"))
    client = client_for(member)
    middle = client.get(f"/w/acme/runs/{run.pk}/cases/{trials[1].pk}/").content.decode()
    assert 'id="trial-switcher"' in middle and "Trial 2 of 3" in middle
    assert f'href="/w/acme/runs/{run.pk}/cases/{trials[0].pk}/" title="Previous trial' in middle
    assert f'href="/w/acme/runs/{run.pk}/cases/{trials[2].pk}/" title="Next trial' in middle
    # Previous/next case stays on the same trial.
    next_case = CaseRun.objects.get(run=run, case_key="case-2", trial=2)
    assert f'rel="next" data-hotkey="n" href="/w/acme/runs/{run.pk}/cases/{next_case.pk}/"' in middle
    first = client.get(f"/w/acme/runs/{run.pk}/cases/{trials[0].pk}/").content.decode()
    assert "← first trial" in first and "Trial 1 of 3" in first


@pytest.mark.django_db
def test_a_one_trial_replay_has_no_trial_switcher(client_for, member, workspace, admin, pack_version, deployment, tasks):
    run = _create(workspace, admin, pack_version, [deployment])
    tasks.drain()
    case_run = CaseRun.objects.get(run=run, case_key="case-0")
    html = client_for(member).get(f"/w/acme/runs/{run.pk}/cases/{case_run.pk}/").content.decode()
    assert 'id="trial-switcher"' not in html


@pytest.mark.django_db
def test_another_workspaces_trial_urls_are_not_found(client_for, stranger, workspace, admin, pack_version, deployment, tasks):
    run = _create(workspace, admin, pack_version, [deployment], repeats=2)
    tasks.drain()
    second = CaseRun.objects.get(run=run, case_key="case-0", trial=2)
    assert client_for(stranger).get(f"/w/acme/runs/{run.pk}/cases/{second.pk}/").status_code == 404


# -- adaptive rounds ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_adaptive_rounds_stop_early_when_the_comparison_is_decided(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=3))
    good = make_deployment(workspace, name="good")
    bad = make_deployment(workspace, name="bad", script=WRONG)
    run = _create(workspace, admin, version, [good, bad], repeats="auto", max_repeats=20)
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    log = run.round_log
    assert log[-1]["stop"] is True and log[-1]["reason"] == "decided"
    assert log[-1]["decisions"]["bad"]["decision"] == "fail"
    trials = {lane.label: lane.trials for lane in run.lanes.all()}
    assert trials["good"] == trials["bad"] < 20  # fewer trials than the budget
    assert run.rounds == len(log) and run.rounds == trials["good"] - 1  # 2 trials in round 1, one more per round
    assert CaseRun.objects.filter(run=run).count() == 3 * 2 * trials["good"]
    assert not CaseRun.objects.filter(run=run).exclude(status=CaseStatus.COMPLETED).exists()


@pytest.mark.django_db
def test_adaptive_rounds_never_go_beyond_max_repeats(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=3))
    one, two = make_deployment(workspace, name="one"), make_deployment(workspace, name="two")  # equal: hard to decide
    run = _create(workspace, admin, version, [one, two], repeats="auto", max_repeats=4)
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert run.round_log[-1]["reason"] == "budget_spent"
    assert [lane.trials for lane in run.lanes.order_by("lane_index")] == [4, 4]
    assert CaseRun.objects.filter(run=run).count() == 3 * 4 * 2
    assert CaseRun.objects.filter(run=run, trial__gt=4).count() == 0


@pytest.mark.django_db
def test_a_decided_candidate_stops_while_an_undecided_one_goes_on(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=3))
    base, same = make_deployment(workspace, name="base"), make_deployment(workspace, name="same")
    broken = make_deployment(workspace, name="broken", script=WRONG)
    run = _create(workspace, admin, version, [base, same, broken], repeats="auto", max_repeats=8)
    tasks.drain()
    run.refresh_from_db()
    trials = {lane.label: lane.trials for lane in run.lanes.all()}
    # "same" plays like "base" in every trial: once each case gave the same outcome SETTLE_TRIALS times
    # on both sides, more trials cannot move the comparison and the rounds stop before max_repeats.
    assert trials["broken"] < trials["same"] == trials["base"] == stats.SETTLE_TRIALS < 8
    assert run.round_log[-1]["reason"] == "settled"
    assert all(lane.status == LaneStatus.COMPLETED for lane in run.lanes.all())


def _flaky_on(workspace, *, name: str, case_key: str, seed: int):
    """Passes every case every time, except ``case_key``, which it passes half the time."""
    deployment = make_deployment(workspace, name=name)
    deployment.deployment_config = {
        "script_mix": [
            {"weight": 0.5, "script": {"default": READ_AND_SUBMIT}},
            {"weight": 0.5, "script": {"default": READ_AND_SUBMIT, "cases": {case_key: WRONG}}},
        ],
        "seed": seed,
    }
    deployment.save(update_fields=["deployment_config"])
    return deployment


@pytest.mark.django_db
def test_adaptive_rounds_top_up_only_the_cases_still_uncertain(client_for, member, workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=4))
    base = _flaky_on(workspace, name="base", case_key="case-3", seed=3)
    other = _flaky_on(workspace, name="other", case_key="case-3", seed=5)
    run = _create(workspace, admin, version, [base, other], repeats="auto", max_repeats=12)
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    per_case = {
        (lane.label, key): CaseRun.objects.filter(lane=lane, case_key=key).count()
        for lane in run.lanes.all()
        for key in ("case-0", "case-1", "case-2", "case-3")
    }
    # Cases 0-2 pass every trial on both sides: settled after SETTLE_TRIALS, never topped up again.
    for label in ("base", "other"):
        for key in ("case-0", "case-1", "case-2"):
            assert per_case[(label, key)] == stats.SETTLE_TRIALS
    # Case 3 is a coin on both sides: it alone went on, to the budget (4 cases cannot decide).
    assert per_case[("base", "case-3")] == per_case[("other", "case-3")] == 12
    assert run.round_log[-1]["reason"] == "budget_spent"
    later = [entry for entry in run.round_log if entry["trials"] >= stats.SETTLE_TRIALS and not entry["stop"]]
    assert later and all(entry["cases"] == {"other": 1, "base": 1} for entry in later)
    assert all(lane.status == LaneStatus.COMPLETED for lane in run.lanes.all())
    lane = run.lanes.get(label="other")
    html = client_for(member).get(f"/w/acme/runs/{run.pk}/lanes/{lane.pk}/scorecard/").content.decode()
    assert "Cases ran up to 12 times in this lane" in html and "Every case ran" not in html
    page = client_for(member).get(f"/w/acme/runs/{run.pk}/").content.decode()
    assert "4 cases" in page  # counted by trial 1, not by the lane's most trials


@pytest.mark.django_db
def test_a_redelivered_round_task_changes_nothing(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=3))
    one, two = make_deployment(workspace, name="one"), make_deployment(workspace, name="two")
    run = _create(workspace, admin, version, [one, two], repeats="auto", max_repeats=3)
    tasks.drain(skip={"runs.run_round_advance"})  # round 1 runs; its decision is not taken yet
    assert run_round_advance(run_id=run.pk) == "next_round"
    assert run_round_advance(run_id=run.pk) == "waiting"  # the redelivery: lanes are executing again
    run.refresh_from_db()
    assert run.rounds == 2 and len(run.round_log) == 1
    assert CaseRun.objects.filter(run=run).count() == 3 * 3 * 2
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and len(run.round_log) == 2
    assert run_round_advance(run_id=run.pk) == "waiting"  # finished: nothing more


@pytest.mark.django_db
def test_the_run_page_shows_rounds_and_trials_saved(client_for, member, workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=3))
    good, bad = make_deployment(workspace, name="good"), make_deployment(workspace, name="bad", script=WRONG)
    run = _create(workspace, admin, version, [good, bad], repeats="auto", max_repeats=20)
    tasks.drain()
    run.refresh_from_db()
    html = client_for(member).get(f"/w/acme/runs/{run.pk}/").content.decode()
    done = CaseRun.objects.filter(run=run).count()
    assert 'id="run-rounds"' in html and f"round {run.rounds}" in html
    assert f"{3 * 2 * 20 - done} case runs saved" in html and "every comparison with good is decided" in html


@pytest.mark.django_db
def test_repeats_resolve_refuses_a_fixed_max_repeats_by_name():
    from runs.services.trials import repeats_resolve

    with pytest.raises(DomainError) as caught:
        repeats_resolve(repeats=2, max_repeats=4)
    assert caught.value.field == "max_repeats"
    assert repeats_resolve(repeats="3").first_round == 3
    auto = repeats_resolve(repeats="AUTO", max_repeats="7", lanes=2)
    assert auto.is_adaptive and auto.max_repeats == 7 and auto.first_round == 2


# -- demo data -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_demo_seeds_two_stochastic_agents_and_a_run_with_trials(tasks):
    from infrastructure.demo import FLAKY_NAME, STEADY_NAME
    from runs.demo import TRIALS_RUN_NAME
    from workspaces.demo import demo_seed

    demo = demo_seed()  # tests seeding the demo get no run
    assert not Run.objects.filter(workspace=demo.workspace).exists()
    demo_seed(with_runs=True)
    demo_seed(with_runs=True)  # idempotent
    run = Run.objects.get(workspace=demo.workspace, name=TRIALS_RUN_NAME)
    assert run.repeats == 5 and [lane.label for lane in run.lanes.order_by("lane_index")] == [STEADY_NAME, FLAKY_NAME]
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    rates = {}
    for lane in run.lanes.all():
        rows = CaseRun.objects.filter(lane=lane)
        assert rows.count() == 15  # 3 cases × 5 trials
        rates[lane.label] = rows.filter(passed=True).count() / 15
    # Known true rates 0.93 and 0.73 (infrastructure/demo.py); the seeded draws give these, every time.
    assert rates[STEADY_NAME] > rates[FLAKY_NAME]
    assert 0 < rates[FLAKY_NAME] < 1


# -- the lane scorecard with trials --------------------------------------------------------------


@pytest.mark.django_db
def test_the_lane_scorecard_lists_each_case_once_with_its_trials(
    client_for, member, workspace, admin, tasks, django_assert_max_num_queries
):
    version = publish(workspace, admin, native_pack_yaml(cases=4))
    mixed = mixed_deployment(workspace, name="coin", pass_weight=0.5, seed=11)
    run = _create(workspace, admin, version, [mixed], repeats=6)
    tasks.drain()
    lane = run.lanes.get()
    client = client_for(member)
    html = client.get(f"/w/acme/runs/{run.pk}/lanes/{lane.pk}/scorecard/").content.decode()
    assert 'id="case-trials-note"' in html and "ran 6 times" in html
    for case_key in ("case-0", "case-1", "case-2", "case-3"):
        rows = CaseRun.objects.filter(run=run, case_key=case_key)
        assert f"{rows.filter(passed=True).count()}/6 passed" in html
        assert html.count(f'href="#case-{rows.get(trial=1).pk}"') == 1
        assert f'href="#case-{rows.get(trial=2).pk}"' not in html
    failures = client.get(f"/w/acme/runs/{run.pk}/lanes/{lane.pk}/scorecard/?failures=1").content.decode()
    flaky = [k for k in ("case-0", "case-1", "case-2", "case-3") if CaseRun.objects.filter(run=run, case_key=k, passed=False).exists()]
    assert flaky and all(f"<code>{k}</code></a>" in failures for k in flaky)
    # The page's queries do not grow with the trials.
    one = _create(workspace, admin, version, [mixed])
    tasks.drain()
    url_one = f"/w/acme/runs/{one.pk}/lanes/{one.lanes.get().pk}/scorecard/"
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as at_one:
        client.get(url_one)
    with django_assert_max_num_queries(len(at_one) + 1):  # + the trials' count
        client.get(f"/w/acme/runs/{run.pk}/lanes/{lane.pk}/scorecard/")


@pytest.mark.django_db
def test_the_matrix_counted_in_the_database_says_the_same_as_folding_every_trial(workspace, admin, tasks):
    from runs import selectors
    from runs.matrix import matrix_rows

    version = publish(workspace, admin, native_pack_yaml(cases=5))
    coin = mixed_deployment(workspace, name="coin", pass_weight=0.5, seed=3)
    steady = make_deployment(workspace, name="steady")
    run = _create(workspace, admin, version, [steady, coin], repeats=5)
    tasks.drain()
    # One trial still running and one cancelled, so the cells have open and verdict-less trials too.
    CaseRun.objects.filter(run=run, case_key="case-1", trial=4).update(status=CaseStatus.RUNNING, passed=None)
    CaseRun.objects.filter(run=run, case_key="case-2", trial=5).update(status=CaseStatus.CANCELLED)
    lanes = list(run.lanes.order_by("lane_index"))
    folded = matrix_rows(selectors.case_matrix_rows(run=run), lanes)
    counted = matrix_rows(
        selectors.case_matrix_rows(run=run, first_trials=True), lanes, trial_counts=selectors.case_matrix_trial_counts(run=run)
    )
    assert [r.case_key for r in folded] == [r.case_key for r in counted]
    for a, b in zip(folded, counted, strict=True):
        for x, y in zip(a.cells, b.cells, strict=True):
            assert (x.case_run_id, x.label, x.tone, x.verdict, x.detail, x.trials) == (
                y.case_run_id,
                y.label,
                y.tone,
                y.verdict,
                y.detail,
                y.trials,
            )
            assert x.score == pytest.approx(y.score)
    labels = {cell.label for row in counted for cell in row.cells}
    assert "5/5 passed" in labels and any("/4 passed" in label for label in labels)


@pytest.mark.django_db
def test_the_run_page_reads_as_many_queries_at_ten_trials_as_at_two(
    client_for, member, workspace, admin, pack_version, deployment, tasks, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(member)
    two = _create(workspace, admin, pack_version, [deployment], repeats=2)
    ten = _create(workspace, admin, pack_version, [deployment], repeats=10)
    tasks.drain()
    client.get(f"/w/acme/runs/{two.pk}/")  # warm-up
    with CaptureQueriesContext(connection) as at_two:
        client.get(f"/w/acme/runs/{two.pk}/")
    with django_assert_max_num_queries(len(at_two)):
        html = client.get(f"/w/acme/runs/{ten.pk}/").content.decode()
    assert "10/10 passed" in html


# -- the New-run page --------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_new_run_page_starts_an_adaptive_run_and_names_a_missing_max_repeats(client_for, member, workspace, pack_version, deployment):
    other = make_deployment(workspace, name="second")
    client = client_for(member)
    base = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk, other.pk], "repeats": "auto"}
    refused = client.post("/w/acme/runs/new/", base)
    assert refused.status_code == 200 and not Run.objects.exists()
    body = refused.content.decode()
    section = body.split('id="run-repeats"')[1].split('id="run-race-context"')[0]
    assert "repeats &quot;auto&quot; needs max_repeats" in section  # next to the field
    preview = client.get("/w/acme/runs/new/", base, HTTP_HX_REQUEST="true").content.decode()
    assert "2 agents × 3 cases × adaptive trials (rounds until decided)" in preview
    started = client.post("/w/acme/runs/new/", {**base, "max_repeats": "6"})
    assert started.status_code == 302
    run = Run.objects.get()
    assert run.is_adaptive and run.max_repeats == 6 and run.repeats == 2
    assert CaseRun.objects.filter(run=run).count() == 3 * 2 * 2


@pytest.mark.django_db
def test_manage_py_run_pack_takes_repeats_and_refuses_a_bad_value(workspace, pack_version, deployment, tasks):
    import io

    from django.core.management import CommandError, call_command

    out = io.StringIO()
    call_command(
        "run_pack", "--workspace", "acme", "--pack-version", str(pack_version.pk), "--deployment", "reader", "--repeats", "3", stdout=out
    )
    run = Run.objects.get(pk=int(out.getvalue().strip()))
    assert run.repeats == 3 and CaseRun.objects.filter(run=run).count() == 9
    with pytest.raises(CommandError, match="repeats must be an integer from 1 to 50"):
        call_command("run_pack", "--workspace", "acme", "--pack-version", str(pack_version.pk), "--deployment", "reader", "--repeats", "0")


@pytest.mark.django_db
def test_a_round_read_by_two_calls_is_recorded_once(workspace, admin, tasks, monkeypatch):
    from runs.pipeline import rounds

    version = publish(workspace, admin, native_pack_yaml(cases=3))
    one, two = make_deployment(workspace, name="one"), make_deployment(workspace, name="two")
    run = _create(workspace, admin, version, [one, two], repeats="auto", max_repeats=2)  # round 1 is the last
    tasks.drain(skip={"runs.run_round_advance"})
    real = rounds._decide

    def racing(run_row, lanes, open_lanes):
        found = real(run_row, lanes, open_lanes)
        # Another call records the same round between this call's read and its write.
        Run.objects.filter(pk=run_row.pk).update(round_log=[found[0]], updated_at=run_row.updated_at.replace(year=2030))
        return found

    monkeypatch.setattr(rounds, "_decide", racing)
    assert run_round_advance(run_id=run.pk) == "waiting"
    monkeypatch.setattr(rounds, "_decide", real)
    assert run_round_advance(run_id=run.pk) == "settled"  # the recorded decision, not a second one
    run.refresh_from_db()
    assert len(run.round_log) == 1 and run.round_log[0]["reason"] == "budget_spent"
    assert run.status == RunStatus.COMPLETED


@pytest.mark.django_db
def test_a_cell_of_several_trials_shows_their_mean_latency_tokens_and_cost(workspace, admin, pack_version, deployment, tasks):
    from runs import selectors
    from runs.matrix import matrix_attach_details, matrix_rows

    run = _create(workspace, admin, pack_version, [deployment], repeats=2)
    tasks.drain()
    first, second = CaseRun.objects.filter(run=run, case_key="case-0").order_by("trial")
    CaseRun.objects.filter(pk=first.pk).update(duration_ms=100, total_tokens=10)
    CaseRun.objects.filter(pk=second.pk).update(duration_ms=300, total_tokens=30)
    for case_run, cost in ((first, 0.01), (second, 0.03)):
        score = case_run.case_score
        score.document = {**score.document, "cost_usd": cost}
        score.save(update_fields=["document"])
    lanes = list(run.lanes.all())
    counted = matrix_rows(
        selectors.case_matrix_rows(run=run, first_trials=True), lanes, trial_counts=selectors.case_matrix_trial_counts(run=run)
    )
    folded = matrix_rows(selectors.case_matrix_rows(run=run), lanes)
    for rows in (counted, folded):
        matrix_attach_details(
            rows, costs={}, inputs={}, cost_means=selectors.case_cost_means(run=run, case_keys=[r.case_key for r in rows])
        )
        cell = next(r for r in rows if r.case_key == "case-0").cells[0]
        assert (cell.latency_ms, cell.tokens) == (200, 20)
        assert cell.cost_usd == pytest.approx(0.02)


@pytest.mark.django_db
def test_the_exports_have_one_line_per_trial_and_the_report_counts_them(
    client_for, member, workspace, admin, pack_version, deployment, tasks
):
    import csv
    import io
    import json

    from runs.tests.test_results import streamed, url

    run = _create(workspace, admin, pack_version, [deployment], repeats=3)
    tasks.drain()
    client = client_for(member)
    rows = list(csv.DictReader(io.StringIO(streamed(client.get(url("results_csv", run.pk))))))
    assert len(rows) == 9 and [(r["case_key"], r["trial"]) for r in rows[:3]] == [("case-0", "1"), ("case-0", "2"), ("case-0", "3")]
    body = json.loads(streamed(client.get(url("results_json", run.pk))))
    assert sorted({(r["case_key"], r["trial"]) for r in body["results"]}) == [(f"case-{i}", t) for i in range(3) for t in (1, 2, 3)]
    report = client.get(url("report", run.pk)).content.decode()
    assert "3/3 passed" in report


# -- the rounds' own gate: max_regression and confidence ----------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "extra, field, words",
    [
        ({"max_regression": -0.1}, "max_regression", "max_regression must be from 0 to below 1"),
        ({"max_regression": 1}, "max_regression", "max_regression must be from 0 to below 1"),
        ({"max_regression": 0}, "max_regression", "greater than 0 for adaptive trials"),
        ({"confidence": 0.4}, "confidence", "confidence must be from 0.5 to below 1"),
        ({"confidence": 1.0}, "confidence", "confidence must be from 0.5 to below 1"),
        ({"confidence": "often"}, "confidence", ""),
        ({"repeats": 3, "max_repeats": None, "max_regression": 0.1}, "max_regression", 'goes with repeats "auto" only'),
        ({"repeats": 3, "max_repeats": None, "confidence": 0.9}, "confidence", 'goes with repeats "auto" only'),
    ],
)
def test_the_api_refuses_a_bad_round_policy_naming_the_field(
    api_client_for, member, workspace, pack_version, deployment, extra, field, words
):
    other = make_deployment(workspace, name="other")
    body = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk, other.pk], "repeats": "auto", "max_repeats": 6, **extra}
    response = api_client_for(member).post(BASE, body, format="json")
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert list(fields) == [field] and words in fields[field][0]
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_the_api_stores_the_round_policy_and_reports_it(api_client_for, member, workspace, pack_version, deployment):
    other = make_deployment(workspace, name="other")
    client = api_client_for(member)
    base = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk, other.pk], "repeats": "auto", "max_repeats": 6}
    created = client.post(BASE, {**base, "max_regression": 0.1, "confidence": 0.9}, format="json").json()
    assert created["max_regression"] == 0.1 and created["confidence"] == 0.9
    run = Run.objects.get(pk=created["id"])
    assert (run.round_max_regression, run.round_confidence) == (0.1, 0.9)
    defaults = client.post(BASE, base, format="json").json()
    assert defaults["max_regression"] == 0.05 and defaults["confidence"] == 0.95
    fixed = client.post(BASE, {**base, "repeats": 2, "max_repeats": None}, format="json").json()
    assert fixed["max_regression"] is None and fixed["confidence"] is None


@pytest.mark.django_db
def test_the_rounds_gate_with_the_runs_own_tolerance_and_confidence(workspace, admin, tasks):
    version = publish(workspace, admin, native_pack_yaml(cases=3))
    one, two = make_deployment(workspace, name="one"), make_deployment(workspace, name="two")  # equal
    strict = _create(workspace, admin, version, [one, two], repeats="auto", max_repeats=4)
    loose = _create(workspace, admin, version, [one, two], repeats="auto", max_repeats=4, max_regression=0.5, confidence=0.6)
    tasks.drain()
    strict.refresh_from_db()
    loose.refresh_from_db()
    # At 0.05 / 0.95, 3 equal cases stay undecided up to the budget; tolerating a drop of 0.5 at
    # 60 % confidence, the first round already shows "no drop beyond 0.5".
    assert strict.round_log[-1]["reason"] == "budget_spent"
    assert loose.round_log == [loose.round_log[0]] and loose.round_log[0]["reason"] == "decided"
    decision = loose.round_log[0]["decisions"]["two"]
    assert decision["decision"] == "pass" and "no drop beyond the tolerated 0.5" in decision["reason"]
    assert [lane.trials for lane in loose.lanes.all()] == [2, 2]


@pytest.mark.django_db
def test_the_new_run_page_takes_the_round_policy_and_names_a_bad_value(client_for, member, workspace, pack_version, deployment):
    other = make_deployment(workspace, name="second")
    client = client_for(member)
    base = {"pack_version_id": pack_version.pk, "deployment_ids": [deployment.pk, other.pk], "repeats": "auto", "max_repeats": "6"}
    refused = client.post("/w/acme/runs/new/", {**base, "confidence": "1.5"})
    assert refused.status_code == 200 and not Run.objects.exists()
    details = refused.content.decode().split('id="run-round-policy"')[1].split("</details>")[0]
    assert details.startswith(" open") and "confidence must be from 0.5 to below 1" in details
    started = client.post("/w/acme/runs/new/", {**base, "max_regression": "0.2", "confidence": "0.8"})
    assert started.status_code == 302
    run = Run.objects.get()
    assert (run.round_max_regression, run.round_confidence) == (0.2, 0.8)
