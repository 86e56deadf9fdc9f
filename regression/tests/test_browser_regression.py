"""Regression suites in a real browser with a real worker (issue 13, done-when): create a suite,
promote a failed case from its replay, activate it on the suite's page, start a suite_only run
from the New-run form, watch its regression coverage, and evaluate a gate that reports the
regression rule."""

from __future__ import annotations

import pytest

from comparisons.services import comparison_create
from core.tests.browser import login
from regression.models import RegressionCase, RegressionSuite
from runs import services
from runs.models import CaseRun, Run
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.worker import wait_for
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TIMEOUT_MS = 40_000
POLICY = """policy_key: regressions
required_dimensions: []
regression_gate_rules:
  no_blocking_regression_failure: true
  no_new_blocking_failure_vs_baseline: true
"""


def finished(run: Run) -> bool:
    run.refresh_from_db()
    return run.is_terminal and not CaseRun.objects.filter(run=run, passed__isnull=True).exists()


def test_a_reviewer_promotes_activates_and_gates_a_suite_only_run(live_server, page, worker, workspace, member):
    version = publish(workspace, member, native_pack_yaml(cases=2))
    reader = make_deployment(workspace, name="reader")
    guesser = make_deployment(workspace, name="guesser", script=[{"submit": "no idea"}])
    failed = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[guesser.pk])
    worker.start()
    assert wait_for(lambda: finished(failed), timeout=60)
    base = f"{live_server.url}/w/{workspace.slug}"

    login(page, live_server.url, member.username, PASSWORD)

    # A suite for the pack.
    page.goto(f"{base}/regression-suites/")
    page.fill("#id_name", "smoke")
    page.select_option("#id_pack", str(version.pack_id))
    page.get_by_role("button", name="Create suite").click()
    page.wait_for_url(f"{base}/regression-suites/*/")
    suite = RegressionSuite.objects.get(name="smoke")
    assert page.url == f"{base}/regression-suites/{suite.pk}/"

    # Promote the failed case from its replay page.
    case_run = CaseRun.objects.get(run=failed, case_key="case-1")
    page.goto(f"{base}/runs/{failed.pk}/cases/{case_run.pk}/")
    page.select_option(f"#promote-severity-{case_run.pk}", "blocking")
    page.get_by_role("button", name="Promote").click()
    page.locator(f'[data-promoted="{case_run.pk}"]').wait_for()  # in place: the replay stays
    case = RegressionCase.objects.get()
    assert (case.status, case.source_case_run_id) == ("proposed", case_run.pk)
    page.locator(f'[data-promoted="{case_run.pk}"]').get_by_role("link", name="smoke").click()
    page.wait_for_url(f"{base}/regression-suites/{suite.pk}/")
    row = page.locator(f"#regression-case-{case.pk}")
    assert "Proposed" in row.inner_text()

    # Activate it (htmx swaps the row in place).
    row.get_by_role("button", name="Activate").click()
    page.locator(f'#regression-case-{case.pk}[data-status="active"]').wait_for()
    assert RegressionCase.objects.get(pk=case.pk).status == "active"
    assert page.locator(f"#regression-case-{case.pk}").get_by_role("button", name="Activate").count() == 0

    # A baseline suite_only run of the good agent, then the candidate from the New-run form.
    baseline = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[reader.pk],
                                   regression_suite_ids=[suite.pk], regression_scope="suite_only")  # fmt: skip
    page.goto(f"{base}/runs/new/")
    page.select_option("#id_pack_version_id", str(version.pk))
    page.locator("#run-regression").wait_for()
    page.get_by_label("guesser").check()
    page.locator("#run-regression").get_by_label("smoke").check()
    page.select_option("#id_regression_scope", "suite_only")
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url(f"{base}/runs/*/")
    candidate = Run.objects.exclude(pk__in=[failed.pk, baseline.pk]).get()
    assert [(c.regression_case_id, c.case_key) for c in candidate.case_runs.all()] == [(case.pk, f"regression/{case.pk}/case-1")]
    assert wait_for(lambda: finished(candidate) and finished(baseline), timeout=60)

    page.reload()
    coverage = page.locator("#regression-coverage")
    assert "smoke" in coverage.inner_text() and "1 fail" in coverage.inner_text()

    # The gate reports the regression rule.
    comparison = comparison_create(workspace=workspace, user=member, baseline_run=baseline, candidate_run=candidate)
    page.goto(f"{base}/comparisons/{comparison.pk}/")
    page.fill("#id_policy", POLICY)
    page.get_by_role("button", name="Evaluate gate").click()
    page.get_by_text("regression_blocking_failure").first.wait_for()
    assert "no_blocking_regression_failure" in page.content()


def test_promote_from_the_failures_review(live_server, page, worker, workspace, member):
    version = publish(workspace, member, native_pack_yaml(cases=1))
    guesser = make_deployment(workspace, name="guesser", script=[{"submit": "no idea"}])
    failed = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[guesser.pk])
    RegressionSuite.objects.create(workspace=workspace, pack=version.pack, name="nightly")
    worker.start()
    assert wait_for(lambda: finished(failed), timeout=60)
    login(page, live_server.url, member.username, PASSWORD)

    case_run = CaseRun.objects.get(run=failed)
    page.goto(f"{live_server.url}/w/{workspace.slug}/runs/{failed.pk}/failures/")
    page.locator(f'[data-promote-form="{case_run.pk}"]').get_by_role("button", name="Promote").click()
    page.locator(f'[data-promoted="{case_run.pk}"]').wait_for()  # in place: the review stays
    case = RegressionCase.objects.get()
    assert (case.source_case_run_id, case.status, case.severity) == (case_run.pk, "proposed", "blocking")
    assert page.url == f"{live_server.url}/w/{workspace.slug}/runs/{failed.pk}/failures/"


def test_the_run_pages_regression_coverage_updates_without_a_reload(live_server, page, worker, workspace, member):
    from regression.tests.factories import promoted

    version = publish(workspace, member, native_pack_yaml(cases=1))
    guesser = make_deployment(workspace, name="guesser", script=[{"submit": "no idea"}])
    failed = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[guesser.pk])
    worker.start()
    assert wait_for(lambda: finished(failed), timeout=60)
    suite = RegressionSuite.objects.create(workspace=workspace, pack=version.pack, name="smoke")
    promoted(workspace, member, failed, suite, case_key="case-0")
    slow = make_deployment(workspace, name="slow guesser", script=[{"submit": "still no idea"}])
    slow.deployment_config = {**slow.deployment_config, "latency_ms": 3000}  # the case runs while the page watches
    slow.save(update_fields=["deployment_config"])

    login(page, live_server.url, member.username, PASSWORD)
    candidate = services.run_create(workspace=workspace, user=member, pack_version=version, deployment_ids=[slow.pk],
                                    regression_suite_ids=[suite.pk], regression_scope="suite_only")  # fmt: skip
    page.goto(f"{live_server.url}/w/{workspace.slug}/runs/{candidate.pk}/")
    coverage = page.locator("#regression-coverage")
    assert coverage.locator('[data-count="pending"]').inner_text() == "1"
    page.evaluate("window.__notReloaded = true")

    coverage.locator('[data-count="fail"] .badge').wait_for(timeout=TIMEOUT_MS)
    assert "1 fail" in coverage.inner_text() and coverage.locator('[data-count="pending"]').inner_text() == "0"
    assert page.evaluate("window.__notReloaded") is True  # htmx swapped the region; the page was not reloaded
    page.locator('#regression-coverage[data-live="false"]').wait_for(timeout=TIMEOUT_MS)  # and it stopped polling
