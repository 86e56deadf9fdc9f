"""Byte budgets of the events native agents store (docs/operations.md, Quotas): a case that floods
events is stopped with ``quota_exceeded``, counted as its own failure and never retried."""

from __future__ import annotations

import json
import shutil

import pytest
from django.urls import reverse

from conftest import require_or_skip
from engine.events import SYSTEM_RUN_FAILED
from engine.providers import registry
from engine.scoring.evidence import AGENT_STOPS
from engine.types import Event, ModelResponse, ToolCall, Usage
from regression.failures.classify import TIMEOUT, CaseFacts, classify
from runs import services
from runs.events import EventQuota, RunEventSink
from runs.models import CaseRun, CaseStatus, RunEvent, RunStatus
from runs.templatetags.run_table import stop_reason_label
from runs.tests.factories import make_deployment, native_pack_yaml, publish

CHUNK = 20_000  # characters of model text per step: a flood against the small budgets below


class FloodProvider:
    """Each call answers ``CHUNK`` characters of text (``flood: 0`` in the deployment: a short
    one) and asks to read the note; with ``submit`` it submits the note instead after two calls."""

    def __init__(self, settings) -> None:
        self.provider_key = settings.provider_key
        self.size = int(settings.deployment_config.get("flood", CHUNK))
        self.calls = 0

    def complete(self, request) -> ModelResponse:
        self.calls += 1
        call = ToolCall(id=f"c{self.calls}", name="read_file", arguments='{"path": "/workspace/notes.txt"}')
        if self.calls > 2:
            call = ToolCall(id=f"c{self.calls}", name="submit", arguments='{"answer": "note number 0"}')
        return ModelResponse(
            provider_key=self.provider_key,
            provider_model_id=request.model,
            finish_reason="tool_calls",
            output_text="x" * self.size,
            tool_calls=[call],
            usage=Usage(5, 5, 10),
        )


@pytest.fixture
def flood_provider(monkeypatch, settings):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    monkeypatch.setitem(registry._ADAPTERS, "scripted", ("runs.tests.test_event_quota", "FloodProvider", ""))
    settings.RUNS_EVENT_FLUSH_SECONDS = 0  # each event is its own batch: the budget is checked at once


def _deployment(workspace, flood: int = CHUNK):
    deployment = make_deployment(workspace)
    deployment.deployment_config = {"flood": flood}
    deployment.save(update_fields=["deployment_config"])
    return deployment


def _run(workspace, admin, tasks, deployment, cases: int = 1) -> list[CaseRun]:
    version = publish(workspace, admin, native_pack_yaml(cases=cases))
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain()
    return list(CaseRun.objects.filter(run=run).order_by("position"))


def _queued_cases(workspace, admin, cases: int = 1) -> list[CaseRun]:
    """A started run's cases, not executed: the sink tests drive a sink by hand."""
    version = publish(workspace, admin, native_pack_yaml(cases=cases))
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[make_deployment(workspace).pk])
    return list(CaseRun.objects.filter(run=run).order_by("position"))


def _sink(case: CaseRun, quota: EventQuota, **options) -> RunEventSink:
    """The sink of ``case``'s current attempt (``attempt=`` another one), flushing every event unless told."""
    options = {"attempt": case.attempt, "interval": 0, **options}
    return RunEventSink(run_id=case.run_id, lane_id=case.lane_id, case_run_id=case.pk, redactor=None, quota=quota, **options)


def _event(case: CaseRun, event_id: str, text: str, event_type: str = "model.output.delta") -> Event:
    return Event(event_id, event_type, "native_engine", "2026-01-01T00:00:00Z", {"text": text}, case_key=case.case_key)


def _assert_stopped(case: CaseRun, setting: str) -> None:
    assert (case.status, case.stop_reason, case.attempt) == (CaseStatus.FAILED, "quota_exceeded", 1)  # never retried
    assert setting in case.error and "budget of stored event bytes is spent" in case.error
    failed = RunEvent.objects.filter(case_run=case, event_type=SYSTEM_RUN_FAILED).get()
    assert failed.payload["stop_reason"] == "quota_exceeded" and setting in failed.payload["error"]


@pytest.mark.django_db
def test_a_case_that_floods_events_stops_at_its_case_budget_and_is_not_retried(workspace, admin, tasks, flood_provider, settings):
    settings.EVENT_BYTES_PER_CASE = 30_000
    [case] = _run(workspace, admin, tasks, _deployment(workspace))
    _assert_stopped(case, "EVENT_BYTES_PER_CASE")
    assert "of 30000 (EVENT_BYTES_PER_CASE)" in case.error
    # stopped at the next check: it never got to submit, and what is stored stays near the budget
    assert case.step_count <= 2 and "case attempt" in case.error
    assert 30_000 < case.hosted_bytes < 30_000 + 2 * CHUNK + 10_000
    stored = sum(len(str(e.payload)) for e in RunEvent.objects.filter(case_run=case).exclude(event_type__startswith="scoring."))
    assert stored < 30_000 + 2 * CHUNK + 10_000
    # the agent's failure: scored as not delivered, never "insufficient evidence"
    assert case.passed is False and "quota_exceeded" in AGENT_STOPS
    assert stop_reason_label("quota_exceeded") == "Event storage quota exceeded"
    failure = classify(CaseFacts(status="failed", stop_reason="quota_exceeded", error=case.error, passed=False))
    assert failure is not None and failure.failure_class == TIMEOUT  # "Timeout or limit" on the failures page
    assert case.run.status != RunStatus.RUNNING  # the run went on to its end


@pytest.mark.django_db
def test_under_the_budgets_nothing_changes_and_the_bytes_are_counted(workspace, admin, tasks, flood_provider, settings):
    settings.EVENT_BYTES_PER_CASE = 200_000
    settings.EVENT_BYTES_PER_RUN = 1_000_000
    settings.EVENT_BYTES_PER_WORKSPACE = 1_000_000
    [case] = _run(workspace, admin, tasks, _deployment(workspace, flood=10))
    assert (case.status, case.stop_reason, case.passed) == (CaseStatus.COMPLETED, "completed", True)
    assert 0 < case.hosted_bytes < 200_000  # its stored events, counted


@pytest.mark.django_db
def test_the_run_budget_stops_the_case_that_spends_it(workspace, admin, tasks, flood_provider, settings):
    settings.EVENT_BYTES_PER_RUN = 30_000
    cases = _run(workspace, admin, tasks, _deployment(workspace), cases=2)
    assert {c.stop_reason for c in cases} == {"quota_exceeded"}
    for case in cases:
        _assert_stopped(case, "EVENT_BYTES_PER_RUN")
        assert "the run budget" in case.error


@pytest.mark.django_db
def test_the_workspace_budget_counts_the_workspaces_other_running_runs(workspace, admin, tasks, flood_provider, settings):
    settings.EVENT_BYTES_PER_WORKSPACE = 50_000
    deployment = _deployment(workspace, flood=10)
    [first] = _run(workspace, admin, tasks, deployment)
    assert first.stop_reason == "completed"  # a small case fits
    first.run.status = RunStatus.RUNNING  # as if it still ran: its bytes count against the workspace
    first.run.save(update_fields=["status"])
    CaseRun.objects.filter(pk=first.pk).update(hosted_bytes=45_000)
    [case] = _run(workspace, admin, tasks, deployment)
    _assert_stopped(case, "EVENT_BYTES_PER_WORKSPACE")
    assert "the workspace budget" in case.error


@pytest.mark.django_db
def test_a_case_the_engine_completed_past_its_budget_still_fails_with_quota_exceeded(workspace, admin, tasks, flood_provider, settings):
    settings.EVENT_BYTES_PER_CASE = 10_000  # prompt_eval: one model call, whose answer alone is over it
    deployment = make_deployment(workspace, execution_target="prompt_eval")
    version = publish(workspace, admin, native_pack_yaml(cases=1, mode="prompt_eval"))
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain()
    case = CaseRun.objects.get(run=run)
    _assert_stopped(case, "EVENT_BYTES_PER_CASE")
    assert case.final_output in (None, "") and case.passed is False


@pytest.mark.django_db
def test_the_admin_workspace_usage_page_shows_native_event_bytes(workspace, admin, tasks, flood_provider, settings, client):
    settings.EVENT_BYTES_PER_WORKSPACE = 100_000
    [case] = _run(workspace, admin, tasks, _deployment(workspace, flood=10))
    case.run.status = RunStatus.RUNNING  # the page counts running runs' events (what the budget counts)
    case.run.save(update_fields=["status"])
    CaseRun.objects.filter(pk=case.pk).update(hosted_bytes=25_000)  # what the native sink counted, rounded
    admin.is_staff = admin.is_superuser = True
    admin.save(update_fields=["is_staff", "is_superuser"])
    client.force_login(admin)
    text = client.get(reverse("admin:runs_workspaceusage_changelist")).content.decode()
    assert "Events stored by running runs (hosted and native)" in text and "Of (EVENT_BYTES_PER_WORKSPACE)" in text
    assert '<td class="field-events_running">24.4\xa0KB</td>' in text
    assert '<td class="field-event_quota">97.7\xa0KB (25.0 % used)</td>' in text


@pytest.mark.django_db
def test_once_the_budget_is_spent_only_the_harness_events_are_stored(workspace, admin):
    [case] = _queued_cases(workspace, admin)
    sink = _sink(case, EventQuota(500, 0, 0))

    def event(n: int, event_type: str, text: str) -> Event:
        return _event(case, f"q:{n}", text, event_type)

    sink(event(1, "model.output.delta", "a" * 100))
    assert sink.quota_stop == "" and 100 < CaseRun.objects.get(pk=case.pk).hosted_bytes < 200  # counted, under the budget
    sink(event(2, "model.output.delta", "b" * 600))  # stored whole, then over the budget
    assert "case attempt budget" in sink.quota_stop and "used of 500 (EVENT_BYTES_PER_CASE)" in sink.quota_stop
    sink(event(3, "tool.call.completed", "c" * 50))  # the agent's: dropped
    sink(event(4, SYSTEM_RUN_FAILED, "stopped"))  # the harness's: kept
    sink(event(5, "security.finding", "a leak"))  # kept: flooding must not hide a finding
    assert list(RunEvent.objects.filter(case_run=case).order_by("sequence_number").values_list("event_id", flat=True)) == [
        "q:1",
        "q:2",
        "q:4",
        "q:5",
    ]
    assert sink.dropped == 1 and CaseRun.objects.get(pk=case.pk).hosted_bytes == sink.stored_bytes > 700


@pytest.mark.django_db
def test_the_run_total_is_re_summed_at_most_once_a_second_and_own_bytes_count_in_between(workspace, admin):
    case, other = _queued_cases(workspace, admin, cases=2)
    now = [100.0]
    sink = _sink(case, EventQuota(0, 2_000, 0), clock=lambda: now[0])

    def event(n: int) -> Event:
        return _event(case, f"r:{n}", "a" * 300)

    CaseRun.objects.filter(pk=other.pk).update(hosted_bytes=500)
    sink(event(1))  # sums the other case: 500 + ~330
    assert sink.quota_stop == ""
    CaseRun.objects.filter(pk=other.pk).update(hosted_bytes=1_900)  # not seen before a second has passed…
    now[0] += 0.5
    sink(event(2))  # 500 + ~660 (1900 + ~660 had it re-summed)
    assert sink.quota_stop == ""
    now[0] += 0.6
    sink(event(3))  # …then it is: 1900 + ~990 (500 + ~990 had it not)
    assert "the run budget" in sink.quota_stop and "of 2000 (EVENT_BYTES_PER_RUN)" in sink.quota_stop


@pytest.mark.django_db
def test_a_case_whose_events_all_fit_its_last_batch_is_counted(workspace, admin, tasks, flood_provider, settings):
    # A hostile agent that emits its whole flood within one flush interval (fewer than max_buffer
    # events) had it stored by the finish's last batch, which was never counted: the run's and the
    # workspace's budgets did not see it.
    settings.RUNS_EVENT_FLUSH_SECONDS = 3600  # nothing is flushed before the finish
    settings.EVENT_BYTES_PER_CASE = 10_000_000
    [case] = _run(workspace, admin, tasks, _deployment(workspace, flood=5_000))
    assert case.stop_reason == "completed"
    model_text = 3 * 5_000  # three model calls of 5,000 characters, stored with the case's other events
    assert case.hosted_bytes > model_text
    stored = RunEvent.objects.filter(case_run=case).exclude(event_type__startswith="scoring.")
    assert case.hosted_bytes >= sum(len(json.dumps(e.payload, separators=(",", ":"))) for e in stored) * 0.95


@pytest.mark.django_db
def test_the_sink_counts_what_waits_and_what_it_wrote(workspace, admin):
    [case] = _queued_cases(workspace, admin)
    sink = _sink(case, EventQuota(0, 0, 0), interval=3600)
    sink(_event(case, "p:1", "a" * 400))
    waiting = sink.pending_bytes
    assert waiting > 400 and sink.stored_bytes == 0 and not RunEvent.objects.filter(case_run=case).exists()
    sink.flush()  # a batch of the attempt: counted by _account, nothing left waiting
    assert (sink.pending_bytes, sink.stored_bytes, CaseRun.objects.get(pk=case.pk).hosted_bytes) == (0, waiting, waiting)


@pytest.mark.django_db
def test_a_superseded_attempt_does_not_overwrite_the_count_of_the_one_that_holds_the_case(workspace, admin):
    [case] = _queued_cases(workspace, admin)
    CaseRun.objects.filter(pk=case.pk).update(attempt=2, hosted_bytes=1_234)  # attempt 2 holds the case and counted its own
    old = _sink(case, EventQuota(0, 10_000, 0), attempt=1)
    old(_event(case, "s:1", "z" * 900))
    assert old.stored_bytes > 900  # its own tally goes on…
    assert CaseRun.objects.get(pk=case.pk).hosted_bytes == 1_234  # …but the row is the new attempt's
