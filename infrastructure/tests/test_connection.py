"""'Test connection' against a fake provider on loopback (the only network these tests touch)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest
from django.test import override_settings

from infrastructure import services
from infrastructure.models import ProviderAccount
from infrastructure.tests.loopback import serving
from secrets_app.services import secret_set
from workspaces.models import AuditEvent

API_KEY = "sk-loopback-secret-0042"


class FakeProvider(BaseHTTPRequestHandler):
    seen: list[dict] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        FakeProvider.seen.append({"path": self.path, "headers": dict(self.headers)})
        authorised = self.headers.get("Authorization") == f"Bearer {API_KEY}" or self.headers.get("x-api-key") == API_KEY
        if self.path == "/redirect/models":
            self.send_response(302)
            self.send_header("Location", "https://evil.example.org/models")
            self.end_headers()
            return
        if self.path not in ("/v1/models",):
            self.send_response(404)
            self.end_headers()
            return
        if not authorised:
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {self.headers.get('Authorization', '')}"}}).encode()
            self.send_response(401)
        else:
            body = json.dumps({"data": [{"id": "model-a"}, {"id": "model-b"}]}).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def fake_provider():
    FakeProvider.seen = []
    with serving(FakeProvider) as url:
        yield url


@pytest.fixture
def key_secret(workspace, admin):
    secret_set(workspace=workspace, key="LOCAL_KEY", value=API_KEY, actor=admin)


@pytest.mark.django_db
class TestWithPrivateUrlsAllowed:
    @pytest.fixture(autouse=True)
    def allow_private_urls(self, settings):
        settings.ALLOW_PRIVATE_PROVIDER_URLS = True

    def test_an_openai_compatible_server_lists_its_models(self, workspace, admin, key_secret, fake_provider, api_client_for):
        account = services.provider_account_create(
            workspace=workspace,
            name="Local vLLM",
            provider_key="openai",
            credential_reference="workspace-secret://LOCAL_KEY",
            base_url=f"{fake_provider}/v1",
        )
        response = api_client_for(admin).post(f"/api/v1/workspaces/acme/provider-accounts/{account.pk}/test-connection")
        assert response.status_code == 200
        assert response.json() == {
            "ok": True,
            "message": "Connected: 2 models available (model-a, model-b).",
            "models": ["model-a", "model-b"],
        }
        assert FakeProvider.seen[-1]["path"] == "/v1/models"
        assert FakeProvider.seen[-1]["headers"]["Authorization"] == f"Bearer {API_KEY}"
        account.refresh_from_db()
        assert (account.last_test_status, account.status) == ("ok", "active") and account.last_tested_at is not None
        assert AuditEvent.objects.filter(action="provider_account.tested", metadata__ok=True).exists()

    def test_anthropic_uses_its_header_and_path(self, workspace, admin, key_secret, fake_provider):
        account = services.provider_account_create(
            workspace=workspace,
            name="Local Claude proxy",
            provider_key="anthropic",
            credential_reference="workspace-secret://LOCAL_KEY",
            base_url=fake_provider,
        )
        result = services.provider_account_test_connection(account=account, actor=admin)
        assert result.ok, result.message
        headers = FakeProvider.seen[-1]["headers"]
        assert FakeProvider.seen[-1]["path"] == "/v1/models"
        assert headers["x-api-key"] == API_KEY and headers["anthropic-version"] == "2023-06-01"
        assert "Authorization" not in headers

    def test_a_wrong_key_fails_without_echoing_it(self, workspace, admin, fake_provider, client_for):
        secret_set(workspace=workspace, key="WRONG", value="sk-wrong-value-77", actor=admin)
        account = services.provider_account_create(
            workspace=workspace,
            name="Local",
            provider_key="openai",
            credential_reference="workspace-secret://WRONG",
            base_url=f"{fake_provider}/v1",
        )
        response = client_for(admin).post(f"/w/acme/provider-accounts/{account.pk}/test/", HTTP_HX_REQUEST="true")
        body = response.content.decode()
        assert response.status_code == 200 and body.lstrip().startswith(f'<td id="provider-test-{account.pk}"')
        assert "refused the credential (HTTP 401)" in body and "sk-wrong-value-77" not in body
        account.refresh_from_db()
        assert (account.last_test_status, account.status) == ("error", "error")
        assert "sk-wrong-value-77" not in account.last_test_message

    def test_a_wrong_base_url_says_so(self, workspace, admin, key_secret, fake_provider):
        account = services.provider_account_create(
            workspace=workspace,
            name="Local",
            provider_key="openai",
            credential_reference="workspace-secret://LOCAL_KEY",
            base_url=f"{fake_provider}/nope",
        )
        result = services.provider_account_test_connection(account=account)
        assert not result.ok and "HTTP 404" in result.message

    def test_redirects_are_not_followed(self, workspace, admin, key_secret, fake_provider):
        account = services.provider_account_create(
            workspace=workspace,
            name="Local",
            provider_key="openai",
            credential_reference="workspace-secret://LOCAL_KEY",
            base_url=f"{fake_provider}/redirect",
        )
        result = services.provider_account_test_connection(account=account)
        assert not result.ok and "redirect" in result.message
        assert len(FakeProvider.seen) == 1

    def test_a_missing_secret_is_reported_before_any_request(self, workspace, admin, fake_provider):
        account = services.provider_account_create(
            workspace=workspace,
            name="Local",
            provider_key="openai",
            credential_reference="workspace-secret://ABSENT",
            base_url=f"{fake_provider}/v1",
        )
        result = services.provider_account_test_connection(account=account)
        assert not result.ok and "ABSENT does not exist" in result.message
        assert FakeProvider.seen == []


@pytest.mark.django_db
def test_without_the_operator_setting_a_loopback_url_is_refused_before_connecting(workspace, admin, key_secret, fake_provider):
    with override_settings(ALLOW_PRIVATE_PROVIDER_URLS=True):
        account = services.provider_account_create(
            workspace=workspace,
            name="Local",
            provider_key="openai",
            credential_reference="workspace-secret://LOCAL_KEY",
            base_url=f"{fake_provider}/v1",
        )
    # The operator turned the setting off again: the URL is checked again on every call.
    result = services.provider_account_test_connection(account=account)
    assert not result.ok and "https://" in result.message
    assert FakeProvider.seen == []
    ProviderAccount.objects.filter(pk=account.pk).update(base_url=f"{fake_provider.replace('http', 'https')}/v1")
    account.refresh_from_db()
    result = services.provider_account_test_connection(account=account)
    assert not result.ok and "private" in result.message and "127.0.0.1" not in result.message
    assert FakeProvider.seen == []


@pytest.mark.django_db
def test_a_scripted_account_always_connects_without_network(workspace, admin):
    account = services.provider_account_create(workspace=workspace, name="S", provider_key="scripted")
    result = services.provider_account_test_connection(account=account)
    assert result.ok and result.models == ("scripted",)
