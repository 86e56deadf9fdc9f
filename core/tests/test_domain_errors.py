"""The one domain error: its shape, its one API mapping and its one form mapping."""

from __future__ import annotations

import pytest
from django import forms
from django.core.exceptions import ValidationError

from core.api import domain_error_body, exception_handler
from core.errors import Conflict, DomainError, Forbidden, NotFound, full_clean
from core.forms import form_add_domain_error
from workspaces.models import Workspace


class NameForm(forms.Form):
    name = forms.CharField()


def test_each_kind_has_its_status_and_code():
    assert [(e.status, e.code) for e in (DomainError("x"), NotFound("x"), Forbidden("x"), Conflict("x"))] == [
        (400, "invalid_request"),
        (404, "not_found"),
        (403, "forbidden"),
        (409, "conflict"),
    ]
    error = DomainError("Slow down.", code="too_eager", status=429)
    assert (error.status, error.code, error.field, str(error)) == (429, "too_eager", None, "Slow down.")
    assert DomainError.status == 400  # an instance's status never leaks into its class


def test_the_api_answers_a_field_error_like_a_serializer_error():
    response = exception_handler(DomainError("Choose a role.", field="role"), {})
    assert response is not None and response.status_code == 400
    assert response.data == {
        "error": {"code": "invalid_request", "message": "Invalid input: role: Choose a role.", "fields": {"role": ["Choose a role."]}}
    }


def test_the_api_answers_other_statuses_with_the_plain_message_and_the_extra_keys():
    error = Conflict("Version 2 exists.", field="version.number", code="version_exists", extra={"errors": [{"line": 3}]})
    assert domain_error_body(error) == {
        "error": {"code": "version_exists", "message": "Version 2 exists.", "fields": {"version.number": ["Version 2 exists."]}},
        "errors": [{"line": 3}],
    }
    response = exception_handler(NotFound("Input set not found."), {})
    assert response is not None and response.status_code == 404
    assert response.data == {"error": {"code": "not_found", "message": "Input set not found."}}


def test_a_form_shows_the_error_next_to_its_field_or_above_the_fields():
    form = NameForm({"name": "x"})
    assert form.is_valid()
    form_add_domain_error(form, DomainError("That name is taken.", field="name"))
    form_add_domain_error(form, DomainError("The workspace is read-only.", field="workspace"))
    form_add_domain_error(form, Conflict("Reload and try again."))
    assert form.errors["name"] == ["That name is taken."]
    assert form.non_field_errors() == ["The workspace is read-only.", "Reload and try again."]


def test_a_model_rule_becomes_a_domain_error_naming_its_field():
    assert DomainError.from_validation_error(ValidationError({"slug": ["Bad.", "Too long."]})).field == "slug"
    assert DomainError.from_validation_error(ValidationError({"__all__": ["Taken."]})).field is None
    assert DomainError.from_validation_error(ValidationError("Nope.")).message == "Nope."


@pytest.mark.django_db
def test_full_clean_raises_the_domain_error():
    with pytest.raises(DomainError) as caught:
        full_clean(Workspace(name="Acme", slug="not a slug"))
    assert caught.value.field == "slug" and caught.value.status == 400
