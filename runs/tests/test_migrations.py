"""A database from before the infrastructure app existed migrates forward without losing a row.

The models moved from ``workspaces`` to ``infrastructure`` (and ``RunAgent`` became ``Lane``)
with state-only migrations: the tables keep their names. This test builds the old schema with
the old migrations, writes rows through the old models, migrates to the latest state and reads
the same rows back through today's models, content types included.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

OLD = [
    ("workspaces", "0001_initial"),
    ("packs", "0001_initial"),
    ("runs", "0002_execution_bookkeeping"),
    ("infrastructure", None),
]


def _migrate(targets: list[tuple[str, str | None]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return MigrationExecutor(connection)


def _latest() -> list[tuple[str, str]]:
    executor = MigrationExecutor(connection)
    return [key for key in executor.loader.graph.leaf_nodes() if key[0] in {"workspaces", "infrastructure", "packs", "runs"}]


@pytest.mark.django_db(transaction=True)
def test_an_old_database_keeps_every_infrastructure_row_and_lane_after_migrating():
    executor = _migrate(OLD)
    old_apps = executor.loader.project_state(list(executor.loader.applied_migrations)).apps
    user = old_apps.get_model("auth", "User").objects.create(username="olduser")
    workspace = old_apps.get_model("workspaces", "Workspace").objects.create(slug="old", name="Old")
    account = old_apps.get_model("workspaces", "ProviderAccount").objects.create(
        workspace=workspace, name="Scripted", provider_key="scripted", created_by=user
    )
    profile = old_apps.get_model("workspaces", "RuntimeProfile").objects.create(workspace=workspace, name="Default")
    deployment = old_apps.get_model("workspaces", "AgentDeployment").objects.create(
        workspace=workspace, name="Agent A", provider_account=account, model="scripted-1", runtime_profile=profile
    )
    old_apps.get_model("workspaces", "ToolResource").objects.create(
        workspace=workspace, name="Search", slug="search", tool_kind="primitive", capability_key="search_text"
    )
    pack = old_apps.get_model("packs", "Pack").objects.create(workspace=workspace, slug="p", name="P")
    version = old_apps.get_model("packs", "PackVersion").objects.create(
        pack=pack, workspace=workspace, number=1, execution_mode="native", manifest={}, manifest_checksum="c" * 64, raw_yaml="x"
    )
    input_set = old_apps.get_model("packs", "InputSet").objects.create(pack_version=version, key="s", name="S")
    run = old_apps.get_model("runs", "Run").objects.create(
        workspace=workspace, pack_version=version, input_set=input_set, name="old run", execution_mode="native"
    )
    lane = old_apps.get_model("runs", "RunAgent").objects.create(
        run=run, workspace=workspace, deployment=deployment, lane_index=0, label="Agent A", snapshot={"model": "scripted-1"}
    )
    old_apps.get_model("runs", "RunAgentStatusHistory").objects.create(lane=lane, from_status="queued", to_status="ready")
    content_type = old_apps.get_model("contenttypes", "ContentType")
    content_type.objects.get_or_create(app_label="workspaces", model="agentdeployment")
    content_type.objects.get_or_create(app_label="runs", model="runagent")

    _migrate(_latest())

    from django.contrib.contenttypes.models import ContentType

    from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile, ToolResource
    from runs.models import Lane, LaneStatusHistory

    ContentType.objects.clear_cache()
    moved = AgentDeployment.objects.get(pk=deployment.pk)
    assert (moved.name, moved.provider_account.name, moved.runtime_profile.name) == ("Agent A", "Scripted", "Default")
    assert ProviderAccount.objects.get(pk=account.pk).created_by.username == "olduser"
    assert RuntimeProfile.objects.filter(workspace__slug="old").count() == 1
    assert ToolResource.objects.get(slug="search").capability_key == "search_text"
    new_lane = Lane.objects.get(pk=lane.pk)
    assert new_lane.deployment_id == deployment.pk and new_lane.snapshot == {"model": "scripted-1"}
    assert LaneStatusHistory.objects.get(lane=new_lane).to_status == "ready"
    assert ContentType.objects.get_for_model(AgentDeployment).app_label == "infrastructure"
    assert ContentType.objects.filter(app_label="workspaces", model="agentdeployment").count() == 0
    assert ContentType.objects.get_for_model(Lane).model == "lane"
