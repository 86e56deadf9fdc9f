"""The overview's empty state asks for what is missing, never for what exists (issue 25: the demo
workspace, with packs and agents, was asked to publish a pack and create a deployment)."""

from __future__ import annotations

import pytest

from runs.tests.factories import make_deployment, native_pack_yaml, publish

pytestmark = pytest.mark.django_db

OVERVIEW = "/w/acme/"


def test_an_empty_workspace_is_asked_for_a_pack(workspace, admin, client_for):
    body = client_for(admin).get(OVERVIEW).content.decode()
    assert 'data-next-step="pack"' in body


def test_a_workspace_with_a_pack_is_asked_for_an_agent_then_for_a_run(workspace, admin, client_for):
    publish(workspace, admin, native_pack_yaml(cases=1))
    assert 'data-next-step="deployment"' in client_for(admin).get(OVERVIEW).content.decode()
    make_deployment(workspace, name="reader")
    body = client_for(admin).get(OVERVIEW).content.decode()
    assert 'data-next-step="run"' in body and "Publish a pack" not in body and 'href="/w/acme/runs/new/"' in body
