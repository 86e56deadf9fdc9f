"""A case that runs over its limits or hangs ends with a clear stop reason (docs/runs.md, Limits)."""

from __future__ import annotations

import shutil
import threading
import time

import pytest

from conftest import require_or_skip
from engine.events import SYSTEM_RUN_FAILED
from engine.providers import registry
from engine.scoring.spec import EvaluationSpec
from engine.types import ModelResponse, ToolCall, Usage
from runs import services
from runs.models import CaseRun, CaseStatus, RunEvent
from runs.pipeline import native
from runs.pipeline.native import CaseDeadline, CaseDeadlineExceeded
from runs.tests.factories import make_deployment, native_pack_yaml, publish


class SlowProvider:
    """Each call takes ``delay`` seconds (in small sleeps, so it is plain Python the watchdog can
    interrupt) and asks to read a file; with ``delay: forever`` a call never returns."""

    def __init__(self, settings) -> None:
        self.provider_key = settings.provider_key
        self.delay = settings.deployment_config.get("delay")

    def complete(self, request) -> ModelResponse:
        started = time.monotonic()
        while self.delay == "forever" or time.monotonic() - started < float(self.delay):
            time.sleep(0.01)
        call = ToolCall(id="c1", name="read_file", arguments='{"path": "/workspace/notes.txt"}')
        return ModelResponse(
            provider_key=self.provider_key,
            provider_model_id=request.model,
            finish_reason="tool_calls",
            output_text="",
            tool_calls=[call],
            usage=Usage(5, 5, 10),
        )


@pytest.fixture
def slow_provider(monkeypatch):
    monkeypatch.setitem(registry._ADAPTERS, "scripted", ("runs.tests.test_case_limits", "SlowProvider", ""))


@pytest.fixture
def short_deadline(monkeypatch):
    monkeypatch.setattr(native, "case_deadline_seconds", lambda request, spec: 0.3)
    monkeypatch.setattr(native, "HARD_STOP_GRACE_SECONDS", 0.3)


def slow_deployment(workspace, delay, execution_target="native"):
    deployment = make_deployment(workspace, execution_target=execution_target)
    deployment.deployment_config = {"delay": delay}
    deployment.save(update_fields=["deployment_config"])
    return deployment


def _only_case(workspace, admin, tasks, source, deployment) -> CaseRun:
    version = publish(workspace, admin, source)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
    tasks.drain()
    return CaseRun.objects.get(run=run)


@pytest.mark.django_db
def test_a_provider_call_that_never_returns_is_interrupted_at_the_case_deadline(workspace, admin, tasks, slow_provider, short_deadline):
    deployment = slow_deployment(workspace, "forever", execution_target="prompt_eval")
    started = time.monotonic()
    case = _only_case(workspace, admin, tasks, native_pack_yaml(cases=1, mode="prompt_eval"), deployment)
    assert time.monotonic() - started < 10
    assert (case.status, case.stop_reason) == (CaseStatus.FAILED, "deadline_exceeded")
    assert "wall-clock deadline of 0.3s" in case.error and "interrupted" in case.error
    failed = RunEvent.objects.get(case_run=case, event_type=SYSTEM_RUN_FAILED)
    assert failed.payload["stop_reason"] == "deadline_exceeded"


@pytest.mark.django_db
def test_a_slow_agent_is_stopped_through_the_cancel_path_at_the_case_deadline(workspace, admin, tasks, slow_provider, short_deadline):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    deployment = slow_deployment(workspace, 0.2)
    case = _only_case(workspace, admin, tasks, native_pack_yaml(cases=1), deployment)
    assert (case.status, case.stop_reason) == (CaseStatus.FAILED, "deadline_exceeded")
    assert case.error == "the case exceeded its wall-clock deadline of 0.3s (stopped by the worker)"
    assert case.step_count >= 1  # it ran, and stopped between steps rather than being interrupted


@pytest.mark.django_db
def test_max_total_tokens_of_the_pack_stops_a_case_with_token_limit(workspace, admin, tasks):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    source = native_pack_yaml(cases=1).replace(
        "    judge_mode: deterministic\n", "    judge_mode: deterministic\n    runtime_limits: {max_total_tokens: 1}\n"
    )
    case = _only_case(workspace, admin, tasks, source, make_deployment(workspace))
    assert (case.status, case.stop_reason) == (CaseStatus.FAILED, "token_limit")
    assert "runtime_limits.max_total_tokens is 1" in case.error


def test_the_watchdog_interrupts_a_thread_that_ignores_the_cooperative_stop():
    with pytest.raises(CaseDeadlineExceeded):
        with CaseDeadline(0.05, cancel=lambda: False, hard_grace=0.05) as check:
            while True:
                time.sleep(0.01)
    assert check.fired.is_set() and check.stop_reason == "deadline_exceeded"


def test_the_watchdog_does_nothing_to_a_case_that_ends_in_time():
    aborted = threading.Event()
    with CaseDeadline(5, cancel=lambda: False, abort=aborted.set) as check:
        assert check() is False and check.stop_reason == ""
    time.sleep(0.05)
    assert not check.fired.is_set() and not aborted.is_set()


def test_the_watchdog_aborts_the_sandbox_and_says_stop_when_the_deadline_passes():
    aborted = threading.Event()
    with CaseDeadline(0.05, cancel=lambda: False, abort=aborted.set, hard_grace=5) as check:
        assert aborted.wait(2)
        assert check() is True and check.stop_reason == "deadline_exceeded"


def test_the_case_deadline_covers_the_run_timeout_verification_and_a_grace():
    from engine.tests.loop.fakes import make_request

    request = make_request(runtime_profile={"run_timeout_seconds": 100}, runtime_limits={"max_duration_ms": 60_000})
    spec: EvaluationSpec = {"validators": [{"type": "code_execution", "config": {"timeout_ms": 20_000}}, {"type": "code_execution"}]}
    assert native.case_deadline_seconds(request, spec) == 60 + 20 + 30 + native.DEADLINE_GRACE_SECONDS
