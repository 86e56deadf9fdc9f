"""Error pages a person can act on: the styled 404 even under DEBUG (the default local setup)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from runs.tests.factories import make_deployment

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("debug", [True, False])
def test_an_unknown_url_gets_the_styled_404(client_for, admin, settings, debug):
    settings.DEBUG = debug
    response = client_for(admin).get("/w/acme/no-such-page/")
    body = response.content.decode()
    assert response.status_code == 404
    assert "Page not found" in body and "/w/acme/no-such-page/" in body
    assert "URLconf" not in body and 'class="sidebar"' in body


def test_a_missing_object_gets_the_styled_404_under_debug(client_for, admin, settings):
    settings.DEBUG = True
    response = client_for(admin).get(reverse("runs:detail", args=["acme", 999_999]))
    assert response.status_code == 404
    assert "Page not found" in response.content.decode() and "Traceback" not in response.content.decode()


def test_an_anonymous_visitor_gets_the_bare_404_under_debug(client, settings):
    settings.DEBUG = True
    response = client.get("/nothing-here/")
    assert response.status_code == 404 and "Page not found" in response.content.decode()


def test_the_api_keeps_its_json_404_under_debug(api_client_for, admin, settings):
    settings.DEBUG = True
    response = api_client_for(admin).get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_an_edit_dialog_names_its_fields_after_its_form(client_for, admin, workspace):
    deployment = make_deployment(workspace, name="editable")
    response = client_for(admin).get(reverse("infra:deployment_edit", args=["acme", deployment.pk]), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "data-autoopen" in body
    assert 'id="deployment-edit-form-name"' in body and 'for="deployment-edit-form-name"' in body
    assert 'id="id_name"' not in body  # the list page's "new" dialog owns that id
