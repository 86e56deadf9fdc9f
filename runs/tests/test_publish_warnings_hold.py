"""A publish warning that says runs will be refused is what run creation then says (issue 26)."""

from __future__ import annotations

import pytest

from runs import services
from runs.models import Run
from runs.tests.factories import make_deployment, native_pack_yaml, publish

pytestmark = pytest.mark.django_db


def test_a_pack_without_input_sets_publishes_with_a_warning_and_its_runs_are_refused(workspace, admin):
    source = native_pack_yaml(cases=1).split("input_sets:")[0] + "input_sets: []\n"
    version = publish(workspace, admin, source)
    [warning] = [w for w in version.warnings if w["path"] == "input_sets"]
    assert warning["message"].startswith("is empty: runs of this pack are refused (this pack version has no input sets")
    assert warning["line"] == source.count("\n")  # the input_sets: [] line
    with pytest.raises(services.RunCreateError) as caught:
        services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[make_deployment(workspace).pk])
    assert caught.value.field == "input_set_id"
    assert caught.value.message == "This pack version has no input sets, so there is nothing to run."
    assert not Run.objects.exists()
