"""Credential resolution: the one place a ``workspace-secret://KEY`` becomes an API key."""

from __future__ import annotations

import pytest

from secrets_app.services import (
    CredentialUnavailable,
    credential_reference,
    credential_reference_key,
    credential_resolve,
    secret_set,
)

pytestmark = pytest.mark.django_db


def test_it_reads_the_named_workspace_secret(workspace, admin):
    secret_set(workspace=workspace, key="OPENAI_API_KEY", value="sk-live-value", actor=admin)
    assert credential_resolve(workspace=workspace, reference="workspace-secret://OPENAI_API_KEY") == "sk-live-value"


def test_it_uses_the_secrets_a_run_already_decrypted_without_a_query(workspace, django_assert_num_queries):
    with django_assert_num_queries(0):
        value = credential_resolve(workspace=workspace, reference=" workspace-secret://TOKEN ", secrets={"TOKEN": "t-123"})
    assert value == "t-123"


@pytest.mark.parametrize("reference", ["", "   "])
def test_an_empty_reference_names_no_credential(workspace, reference):
    assert credential_resolve(workspace=workspace, reference=reference) is None


def test_a_missing_secret_is_unavailable_and_named(workspace, other_workspace, stranger):
    secret_set(workspace=other_workspace, key="MISSING", value="belongs-to-globex", actor=stranger)
    with pytest.raises(CredentialUnavailable) as info:
        credential_resolve(workspace=workspace, reference="workspace-secret://MISSING")  # another workspace's key
    assert info.value.key == "MISSING" and str(info.value) == 'workspace secret "MISSING" not found'


def test_an_empty_value_counts_as_missing(workspace):
    with pytest.raises(CredentialUnavailable):
        credential_resolve(workspace=workspace, reference="workspace-secret://EMPTY", secrets={"EMPTY": ""})


@pytest.mark.parametrize(
    "reference", ["env://OPENAI_API_KEY", "secret://openai", "workspace-secret://", "workspace-secret://1BAD", "sk-raw"]
)
def test_other_reference_forms_are_refused(workspace, reference, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-worker-environment")
    with pytest.raises(CredentialUnavailable) as info:
        credential_resolve(workspace=workspace, reference=reference, secrets={"OPENAI_API_KEY": "sk-x"})
    assert info.value.key is None and "workspace-secret://KEY" in str(info.value)


def test_a_reference_and_its_key_round_trip():
    assert credential_reference_key(credential_reference("OPENAI_API_KEY")) == "OPENAI_API_KEY"
    assert credential_reference_key("workspace-secret://A B") is None
