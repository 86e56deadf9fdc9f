"""A provider account's limits (docs/provider-limits.md): the form, the API, the admin, the list page."""

from __future__ import annotations

import pytest

from core.errors import DomainError
from infrastructure import services
from infrastructure.models import ProviderAccount, ProviderCallLease
from infrastructure.scripted_config import scripted_config_errors
from workspaces.tests.factories import make_user

pytestmark = pytest.mark.django_db

API = "/api/v1/workspaces/acme/provider-accounts"
W = "/w/acme"


@pytest.fixture
def account(workspace, admin):
    return services.provider_account_create(workspace=workspace, name="Scripted", provider_key="scripted", actor=admin)


def test_the_api_sets_shows_and_clears_limits(account, admin, api_client_for):
    client = api_client_for(admin)
    response = client.patch(f"{API}/{account.pk}", {"max_concurrent_calls": 2, "requests_per_minute": 60}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["max_concurrent_calls"], body["requests_per_minute"], body["tokens_per_minute"]) == (2, 60, None)
    account.refresh_from_db()
    assert account.limits == {"max_concurrent_calls": 2, "requests_per_minute": 60}
    response = client.patch(f"{API}/{account.pk}", {"max_concurrent_calls": None}, format="json")
    account.refresh_from_db()
    assert response.status_code == 200 and account.limits == {"requests_per_minute": 60}


def test_the_api_creates_an_account_with_limits(workspace, admin, api_client_for):
    data = {"name": "Limited", "provider_key": "scripted", "tokens_per_minute": 90000}
    response = api_client_for(admin).post(API, data, format="json")
    assert response.status_code == 201 and response.json()["tokens_per_minute"] == 90000
    assert ProviderAccount.objects.get(workspace=workspace, name="Limited").tokens_per_minute == 90000


@pytest.mark.parametrize("bad", [0, -3, "many", 2**31])
def test_the_api_refuses_a_limit_below_one_naming_the_field(account, admin, api_client_for, bad):
    response = api_client_for(admin).patch(f"{API}/{account.pk}", {"max_concurrent_calls": bad}, format="json")
    assert response.status_code == 400 and "max_concurrent_calls" in response.json()["error"]["fields"]
    account.refresh_from_db()
    assert account.max_concurrent_calls is None


def test_the_service_refuses_a_zero_limit(account):
    with pytest.raises(DomainError) as caught:
        services.provider_account_update(account=account, tokens_per_minute=0)
    assert caught.value.field == "tokens_per_minute"
    account.refresh_from_db()
    assert account.tokens_per_minute is None


def test_only_admins_change_limits_and_strangers_get_404(account, member, stranger, api_client_for):
    assert api_client_for(member).patch(f"{API}/{account.pk}", {"max_concurrent_calls": 1}, format="json").status_code == 403
    assert api_client_for(stranger).patch(f"{API}/{account.pk}", {"max_concurrent_calls": 1}, format="json").status_code == 404
    account.refresh_from_db()
    assert account.max_concurrent_calls is None


def test_the_edit_dialog_saves_limits_and_the_list_shows_them(account, admin, viewer, client_for):
    data = {"name": "Scripted", "provider_key": "scripted", "status": "active", "max_concurrent_calls": "3", "tokens_per_minute": "5000"}
    response = client_for(admin).post(f"{W}/provider-accounts/{account.pk}/edit/", data, HTTP_HX_REQUEST="true")
    assert response.status_code in (200, 204) and response.get("HX-Redirect") == f"{W}/provider-accounts/"
    account.refresh_from_db()
    assert account.limits == {"max_concurrent_calls": 3, "tokens_per_minute": 5000}
    page = client_for(viewer).get(f"{W}/provider-accounts/").content.decode()
    assert '<span class="num">3</span> concurrent' in page and '<span class="num">5,000</span> tokens/min' in page
    form = client_for(admin).get(f"{W}/provider-accounts/{account.pk}/edit/").content.decode()
    assert 'name="max_concurrent_calls"' in form and 'value="3"' in form


def test_the_dialog_shows_a_bad_limit_next_to_its_field(account, admin, client_for):
    data = {"name": "Scripted", "provider_key": "scripted", "status": "active", "requests_per_minute": "0"}
    body = client_for(admin).post(f"{W}/provider-accounts/{account.pk}/edit/", data, HTTP_HX_REQUEST="true").content.decode()
    assert 'class="field has-error"' in body and "greater than or equal to 1" in body
    account.refresh_from_db()
    assert account.requests_per_minute is None


def test_the_admin_edits_limits_and_lists_leases_read_only(account, client_for):
    root = make_user("root", is_staff=True, is_superuser=True)
    client = client_for(root)
    data = {
        "workspace": account.workspace_id,
        "name": "Scripted",
        "provider_key": "scripted",
        "status": "active",
        "max_concurrent_calls": "0",
    }
    page = client.post(f"/admin/infrastructure/provideraccount/{account.pk}/change/", data).content.decode()
    assert "greater than or equal to 1" in page
    client.post(f"/admin/infrastructure/provideraccount/{account.pk}/change/", {**data, "max_concurrent_calls": "4"})
    account.refresh_from_db()
    assert account.max_concurrent_calls == 4
    assert client.get("/admin/infrastructure/providercalllease/").status_code == 200
    assert client.get("/admin/infrastructure/providercalllease/add/").status_code == 403
    assert not ProviderCallLease.objects.exists()


# The scripted provider's latency_ms (slow scripted calls for limit tests and demos).
@pytest.mark.parametrize("bad", [-1, "fast", True, 700_000])
def test_the_deployment_config_rules_refuse_a_bad_latency(bad):
    assert scripted_config_errors({"script": {"default": [{"submit": "done"}]}, "latency_ms": bad}) == [
        "deployment_config.latency_ms: must be a number of milliseconds from 0 to 600000"
    ]
    assert scripted_config_errors({"script": {"default": [{"submit": "done"}]}, "latency_ms": 300}) == []
