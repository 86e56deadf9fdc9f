"""Run history in the admin: visible to operators, never added, changed or deleted (superusers included)."""

from __future__ import annotations

import pytest
from django.db.models import Model
from django.urls import reverse

from comparisons.models import Comparison, GateResult
from comparisons.services import comparison_create, gate_evaluate
from runs.models import CaseRun, Lane, LaneStatusHistory, Run, RunEvent, RunStatusHistory
from scoring.models import CaseScore, LaneScorecard, RunScorecard
from scoring.tests.factories import make_pack_version, make_run

pytestmark = pytest.mark.django_db

HISTORY_MODELS = [
    Run,
    Lane,
    LaneStatusHistory,
    RunStatusHistory,
    CaseRun,
    RunEvent,
    CaseScore,
    LaneScorecard,
    RunScorecard,
    Comparison,
    GateResult,
]


@pytest.fixture
def operator(django_user_model):
    return django_user_model.objects.create_superuser("op", "op@example.com", "pw-for-operator")


@pytest.fixture
def history(workspace, admin):
    """At least one row of every run-history model: two scored runs, compared and gated."""
    version = make_pack_version(workspace)
    baseline, candidate = make_run(workspace, pack_version=version), make_run(workspace, pack_version=version)
    gate_evaluate(comparison=comparison_create(workspace=workspace, user=admin, baseline_run=baseline, candidate_run=candidate), user=admin)
    RunStatusHistory.objects.create(run=baseline, from_status="scoring", to_status="completed", reason="every lane finished")
    LaneStatusHistory.objects.create(lane=baseline.lanes.get(), from_status="evaluating", to_status="completed", reason="scored")
    return baseline


def _url(model: type[Model], view: str, *args: object) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", HISTORY_MODELS, ids=lambda m: m.__name__)
def test_the_admin_cannot_delete_run_history(client, operator, history, model):
    client.force_login(operator)
    row = model.objects.order_by("pk").first()
    assert row is not None  # the fixture made one, so the checks below can fail

    changelist = client.get(_url(model, "changelist"))
    assert changelist.status_code == 200
    assert "delete_selected" not in changelist.content.decode()
    bulk = client.post(_url(model, "changelist"), {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"})
    assert bulk.status_code in (200, 302)  # Django answers an unknown action with the list again

    assert client.get(_url(model, "delete", row.pk)).status_code == 403
    assert client.post(_url(model, "delete", row.pk), {"post": "yes"}).status_code == 403
    assert model.objects.filter(pk=row.pk).exists()


@pytest.mark.parametrize("model", HISTORY_MODELS, ids=lambda m: m.__name__)
def test_the_admin_cannot_add_or_change_run_history(client, operator, history, model):
    client.force_login(operator)
    row = model.objects.order_by("pk").first()
    before = model.objects.filter(pk=row.pk).values().get()
    count = model.objects.count()

    assert client.get(_url(model, "add")).status_code == 403
    assert client.post(_url(model, "add"), {}).status_code == 403
    view = client.get(_url(model, "change", row.pk))
    assert view.status_code == 200 and 'name="_save"' not in view.content.decode()  # view-only
    assert client.post(_url(model, "change", row.pk), {}).status_code == 403

    assert model.objects.count() == count
    assert model.objects.filter(pk=row.pk).values().get() == before


def test_operators_can_still_cancel_a_run_from_the_admin(client, operator, history):
    # The one action run history has in the admin; it goes through the service (compare-and-set).
    client.force_login(operator)
    assert "cancel_runs" in client.get(_url(Run, "changelist")).content.decode()
