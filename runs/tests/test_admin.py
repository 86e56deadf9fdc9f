from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(django_user_model):
    return django_user_model.objects.create_superuser("op", "op@example.com", "pw-for-operator")


@pytest.mark.parametrize(
    "model",
    [
        "run",
        "lane",
        "caserun",
        "runevent",
        "runstatushistory",
        "lanestatushistory",
        "casescore",
        "lanescorecard",
        "runscorecard",
        "comparison",
        "gateresult",
    ],
)
def test_every_runs_model_is_in_the_admin_and_read_only(client, operator, model):
    client.force_login(operator)
    assert client.get(reverse(f"admin:runs_{model}_changelist")).status_code == 200
    assert client.get(reverse(f"admin:runs_{model}_add")).status_code == 403
