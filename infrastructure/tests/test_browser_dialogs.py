"""In a real browser: every create and edit dialog on the infrastructure and secrets pages opens
and saves (issue 11: "Edit and Replace do nothing" — the dialog came back but never opened)."""

from __future__ import annotations

import pytest

from core.tests.browser import chromium_page, csp_violations, login
from infrastructure import services as infra_services
from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile, ToolResource
from secrets_app import services as secret_services
from secrets_app.models import WorkspaceSecret
from workspaces.demo import demo_seed

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(live_server):
    demo = demo_seed()
    user = demo.workspace.memberships.get(user__username=demo.username).user
    infra_services.tool_resource_create(
        workspace=demo.workspace, actor=user, name="CRM lookup", tool_kind="primitive", capability_key="crm.lookup", definition={}
    )
    secret_services.secret_set(
        workspace=demo.workspace, key="CRM_TOKEN", value="s3cret-value", allowed_hosts=["crm.example.com"], actor=user
    )
    return demo


def _edit(page, row_text: str):
    """Press Edit in the row that says ``row_text``; return the dialog that opened."""
    page.locator("table tr", has_text=row_text).first.get_by_role("link", name="Edit").click()
    dialog = page.locator("#dialog-slot dialog[open]")
    dialog.wait_for()
    return dialog


def _save(page, dialog, button: str, message: str) -> None:
    dialog.get_by_role("button", name=button).click()
    page.locator(".messages .message-success", has_text=message).wait_for()
    assert page.locator("dialog[open]").count() == 0


def test_every_edit_dialog_opens_and_saves(live_server, chromium_path, demo):
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)

        page.goto(f"{ws}/deployments/")
        dialog = _edit(page, "Sloppy agent (prompt eval)")
        assert dialog.locator("h2").inner_text() == "Edit Sloppy agent (prompt eval)"
        dialog.get_by_label("System prompt").fill("Edited in the browser.")
        _save(page, dialog, "Save", "saved")
        assert (
            AgentDeployment.objects.get(workspace=demo.workspace, name="Sloppy agent (prompt eval)").system_prompt
            == "Edited in the browser."
        )

        page.goto(f"{ws}/provider-accounts/")
        account = ProviderAccount.objects.get(workspace=demo.workspace)
        dialog = _edit(page, account.name)
        dialog.get_by_label("Name", exact=True).fill("Scripted (renamed)")
        _save(page, dialog, "Save", "saved")
        assert ProviderAccount.objects.get(pk=account.pk).name == "Scripted (renamed)"

        page.goto(f"{ws}/runtime-profiles/")
        dialog = _edit(page, "Native (demo)")
        dialog.get_by_label("Max iterations").fill("12")
        _save(page, dialog, "Save", "saved")
        assert RuntimeProfile.objects.get(workspace=demo.workspace, name="Native (demo)").max_iterations == 12

        page.goto(f"{ws}/tool-resources/")
        dialog = _edit(page, "CRM lookup")
        dialog.get_by_label("Capability key").fill("crm.search")
        _save(page, dialog, "Save", "saved")
        assert ToolResource.objects.get(workspace=demo.workspace, name="CRM lookup").capability_key == "crm.search"

        page.goto(f"{ws}/secrets/")
        dialog = _edit(page, "CRM_TOKEN")
        hosts = dialog.get_by_label("Allowed hosts")
        assert hosts.input_value() == "crm.example.com"
        hosts.fill("crm.example.com\napi.example.com")
        _save(page, dialog, "Save secret", "updated")
        assert WorkspaceSecret.objects.get(workspace=demo.workspace, key="CRM_TOKEN").allowed_hosts == [
            "crm.example.com",
            "api.example.com",
        ]

        # An edit with an error keeps the dialog open and shows the error next to its field.
        page.goto(f"{ws}/runtime-profiles/")
        dialog = _edit(page, "Native (demo)")
        dialog.get_by_label("Max iterations").fill("0")
        dialog.get_by_role("button", name="Save").click()
        dialog.locator(".has-error .error").wait_for()
        assert dialog.is_visible()
        dialog.get_by_role("link", name="Cancel").click()
        assert page.locator("dialog[open]").count() == 0
        assert page.url == f"{ws}/runtime-profiles/"
        assert csp_violations(page) == []


def test_every_new_dialog_opens_and_creates(live_server, chromium_path, demo):
    base, ws = live_server.url, f"{live_server.url}/w/{demo.workspace.slug}"
    with chromium_page(chromium_path) as page:
        login(page, base, demo.username, demo.password)

        page.goto(f"{ws}/provider-accounts/")
        page.get_by_role("link", name="New provider account").first.click()
        dialog = page.locator("#provider-account-form-dialog[open]")
        dialog.get_by_label("Name", exact=True).fill("Second scripted")
        dialog.get_by_label("Provider").select_option("scripted")
        _save(page, dialog, "Create", "Second scripted")
        assert ProviderAccount.objects.filter(workspace=demo.workspace, name="Second scripted").exists()

        page.goto(f"{ws}/runtime-profiles/")
        page.get_by_role("link", name="New runtime profile").first.click()
        dialog = page.locator("#runtime-profile-form-dialog[open]")
        dialog.get_by_label("Name", exact=True).fill("Quick")
        _save(page, dialog, "Create", "Quick")
        assert RuntimeProfile.objects.filter(workspace=demo.workspace, name="Quick").exists()

        page.goto(f"{ws}/deployments/")
        page.get_by_role("link", name="New deployment").first.click()
        dialog = page.locator("#deployment-form-dialog[open]")
        dialog.get_by_label("Name", exact=True).fill("Third agent")
        dialog.get_by_label("Model", exact=True).fill("scripted-demo")
        dialog.get_by_label("Provider account").select_option(label="Second scripted (scripted)")
        dialog.get_by_label("Runtime profile").select_option(label="Quick")
        dialog.get_by_label("Deployment config").fill('{"script": {"default": [{"text": "hello"}]}}')
        _save(page, dialog, "Create", "Third agent")
        assert AgentDeployment.objects.filter(workspace=demo.workspace, name="Third agent").exists()

        page.goto(f"{ws}/tool-resources/")
        page.get_by_role("link", name="New tool resource").first.click()
        dialog = page.locator("#tool-resource-form-dialog[open]")
        dialog.get_by_label("Name", exact=True).fill("Docs search")
        dialog.get_by_label("Capability key").fill("docs.search")
        _save(page, dialog, "Create", "Docs search")
        assert ToolResource.objects.filter(workspace=demo.workspace, name="Docs search").exists()

        page.goto(f"{ws}/secrets/")
        page.get_by_role("link", name="Add a secret").first.click()
        dialog = page.locator("#secret-form-dialog[open]")
        dialog.get_by_label("Key").fill("NEW_TOKEN")
        dialog.get_by_label("Value").fill("another-secret")
        _save(page, dialog, "Save secret", "NEW_TOKEN")
        assert WorkspaceSecret.objects.filter(workspace=demo.workspace, key="NEW_TOKEN").exists()
        assert "another-secret" not in page.content()
        assert csp_violations(page) == []
