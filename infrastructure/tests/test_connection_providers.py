"""Every provider key: account creation, "test connection" and the model list, against one loopback
server that speaks each vendor's model-list dialect (the only network these tests touch)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest

from engine.providers import PROVIDER_KEYS
from engine.providers.registry import default_base_url
from infrastructure import connection, services
from infrastructure.models import ProviderAccount, ProviderKey
from infrastructure.tests.loopback import serving
from workspaces.tests.factories import make_user

API = "/api/v1/workspaces/acme"
API_KEY = "sk-every-provider-secret-0077"
GEMINI_MODELS = {
    "models": [
        {"name": "models/gemini-2.5-flash", "supportedGenerationMethods": ["generateContent", "countTokens"]},
        {"name": "models/text-embedding-004", "supportedGenerationMethods": ["embedContent"]},
        {"name": "models/gemini-2.5-pro", "supportedGenerationMethods": ["generateContent"]},
    ]
}


class Vendors(BaseHTTPRequestHandler):
    seen: list[dict] = []

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        Vendors.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
        if self.path == "/limited/models":
            self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "30"})
        elif self.path == "/v1beta/models":
            if self.headers.get("x-goog-api-key") == API_KEY:
                self._send(200, GEMINI_MODELS)
            else:
                error = {
                    "code": 400,
                    "message": "API key not valid.",
                    "status": "INVALID_ARGUMENT",
                    "details": [{"reason": "API_KEY_INVALID"}],
                }
                self._send(400, {"error": error})
        elif self.path == "/v1/models":
            if self.headers.get("Authorization") == f"Bearer {API_KEY}" or self.headers.get("x-api-key") == API_KEY:
                self._send(200, {"object": "list", "data": [{"id": "vendor/model-a"}, {"id": "vendor/model-b"}]})
            else:
                self._send(401, {"error": {"message": "bad key"}})
        else:
            self._send(404, {"error": {"message": "not found"}})


@pytest.fixture
def vendors():
    Vendors.seen = []
    with serving(Vendors) as url:
        yield url


@pytest.fixture
def private_urls(settings):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True


def test_every_provider_key_the_engine_serves_is_a_choice_with_a_model_list():
    assert set(ProviderKey.values) == set(PROVIDER_KEYS)
    assert set(connection.MODEL_LISTS) == set(PROVIDER_KEYS) - {"scripted"}


@pytest.mark.parametrize(
    ("key", "url"),
    [
        ("openai", "https://api.openai.com/v1"),
        ("anthropic", "https://api.anthropic.com"),
        ("gemini", "https://generativelanguage.googleapis.com"),
        ("xai", "https://api.x.ai/v1"),
        ("openrouter", "https://openrouter.ai/api/v1"),
        ("mistral", "https://api.mistral.ai/v1"),
    ],
)
def test_an_empty_base_url_means_the_vendors_own_address(key, url):
    assert default_base_url(key) == url
    assert connection._base_url(key, "") == url
    assert connection._base_url(key, "https://proxy.example.com/v1/") == "https://proxy.example.com/v1"


def test_a_custom_provider_without_a_base_url_cannot_be_probed():
    result = connection.probe_models(provider_key="custom", base_url="", api_key=None, allow_private=False)
    assert not result.ok and "needs a base URL" in result.message


@pytest.mark.django_db
@pytest.mark.usefixtures("private_urls")
@pytest.mark.parametrize("key", ["xai", "openrouter", "mistral", "custom"])
def test_openai_compatible_providers_are_created_and_list_their_models_through_the_api(workspace, admin, api_client_for, vendors, key):
    client = api_client_for(admin)
    created = client.post(
        f"{API}/provider-accounts",
        {"name": f"My {key}", "provider_key": key, "api_key": API_KEY, "base_url": f"{vendors}/v1"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert API_KEY not in json.dumps(created.json())
    account = ProviderAccount.objects.get(pk=created.json()["id"])
    assert account.provider_key == key
    response = client.post(f"{API}/provider-accounts/{account.pk}/test-connection")
    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "message": "Connected: 2 models available (vendor/model-a, vendor/model-b).",
        "models": ["vendor/model-a", "vendor/model-b"],
    }
    assert Vendors.seen[-1]["path"] == "/v1/models" and Vendors.seen[-1]["headers"]["authorization"] == f"Bearer {API_KEY}"
    account.refresh_from_db()
    assert (account.last_test_status, account.status) == ("ok", "active")


@pytest.mark.django_db
@pytest.mark.usefixtures("private_urls")
def test_gemini_lists_its_generative_models_with_the_key_in_its_header(workspace, admin, api_client_for, vendors):
    account = services.provider_account_create(
        workspace=workspace, name="Gemini", provider_key="gemini", api_key=API_KEY, base_url=vendors, actor=admin
    )
    response = api_client_for(admin).post(f"{API}/provider-accounts/{account.pk}/test-connection")
    assert response.json()["ok"] is True
    assert response.json()["models"] == ["gemini-2.5-flash", "gemini-2.5-pro"]
    seen = Vendors.seen[-1]
    assert seen["path"] == "/v1beta/models" and seen["headers"]["x-goog-api-key"] == API_KEY
    assert "authorization" not in seen["headers"] and API_KEY not in seen["path"]


@pytest.mark.django_db
@pytest.mark.usefixtures("private_urls")
def test_a_wrong_gemini_key_is_reported_as_a_refused_credential(workspace, admin, vendors):
    account = services.provider_account_create(
        workspace=workspace, name="Gemini", provider_key="gemini", api_key="AIza-wrong-key-1234", base_url=vendors, actor=admin
    )
    result = services.provider_account_test_connection(account=account)
    assert not result.ok and "refused the credential (HTTP 400)" in result.message
    assert "AIza-wrong-key-1234" not in result.message
    account.refresh_from_db()
    assert account.status == "error"


@pytest.mark.django_db
@pytest.mark.usefixtures("private_urls")
def test_a_rate_limited_model_list_says_when_to_try_again(workspace, admin, vendors):
    account = services.provider_account_create(
        workspace=workspace, name="Busy", provider_key="openrouter", api_key=API_KEY, base_url=f"{vendors}/limited", actor=admin
    )
    result = services.provider_account_test_connection(account=account)
    assert not result.ok and "rate limiting" in result.message and "30 s" in result.message


@pytest.mark.django_db
def test_a_custom_account_needs_a_base_url(workspace, admin, api_client_for):
    response = api_client_for(admin).post(f"{API}/provider-accounts", {"name": "Local", "provider_key": "custom"}, format="json")
    assert response.status_code == 400 and "base_url" in response.json()["error"]["fields"]
    assert not ProviderAccount.objects.exists()


@pytest.mark.django_db
@pytest.mark.usefixtures("private_urls")
def test_switching_an_account_to_custom_without_a_base_url_is_refused(workspace, admin, api_client_for, vendors):
    account = services.provider_account_create(workspace=workspace, name="A", provider_key="mistral", api_key=API_KEY, actor=admin)
    response = api_client_for(admin).patch(f"{API}/provider-accounts/{account.pk}", {"provider_key": "custom"}, format="json")
    assert response.status_code == 400 and "base_url" in response.json()["error"]["fields"]
    ok = api_client_for(admin).patch(
        f"{API}/provider-accounts/{account.pk}", {"provider_key": "custom", "base_url": f"{vendors}/v1"}, format="json"
    )
    assert ok.status_code == 200
    account.refresh_from_db()
    assert (account.provider_key, account.base_url) == ("custom", f"{vendors}/v1")


@pytest.mark.django_db
def test_the_new_account_form_offers_every_provider(workspace, admin, client_for):
    body = client_for(admin).get("/w/acme/provider-accounts/new/").content.decode()
    for key in ("openai", "anthropic", "gemini", "xai", "openrouter", "mistral", "custom"):
        assert f'value="{key}"' in body


@pytest.mark.django_db
def test_a_member_cannot_create_a_gemini_account(workspace, member, api_client_for):
    response = api_client_for(member).post(
        f"{API}/provider-accounts", {"name": "G", "provider_key": "gemini", "api_key": API_KEY}, format="json"
    )
    assert response.status_code == 403 and not ProviderAccount.objects.exists()


@pytest.mark.django_db
def test_the_admin_refuses_a_custom_account_without_a_base_url(workspace, client_for):
    root = make_user("root", is_staff=True, is_superuser=True)
    data = {
        "workspace": workspace.pk,
        "name": "Local",
        "provider_key": "custom",
        "credential_reference": "",
        "base_url": "",
        "status": "active",
    }
    response = client_for(root).post("/admin/infrastructure/provideraccount/add/", data)
    assert response.status_code == 200 and "A custom provider needs the base URL" in response.content.decode()
    assert not ProviderAccount.objects.exists()
