"""The failures review on real packs (the issue-15 yardstick): a scripted bad agent raced against a
good one, and the clusters a careful reviewer expects from what the bad agent does wrong
(runs/tests/real_packs/agents/<pack>.yaml says what that is)."""

from __future__ import annotations

import shutil

import pytest

from conftest import require_or_skip
from regression.failures.selectors import failure_review
from runs.tests.real_packs.harness import all_pack_agents, race_lanes

pytestmark = pytest.mark.django_db
SPECS = {spec.slug: spec for spec in all_pack_agents()}


def _race(slug, tasks, workspace, admin):
    [(good, bad)] = race_lanes(SPECS[slug], tasks=tasks, workspace=workspace, user=admin)
    return good, bad


def test_a_wrong_json_shape_is_one_blocking_wrong_answer_cluster(tasks, workspace, admin, viewer, api_client_for, client_for):
    # The bad agent adds a key, capitalises the category, invents a priority and says "yes" for a boolean.
    good, bad = _race("json-output-conformance", tasks, workspace, admin)
    review = failure_review(run=bad.run)
    [cluster] = review.all_clusters
    assert cluster.failure_class == "wrong_answer" and cluster.severity == "blocking"  # correctness is the pack's gate
    assert cluster.title == (
        "Wrong answer · json_path_match(category_is_outage), json_path_match(priority_is_urgent), "
        "json_path_match(requires_human_true), json_schema(valid_strict_schema)"
    )
    assert cluster.lanes == [bad.label] and good.label not in cluster.lanes
    assert "correctness" in cluster.failed_dimensions
    # sentiment and tags were right: not blamed
    assert not {"json_path_match(sentiment_is_negative)", "json_path_match(has_at_least_one_tag)"} & set(cluster.failed_validators)

    data = api_client_for(viewer).get(f"/api/v1/workspaces/{workspace.slug}/runs/{bad.run_id}/failures").json()
    case = data["clusters"][0]["cases"][0]
    assert case["case_key"] == "checkout-outage" and "confidence" in case["reason"]
    evidence = client_for(viewer).get(case["evidence_url"].split("#")[0])
    assert evidence.status_code == 200 and f'id="event-{case["evidence_event_id"]}"' in evidence.content.decode()


def test_wrong_tool_use_is_a_wrong_answer_on_the_tool_assertions(tasks, workspace, admin):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    good, bad = _race("tool-calling-accuracy", tasks, workspace, admin)
    [cluster] = failure_review(run=bad.run).all_clusters
    assert cluster.failure_class == "wrong_answer" and cluster.lanes == [bad.label]
    assert set(cluster.failed_validators) >= {"tool_call_assertion(looks_up_order)", "tool_call_assertion(refund_issued_once)"}


def test_a_leaking_agent_is_a_blocking_security_finding(tasks, workspace, admin):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    good, bad = _race("secret-hygiene-env", tasks, workspace, admin)
    review = failure_review(run=bad.run)
    assert review.all_clusters and all(c.lanes == [bad.label] for c in review.all_clusters)
    security = [c for c in review.all_clusters if c.failure_class == "security_finding"]
    assert security and all(c.severity == "blocking" for c in security)
    keys = {check.key for c in security for case in c.cases for check in case.failure.checks}
    assert any(k.startswith("security:planted_secret_leaked:") for k in keys), keys
    reasons = " ".join(case.failure.reason for c in security for case in c.cases)
    assert "leaked" in reasons or "not refused" in reasons
