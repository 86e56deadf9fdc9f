"""Configuration errors fail the run fast (docs/runs.md "Fail fast"): a deployment whose provider
cannot be built fails its first case without a retry, and its lane's other cases are not run."""

from __future__ import annotations

import pytest

from engine.providers.scripted import ScriptedProvider
from runs import services
from runs.models import CaseRun, CaseStatus, Run, RunEvent, RunStatus, ScoreStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish

pytestmark = pytest.mark.django_db


def _run(workspace, admin, tasks, deployment_ids: list[int], cases: int = 6) -> Run:
    version = publish(workspace, admin, native_pack_yaml(cases=cases))
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=deployment_ids)
    tasks.drain_inline()
    run.refresh_from_db()
    return run


def _executed(run: Run) -> set[str]:
    return set(RunEvent.objects.filter(run=run, case_run__isnull=False).values_list("case_run__case_key", flat=True))


def test_an_unknown_provider_fails_its_lane_after_one_case(workspace, admin, tasks):
    broken = make_deployment(workspace, name="broken", provider_key="no-such-provider", max_in_flight_cases=1)
    run = _run(workspace, admin, tasks, [broken.pk])
    assert run.status == RunStatus.FAILED
    cases = CaseRun.objects.filter(run=run)
    assert set(cases.values_list("status", flat=True)) == {CaseStatus.FAILED}
    assert set(cases.values_list("attempt", flat=True)) <= {0, 1}  # never retried
    assert len(_executed(run)) == 1  # one case ran and showed the error; the other five did not run
    skipped = cases.filter(score_status=ScoreStatus.SKIPPED)
    assert skipped.count() == 5
    assert all("unsupported provider" in error and error.startswith("not run:") for error in skipped.values_list("error", flat=True))


def test_an_adapter_that_refuses_its_configuration_is_not_retried_and_the_other_lane_goes_on(workspace, admin, tasks, monkeypatch):
    broken = make_deployment(workspace, name="broken", script={"default": [{"submit": "x"}], "refuse": True}, max_in_flight_cases=1)
    good = make_deployment(workspace, name="good")
    real_init = ScriptedProvider.__init__

    def refusing(self, settings):  # an adapter whose constructor rejects the deployment's config
        if settings.deployment_config.get("script", {}).get("refuse"):
            raise ValueError("temperature must be a number")
        real_init(self, settings)

    monkeypatch.setattr(ScriptedProvider, "__init__", refusing)
    run = _run(workspace, admin, tasks, [broken.pk, good.pk], cases=4)
    broken_cases = CaseRun.objects.filter(run=run, lane__deployment=broken)
    good_cases = CaseRun.objects.filter(run=run).exclude(pk__in=broken_cases)
    assert set(good_cases.values_list("status", flat=True)) == {CaseStatus.COMPLETED}
    assert set(broken_cases.values_list("status", flat=True)) == {CaseStatus.FAILED}
    first = broken_cases.exclude(score_status=ScoreStatus.SKIPPED).get()
    assert first.attempt == 1 and "could not be built from its configuration: ValueError: temperature must be a number" in first.error
    assert run.status == RunStatus.COMPLETED  # one lane completed: the run completes, the broken lane failed
