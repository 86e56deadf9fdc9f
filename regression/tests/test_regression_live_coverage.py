"""The run page's regression coverage refreshes while the run runs: in the page's one live tick
(with every other region), and through its own partial for whoever polls it alone."""

from __future__ import annotations

import pytest

from regression.tests.factories import failing_deployment, finished_run, promoted, suite_for
from runs import services

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def running(workspace, admin, pack_version, tasks):
    """A run with one regression case, queued (its worker has not run yet)."""
    failed = finished_run(workspace, admin, pack_version, failing_deployment(workspace), tasks)
    suite = suite_for(workspace, admin, pack_version)
    promoted(workspace, admin, failed, suite)
    run = services.run_create(
        workspace=workspace, user=admin, pack_version=pack_version, deployment_ids=[failing_deployment(workspace, "again").pk],
        regression_suite_ids=[suite.pk], regression_scope="suite_only",
    )  # fmt: skip
    return run, suite


def test_the_coverage_polls_while_the_run_runs_and_its_partial_returns_the_counts(client_for, viewer, running, tasks):
    run, suite = running
    url = f"/w/acme/runs/{run.pk}/regression-coverage/"
    page = client_for(viewer).get(f"/w/acme/runs/{run.pk}/").content.decode()
    assert f'hx-get="{url}"' not in page and 'data-live="true"' in page.split('id="regression-coverage"')[1][:200]
    tick = client_for(viewer).get(f"/w/acme/runs/{run.pk}/?partial=run-live", **HTMX).content.decode()
    region = tick.split('id="regression-coverage"')[1].split("</section>")[0]
    assert 'hx-swap-oob="true"' in region and '<td class="num" data-count="pending">1</td>' in region

    partial = client_for(viewer).get(url, **HTMX)
    body = partial.content.decode()
    assert partial.status_code == 200 and 'id="regression-coverage"' in body and "<html" not in body
    assert '<td class="num" data-count="pending">1</td>' in body and "1 fail" not in body
    assert f'hx-get="{url}"' in body  # keeps polling

    tasks.drain()  # the worker runs the case: it fails again

    final = client_for(viewer).get(url, **HTMX)
    body = final.content.decode()
    assert final.status_code == 286  # htmx swaps this last version and stops polling
    assert "1 fail" in body and '<td class="num" data-count="pending">0</td>' in body
    assert "hx-get" not in body and 'data-live="false"' in body
    last_tick = client_for(viewer).get(f"/w/acme/runs/{run.pk}/?partial=run-live", **HTMX)
    assert last_tick.status_code == 286 and "1 fail" in last_tick.content.decode().split('id="regression-coverage"')[1]
    assert "hx-get" not in client_for(viewer).get(f"/w/acme/runs/{run.pk}/").content.decode().split('id="regression-coverage"')[1][:300]


def test_another_workspaces_run_is_a_404_and_a_stranger_gets_nothing(client_for, stranger, running):
    run, _ = running
    assert client_for(stranger).get(f"/w/acme/runs/{run.pk}/regression-coverage/", **HTMX).status_code == 404
    assert client_for(stranger).get(f"/w/globex/runs/{run.pk}/regression-coverage/", **HTMX).status_code == 404


def test_only_get_is_allowed(client_for, member, running):
    run, _ = running
    assert client_for(member).post(f"/w/acme/runs/{run.pk}/regression-coverage/").status_code == 405
