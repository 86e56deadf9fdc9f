"""From the UI: a hosted reference agent on loopback races a native scripted agent on a real pack;
the run page fills in live and the scorecard shows each lane's evidence tier (docs/hosted-agents.md)."""

from __future__ import annotations

import pytest

from core.tests.browser import login
from infrastructure.models import RuntimeProfile
from packs.services import pack_publish
from runs.models import Run, RunStatus
from runs.tests.hosted_helpers import agent_on_loopback, agent_url, hosted_deployment
from runs.tests.real_packs.harness import _deployment
from runs.tests.test_hosted_live import PACK, _answers, _scripts
from runs.tests.worker import wait_for
from workspaces.tests.factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_hosted_race_started_from_the_run_form_shows_each_lanes_evidence_tier(live_server, page, worker, workspace, member, settings):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    version = pack_publish(workspace=workspace, user=member, source=PACK.read_text())
    native = _deployment(workspace, name="Native scripted", model="scripted-1", config={"script": _scripts()["bad"]["script"]})
    RuntimeProfile.objects.filter(pk=native.runtime_profile_id).update(execution_target="prompt_eval")  # the pack's mode
    ws = f"{live_server.url}/w/{workspace.slug}"
    with agent_on_loopback(answers=_answers()) as agent:
        hosted_deployment(workspace, name="Hosted reference", endpoint_url=agent_url(agent))
        env = {"ALLOW_PRIVATE_PROVIDER_URLS": "true", "HOSTED_CALLBACK_BASE_URL": live_server.url}
        worker.extra_env = env
        worker.start()
        login(page, live_server.url, member.username, PASSWORD)
        page.goto(f"{ws}/runs/new/")
        preview = page.locator("#run-preview")
        page.select_option("#id_pack_version_id", str(version.pk))
        preview.filter(has_text="0 agents × 5 cases").wait_for()
        agents = page.locator("#run-create-fields fieldset")
        agents.get_by_label("Hosted reference", exact=True).check()  # offered on a prompt_eval pack
        agents.get_by_label("Native scripted", exact=True).check()
        preview.filter(has_text="2 agents × 5 cases = 10 case runs").wait_for()
        page.click("#run-create-form button[type=submit]")
        page.wait_for_url(f"{ws}/runs/*/")
        run = Run.objects.get(workspace=workspace)
        page.locator("#run-status [data-status=completed]").wait_for()
        assert wait_for(lambda: Run.objects.get(pk=run.pk).score_status == "scored", timeout=60)
    assert Run.objects.get(pk=run.pk).status == RunStatus.COMPLETED
    page.goto(f"{ws}/runs/{run.pk}/scorecard/")
    hosted_row = page.locator("tr", has=page.locator("[data-evidence-tier=structured_trace]"))
    native_row = page.locator("tr", has=page.locator("[data-evidence-tier=native]"))
    assert "Hosted reference" in hosted_row.inner_text() and "Winner" in hosted_row.inner_text()
    assert "Evidence: structured trace" in hosted_row.inner_text()
    assert "Native scripted" in native_row.inner_text() and "Evidence: native" in native_row.inner_text()
