"""Per-workspace model prices: edited by operators in the admin, read by scoring."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from infrastructure.models import ModelPrice
from infrastructure.selectors import model_price_rows
from workspaces.models import AuditEvent
from workspaces.tests.factories import make_user


@pytest.fixture
def root(db):
    return make_user("root", is_staff=True, is_superuser=True)


def price_form(workspace, **overrides):
    data = {
        "workspace": workspace.pk,
        "provider_key": "openai",
        "provider_model_id": "gpt-4o",
        "input_cost_per_million_tokens": "2.000000",
        "output_cost_per_million_tokens": "8.000000",
        "note": "our contract, 2026",
    }
    return {**data, **overrides}


@pytest.mark.django_db
def test_an_operator_adds_a_price_in_the_admin_and_the_save_is_audited(workspace, root, client_for):
    client = client_for(root)
    assert client.get("/admin/infrastructure/modelprice/add/").status_code == 200
    response = client.post("/admin/infrastructure/modelprice/add/", price_form(workspace))
    assert response.status_code == 302
    price = ModelPrice.objects.get(workspace=workspace)
    assert (price.provider_model_id, price.input_cost_per_million_tokens) == ("gpt-4o", Decimal("2"))
    assert AuditEvent.objects.filter(action="model_price.created", target="openai/gpt-4o", actor=root).exists()
    page = client.get(f"/admin/infrastructure/modelprice/{price.pk}/change/").content.decode()
    assert "genai-prices" in page and "2.5 USD input, 10 USD output per million tokens" in page  # what it overrides
    assert client.get("/admin/infrastructure/modelprice/").status_code == 200


@pytest.mark.django_db
def test_the_admin_refuses_a_negative_price_and_a_duplicate(workspace, root, client_for):
    client = client_for(root)
    response = client.post("/admin/infrastructure/modelprice/add/", price_form(workspace, input_cost_per_million_tokens="-1"))
    assert response.status_code == 200 and not ModelPrice.objects.exists()
    client.post("/admin/infrastructure/modelprice/add/", price_form(workspace))
    response = client.post("/admin/infrastructure/modelprice/add/", price_form(workspace))
    assert response.status_code == 200 and ModelPrice.objects.count() == 1


@pytest.mark.django_db
def test_a_price_the_library_does_not_know_says_so_in_the_admin(workspace, root, client_for):
    price = ModelPrice.objects.create(
        workspace=workspace,
        provider_key="custom",
        provider_model_id="acme-1",
        input_cost_per_million_tokens=1,
        output_cost_per_million_tokens=1,
    )
    page = client_for(root).get(f"/admin/infrastructure/modelprice/{price.pk}/change/").content.decode()
    assert "has no price for this model" in page


@pytest.mark.django_db
def test_scoring_reads_the_workspace_s_rows_only(workspace, other_workspace):
    ModelPrice.objects.create(
        workspace=workspace,
        provider_key="",
        provider_model_id="acme-1",
        input_cost_per_million_tokens=Decimal("1.5"),
        output_cost_per_million_tokens=3,
    )
    ModelPrice.objects.create(
        workspace=other_workspace,
        provider_key="",
        provider_model_id="acme-2",
        input_cost_per_million_tokens=1,
        output_cost_per_million_tokens=1,
    )
    assert model_price_rows(workspace_id=workspace.pk) == [
        {"provider_key": "", "provider_model_id": "acme-1", "input_cost_per_million_tokens": 1.5, "output_cost_per_million_tokens": 3.0}
    ]


@pytest.mark.django_db
def test_a_price_is_never_negative(workspace):
    price = ModelPrice(workspace=workspace, provider_model_id="m", input_cost_per_million_tokens=-1, output_cost_per_million_tokens=0)
    with pytest.raises(ValidationError):
        price.full_clean()
