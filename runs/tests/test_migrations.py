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


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_scoring_comparison_and_regression_apps_keeps_its_rows():
    """Scores, comparisons, gate verdicts and regression suites moved out of ``runs`` with
    state-only migrations: the same rows read back through the new apps, content types moved."""
    executor = _migrate(
        [("runs", "0012_regression_suite_archive_and_restrict"), ("scoring", None), ("comparisons", None), ("regression", None)]
    )
    old = executor.loader.project_state(list(executor.loader.applied_migrations)).apps
    workspace = old.get_model("workspaces", "Workspace").objects.create(slug="before", name="Before")
    pack = old.get_model("packs", "Pack").objects.create(workspace=workspace, slug="p", name="P")
    version = old.get_model("packs", "PackVersion").objects.create(
        pack=pack, workspace=workspace, number=1, execution_mode="native", manifest={}, manifest_checksum="c" * 64, raw_yaml="x"
    )
    input_set = old.get_model("packs", "InputSet").objects.create(pack_version=version, key="s", name="S")
    case = old.get_model("packs", "Case").objects.create(
        input_set=input_set, pack_version=version, challenge_key="ch", case_key="c1", payload={"inputs": []}
    )
    run = old.get_model("runs", "Run").objects.create(
        workspace=workspace, pack_version=version, input_set=input_set, name="before", execution_mode="native"
    )
    lane = old.get_model("runs", "Lane").objects.create(run=run, workspace=workspace, lane_index=0, label="A", snapshot={})
    suite = old.get_model("runs", "RegressionSuite").objects.create(workspace=workspace, pack=pack, name="smoke")
    regression_case = old.get_model("runs", "RegressionCase").objects.create(
        suite=suite, workspace=workspace, title="c1 failed", challenge_key="ch", case_key="c1", source_case=case, source_run=run
    )
    case_run = old.get_model("runs", "CaseRun").objects.create(
        run=run, lane=lane, case=case, case_key="c1", regression_case=regression_case
    )
    old.get_model("runs", "CaseScore").objects.create(
        case_run=case_run, lane=lane, passed=False, overall_score=0.25, document={"passed": False}
    )
    old.get_model("runs", "LaneScorecard").objects.create(lane=lane, overall_score=0.25, pass_rate=0.0, passed=False, document={"k": 1})
    old.get_model("runs", "RunScorecard").objects.create(run=run, winner_lane=lane, document={"winner_lane_id": str(lane.pk)})
    comparison = old.get_model("runs", "Comparison").objects.create(
        workspace=workspace, baseline_run=run, candidate_run=run, baseline_lane=lane, candidate_lane=lane,
        status="comparable", fingerprint="f" * 64, summary={"cases": 1},
    )  # fmt: skip
    old.get_model("runs", "GateResult").objects.create(
        comparison=comparison, workspace=workspace, verdict="fail", policy_fingerprint="p" * 64, details={"why": "x"}
    )
    content_type = old.get_model("contenttypes", "ContentType")
    for model in ("casescore", "comparison", "regressionsuite"):
        content_type.objects.get_or_create(app_label="runs", model=model)

    _migrate(
        [
            key
            for key in MigrationExecutor(connection).loader.graph.leaf_nodes()
            if key[0] in {"runs", "scoring", "comparisons", "regression"}
        ]
    )

    from django.contrib.contenttypes.models import ContentType

    from comparisons.models import Comparison, GateResult
    from regression.models import RegressionCase, RegressionSuite
    from runs.models import CaseRun
    from scoring.models import CaseScore, LaneScorecard, RunScorecard

    ContentType.objects.clear_cache()
    moved_case_run = CaseRun.objects.get(pk=case_run.pk)
    assert moved_case_run.case_score.overall_score == 0.25
    assert moved_case_run.regression_case.suite == RegressionSuite.objects.get(name="smoke")
    assert RegressionCase.objects.get(pk=regression_case.pk).source_run_id == run.pk
    assert LaneScorecard.objects.get(lane_id=lane.pk).document == {"k": 1}
    assert RunScorecard.objects.get(run_id=run.pk).winner_lane_id == lane.pk
    assert GateResult.objects.get(comparison=Comparison.objects.get(pk=comparison.pk)).verdict == "fail"
    assert CaseScore.objects.count() == 1
    assert ContentType.objects.get_for_model(CaseScore).app_label == "scoring"
    assert ContentType.objects.get_for_model(Comparison).app_label == "comparisons"
    assert ContentType.objects.get_for_model(RegressionSuite).app_label == "regression"
    assert not ContentType.objects.filter(app_label="runs", model__in=["casescore", "comparison", "regressionsuite"]).exists()
