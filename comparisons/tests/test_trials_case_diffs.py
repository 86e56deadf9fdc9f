"""A comparison of lanes with repeated trials shows each diverging case once, from trial 1 (docs/runs.md, "Trials")."""

from __future__ import annotations

import pytest

from comparisons.presenters import case_diffs
from comparisons.services import comparison_create
from regression.tests.factories import WRONG
from runs.services import run_create
from runs.tests.factories import make_deployment

pytestmark = pytest.mark.django_db


def test_case_diffs_read_trial_one_of_each_case(workspace, admin, pack_version, tasks):
    good, bad = make_deployment(workspace, name="good"), make_deployment(workspace, name="bad", script=WRONG)
    run = run_create(workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[good.pk, bad.pk], repeats=3)
    tasks.drain()
    base, cand = run.lanes.order_by("lane_index")
    comparison = comparison_create(
        workspace=workspace, user=admin, baseline_run=run, candidate_run=run, baseline_lane=base, candidate_lane=cand
    )
    diffs = case_diffs(comparison, workspace_slug=workspace.slug)
    assert diffs, comparison.summary
    keys = [diff.case_key for diff in diffs]
    assert len(keys) == len(set(keys))  # one entry per case, not per trial
    for diff in diffs:
        assert diff.baseline.case_run.trial == 1 and diff.candidate.case_run.trial == 1
        assert diff.baseline.case_run.lane_id == base.pk and diff.candidate.case_run.lane_id == cand.pk
