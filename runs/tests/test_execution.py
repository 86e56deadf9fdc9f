from __future__ import annotations

import pytest

from engine.events import MODEL_CALL_COMPLETED, SYSTEM_RUN_COMPLETED, SYSTEM_RUN_FAILED, SYSTEM_STEP_STARTED
from engine.sandbox import IsolationUnavailableError
from engine.types import JSONObject, ProviderError
from runs import pipeline, services
from runs.events import payload_hydrate, run_events_append
from runs.models import CaseRun, CaseStatus, LaneStatus, Run, RunEvent, RunStatus
from runs.pipeline import native as attempt
from runs.tests.factories import make_deployment
from scoring.services import evidence_for_case_run


@pytest.mark.django_db
def test_it_runs_a_pack_to_completion(workspace, admin, pack_version, deployment, tasks):
    run = services.run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[deployment.pk])
    assert tasks.names() == ["runs.run_start"]
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    cases = list(CaseRun.objects.filter(run=run).order_by("position"))
    assert [c.status for c in cases] == [CaseStatus.COMPLETED] * 3
    assert cases[0].final_output and "note number 0" in cases[0].final_output
    assert cases[0].tool_call_count == 1
    assert run.lanes.get().status == LaneStatus.COMPLETED
    seqs = list(RunEvent.objects.filter(lane__run=run).order_by("sequence_number").values_list("sequence_number", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


@pytest.fixture
def run_of(workspace, admin, pack_version):
    def create(deployment, version=None):
        return services.run_create(workspace=workspace, user=admin, pack_version=version or pack_version, deployment_ids=[deployment.pk])

    return create


@pytest.mark.django_db
def test_running_every_task_twice_changes_nothing(run_of, deployment, tasks):
    run = run_of(deployment)
    tasks.drain(limit=1)  # run_start
    executes = [item for item in tasks.items if item[0] == "runs.case_run_execute"]
    tasks.items.extend(executes)  # every case task delivered twice
    tasks.items.append(("runs.run_start", (run.pk,), {}))
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert list(CaseRun.objects.filter(run=run).values_list("attempt", flat=True)) == [1, 1, 1]
    ids = list(RunEvent.objects.filter(run=run).values_list("event_id", flat=True))
    assert len(ids) == len(set(ids))
    assert RunEvent.objects.filter(run=run, event_type=SYSTEM_RUN_COMPLETED).count() == 3


@pytest.mark.django_db
def test_the_event_sink_skips_events_it_already_stored(run_of, deployment, tasks):
    from engine.types import Event

    run = run_of(deployment)
    lane = run.lanes.get()
    case = CaseRun.objects.filter(run=run).first()
    events = [
        Event(
            event_id=f"x:{i}",
            event_type=SYSTEM_STEP_STARTED,
            source="native_engine",
            occurred_at="2026-01-01T00:00:00.000Z",
            payload={"step_index": i},
        )
        for i in range(3)
    ]
    assert run_events_append(run_id=run.pk, lane_id=lane.pk, case_run_id=case.pk, attempt=1, events=events) == 3
    assert run_events_append(run_id=run.pk, lane_id=lane.pk, case_run_id=case.pk, attempt=1, events=events + events) == 0
    assert list(RunEvent.objects.filter(lane=lane).values_list("sequence_number", flat=True)) == [1, 2, 3]


@pytest.mark.django_db
def test_it_stores_oversized_payloads_as_files_and_hydrates_them(run_of, deployment, settings):
    from engine.types import Event

    settings.RUN_EVENT_INLINE_MAX_BYTES = 100
    run = run_of(deployment)
    lane = run.lanes.get()
    big: JSONObject = {"output_text": "x" * 500}
    run_events_append(
        run_id=run.pk,
        lane_id=lane.pk,
        case_run_id=None,
        attempt=1,
        events=[Event("big:1", MODEL_CALL_COMPLETED, "native_engine", "2026-01-01T00:00:00Z", big)],
    )
    event = RunEvent.objects.get(event_id="big:1")
    assert set(event.payload) == {"$ref", "bytes", "type"} and event.payload["type"] == MODEL_CALL_COMPLETED
    assert payload_hydrate(event.payload)["output_text"] == "x" * 500


@pytest.mark.django_db
def test_it_redacts_workspace_secrets_from_events_and_results(workspace, run_of, tasks):
    from secrets_app.services import secret_set

    secret_set(workspace=workspace, key="API_TOKEN", value="s3cr3t-value-123")
    deployment = make_deployment(workspace, script=[{"submit": "the token is s3cr3t-value-123"}])
    run = run_of(deployment)
    tasks.drain()
    case = CaseRun.objects.filter(run=run).first()
    assert case.status == CaseStatus.COMPLETED
    assert "s3cr3t-value-123" not in (case.final_output or "") and "[redacted]" in case.final_output
    for payload in RunEvent.objects.filter(run=run).values_list("payload", flat=True):
        assert "s3cr3t-value-123" not in str(payload)


@pytest.mark.django_db
def test_it_keeps_at_most_max_in_flight_cases_per_lane(workspace, admin, tasks):
    from runs.tests.factories import native_pack_yaml, publish

    version = publish(workspace, admin, native_pack_yaml(cases=5))
    deployment = make_deployment(workspace, max_in_flight_cases=2)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain(limit=1)
    assert tasks.names().count("runs.case_run_execute") == 2
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED


@pytest.mark.django_db
@pytest.mark.parametrize(
    "script, profile, stop_reason, status",
    [
        (None, {}, "completed", CaseStatus.COMPLETED),
        ([{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 5, {"max_iterations": 2}, "step_limit", CaseStatus.FAILED),
        ([{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 5, {"max_tool_calls": 1}, "tool_limit", CaseStatus.FAILED),
        ([{"text": "I think the answer is 4"}], {}, "agent_error", CaseStatus.FAILED),
    ],
)
def test_each_stop_reason_is_surfaced(workspace, run_of, tasks, script, profile, stop_reason, status, client_for, viewer):
    deployment = make_deployment(workspace, script=script, **profile)
    run = run_of(deployment)
    tasks.drain()
    case = CaseRun.objects.filter(run=run).first()
    assert (case.status, case.stop_reason) == (status, stop_reason), case.error
    body = client_for(viewer).get(f"/w/acme/runs/{run.pk}/").content.decode()
    assert stop_reason in body


@pytest.mark.django_db
def test_a_missing_credential_fails_the_case_with_a_clear_error(workspace, run_of, tasks):
    deployment = make_deployment(workspace, credential_reference="workspace-secret://MISSING")
    run = run_of(deployment)
    tasks.drain()
    case = CaseRun.objects.filter(run=run).first()
    assert case.status == CaseStatus.FAILED and case.stop_reason == "provider_error"
    assert 'workspace secret "MISSING" not found' in case.error
    assert case.attempt == 1  # not retryable
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "every lane failed" in run.failure_reason


@pytest.mark.django_db
def test_a_sandbox_error_is_retried_at_most_three_times(workspace, run_of, tasks, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(attempt, "create_sandbox", broken)
    deployment = make_deployment(workspace)
    run = run_of(deployment)
    tasks.drain()
    cases = list(CaseRun.objects.filter(run=run))
    assert {(c.status, c.stop_reason, c.attempt) for c in cases} == {(CaseStatus.FAILED, "sandbox_error", 3)}
    failed_events = RunEvent.objects.filter(case_run=cases[0], event_type=SYSTEM_RUN_FAILED)
    assert sorted(failed_events.values_list("attempt", flat=True)) == [1, 2, 3]


class FailingProvider:
    provider_key = "scripted"

    def __init__(self, error: ProviderError) -> None:
        self.error = error

    def complete(self, request):
        raise self.error


@pytest.mark.django_db
@pytest.mark.parametrize("retryable, attempts", [(True, 3), (False, 1)])
def test_a_provider_failure_is_retried_only_when_the_provider_says_so(workspace, run_of, tasks, monkeypatch, retryable, attempts):
    # "unknown" is not retried inside the loop, so only the worker's retry decision is at work.
    error = ProviderError("unknown", "upstream hiccup", retryable=retryable)
    monkeypatch.setattr(attempt, "create_provider", lambda *args, **kwargs: FailingProvider(error))
    run = run_of(make_deployment(workspace))
    tasks.drain()
    case = CaseRun.objects.filter(run=run).order_by("position").first()
    assert (case.status, case.stop_reason, case.attempt) == (CaseStatus.FAILED, "provider_error", attempts)
    assert case.provider_failure["retryable"] is retryable and "upstream hiccup" in case.error
    failed = RunEvent.objects.filter(case_run=case, event_type=SYSTEM_RUN_FAILED)
    assert sorted(failed.values_list("attempt", flat=True)) == list(range(1, attempts + 1))


@pytest.mark.django_db
@pytest.mark.parametrize("inline", [True, False], ids=["scored with the finish", "scored by the finalize job"])
def test_only_the_final_attempt_is_scored_a_superseded_one_stays_in_the_replay(workspace, run_of, tasks, monkeypatch, inline):
    """Issue 22 item 4: a provider outage the retry fixed is the harness's, not the agent's record."""
    real = attempt.create_provider  # type: ignore[attr-defined]  # the name the attempt uses
    calls: list[int] = []

    def flaky_then_fine(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:  # the first attempt's provider is down
            return FailingProvider(ProviderError("unknown", "503 from upstream", retryable=True))
        return real(*args, **kwargs)

    monkeypatch.setattr(attempt, "create_provider", flaky_then_fine)
    run = run_of(make_deployment(workspace))
    tasks.drain_inline() if inline else tasks.drain()
    case = CaseRun.objects.filter(run=run).order_by("position").first()
    assert (case.status, case.attempt) == (CaseStatus.COMPLETED, 2)
    assert RunEvent.objects.filter(case_run=case, attempt=1, event_type=SYSTEM_RUN_FAILED).exists()  # still in the replay
    evidence = evidence_for_case_run(case)
    assert not [e for e in evidence.events if e["event_type"] == SYSTEM_RUN_FAILED]
    assert {str(e["event_id"]).split(":")[3] for e in evidence.events} == {"2"}  # <mode>:<lane>:<case run>:<attempt>:…
    case.refresh_from_db()
    assert (case.passed, case.score) == (True, 1.0)


@pytest.mark.django_db
def test_a_sandbox_that_cannot_isolate_fails_the_case_without_a_retry(workspace, run_of, tasks, monkeypatch):
    def unavailable(*args, **kwargs):
        raise IsolationUnavailableError

    monkeypatch.setattr(attempt, "create_sandbox", unavailable)
    run = run_of(make_deployment(workspace))
    tasks.drain()
    case = CaseRun.objects.filter(run=run).order_by("position").first()
    assert (case.status, case.stop_reason, case.attempt) == (CaseStatus.FAILED, "sandbox_error", 1)
    assert "sandbox unavailable: process isolation unavailable" in case.error
    assert RunEvent.objects.filter(case_run=case, event_type=SYSTEM_RUN_FAILED).count() == 1


@pytest.mark.django_db
def test_cancelling_mid_run_stops_cases_and_queued_tasks_exit(run_of, deployment, tasks, member):
    run = run_of(deployment)
    tasks.drain(limit=2)  # start + the first case
    run.refresh_from_db()
    services.run_cancel(run=run, user=member)
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    statuses = sorted(CaseRun.objects.filter(run=run).values_list("status", flat=True))
    assert statuses == [CaseStatus.CANCELLED, CaseStatus.CANCELLED, CaseStatus.COMPLETED]
    assert RunEvent.objects.filter(run=run, event_type=SYSTEM_RUN_COMPLETED).count() == 1


@pytest.mark.django_db
def test_a_running_case_stops_at_its_next_cancel_check(workspace, run_of, tasks, member, monkeypatch):

    deployment = make_deployment(
        workspace, script=[{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 8 + [{"submit": "x"}]
    )
    run = run_of(deployment)
    tasks.drain(limit=1)
    original = attempt.CaseCancelCheck.__call__
    calls = {"n": 0}

    def cancel_after_a_few(self):
        calls["n"] += 1
        if calls["n"] == 3:
            Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
        self.checked_at = 0
        return original(self)

    monkeypatch.setattr(attempt.CaseCancelCheck, "__call__", cancel_after_a_few)
    tasks.drain()
    first = CaseRun.objects.filter(run=run).order_by("position").first()
    assert first.status == CaseStatus.CANCELLED and first.stop_reason == "cancelled"


@pytest.mark.django_db
def test_the_reaper_fails_orphaned_runs_and_requeues_stale_cases(workspace, run_of, deployment, tasks):
    import datetime as dt

    from django.utils import timezone

    orphan = run_of(deployment)
    Run.objects.filter(pk=orphan.pk).update(created_at=timezone.now() - dt.timedelta(minutes=16))
    live = run_of(deployment)
    tasks.items.clear()
    services.run_start(run_id=live.pk)
    tasks.items.clear()  # the case messages are lost with their worker
    stuck = CaseRun.objects.filter(run=live).order_by("position").first()
    CaseRun.objects.filter(pk=stuck.pk).update(status=CaseStatus.RUNNING, attempt=1, heartbeat_at=timezone.now() - dt.timedelta(minutes=5))
    CaseRun.objects.filter(run=live, status=CaseStatus.QUEUED).update(dispatched_at=timezone.now() - dt.timedelta(minutes=11))
    report = services.run_reap()
    assert report["orphaned"] == 1 and report["requeued"] == 1 and report["redispatched"] == 2
    orphan.refresh_from_db()
    assert orphan.status == RunStatus.FAILED and "orphaned" in orphan.failure_reason
    tasks.drain()
    live.refresh_from_db()
    assert live.status == RunStatus.COMPLETED
    stuck.refresh_from_db()
    assert stuck.attempt == 2 and stuck.status == CaseStatus.COMPLETED


@pytest.mark.django_db
def test_prompt_eval_runs_without_a_sandbox(workspace, admin, tasks):
    from runs.tests.factories import native_pack_yaml, publish

    version = publish(workspace, admin, native_pack_yaml(cases=2, mode="prompt_eval"))
    deployment = make_deployment(workspace, script=[{"text": "note number 0"}], execution_target="prompt_eval")
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert set(CaseRun.objects.filter(run=run).values_list("final_output", flat=True)) == {"note number 0"}


@pytest.mark.django_db
def test_cases_are_scored_and_the_lane_waits_for_its_scores(run_of, deployment, tasks):
    run = run_of(deployment)
    tasks.drain(skip={"runs.case_run_finalize"})
    run.refresh_from_db()
    lane = run.lanes.get()
    assert run.status == RunStatus.RUNNING and lane.status == LaneStatus.EVALUATING
    for case in CaseRun.objects.filter(run=run):
        pipeline.case_run_finalize(case_run_id=case.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert set(CaseRun.objects.filter(run=run).values_list("passed", flat=True)) == {True}
