"""Words, not codes, on the second-wave pages (docs/ui-review.md): the New-run preview counts the
regression suites, the run page and the agent picker name execution modes in words."""

from __future__ import annotations

import pytest
from django.urls import reverse

from infrastructure.models import ExecutionTarget
from regression.services import regression_suite_create
from runs.templatetags.run_table import execution_mode_label, stop_reason_label
from runs.tests.factories import make_deployment, native_pack_yaml, publish

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("mode", "label"),
    [("native", "Native"), ("prompt_eval", "Prompt eval"), ("hosted_external", "Hosted external"), ("responses", "Responses"),
     ("someday_mode", "Someday mode")],
)  # fmt: skip
def test_execution_modes_read_as_words(mode, label):
    assert execution_mode_label(mode) == label


@pytest.mark.parametrize(
    ("reason", "label"),
    [("step_limit", "Step limit reached"), ("provider_error", "Provider error"), ("completed", "Finished"),
     ("brand_new_reason", "Brand new reason"), ("", "")],
)  # fmt: skip
def test_stop_reasons_read_as_words(reason, label):
    assert stop_reason_label(reason) == label


def test_the_new_run_preview_says_the_suites_cases_run_too(workspace, admin, member, client_for, deployment):
    version = publish(workspace, admin, native_pack_yaml(cases=3))
    suite = regression_suite_create(workspace=workspace, user=admin, pack=version.pack, name="Keepers")
    client = client_for(member)
    url = reverse("runs:create", args=[workspace.slug])
    base = {"pack_version_id": version.pk, "deployment_ids": [deployment.pk]}

    plain = client.get(url, base, HTTP_HX_REQUEST="true").content.decode()
    assert "1 agent × 3 cases = 3 case runs" in plain

    with_suite = client.get(url, {**base, "regression_suite_ids": [suite.pk], "regression_scope": "full"}, HTTP_HX_REQUEST="true")
    body = with_suite.content.decode()
    assert "1 agent × (3 cases + the active cases of 1 regression suite)" in body
    assert "= 3 case runs" not in body  # the pack alone would be a wrong total

    only = client.get(url, {**base, "regression_suite_ids": [suite.pk], "regression_scope": "suite_only"}, HTTP_HX_REQUEST="true")
    assert "1 agent × the active cases of 1 regression suite (the pack&#x27;s own cases are left out)" in only.content.decode()


def test_the_agent_picker_names_the_other_modes_in_words(workspace, admin, member, client_for, deployment):
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    other = make_deployment(workspace, name="prompt-only")
    other.runtime_profile.execution_target = ExecutionTarget.PROMPT_EVAL
    other.runtime_profile.save(update_fields=["execution_target"])
    body = client_for(member).get(reverse("runs:create", args=[workspace.slug]), {"pack_version_id": version.pk}, HTTP_HX_REQUEST="true")
    unfit = body.content.decode().split('id="run-unfit-agents"')[1].split("</small>")[0]
    assert "Not offered for this native pack" in unfit and "Prompt eval</strong>" in unfit
    assert "<code>prompt_eval</code>" not in unfit
