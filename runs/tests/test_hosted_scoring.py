"""A hosted case scored like the worker scores it (inline, from the stored events): the agent's
reported trace is evidence, and what its tier can't show is unavailable, with the reason."""

from __future__ import annotations

import pytest

from runs import pipeline, services
from runs.models import CaseRun, CaseStatus
from runs.tests.factories import native_pack_yaml, publish
from runs.tests.hosted_helpers import agent_on_loopback, agent_url, claim, hosted_deployment
from runs.tests.worker import wait_for
from scoring.models import CaseScore

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

EXTRA_VALIDATORS = """      - key: used_lookup
        type: tool_call_assertion
        target: tool_calls
        config: {tool_name: lookup, must_call: true}
      - key: wrote_notes
        type: file_exists
        target: file:notes
    post_execution_checks:
      - key: notes
        type: file_capture
        path: /workspace/notes.txt
"""


def _pack(workspace, admin):
    source = native_pack_yaml(cases=1).replace("    metrics:\n", EXTRA_VALIDATORS + "    metrics:\n", 1)
    return publish(workspace, admin, source)


def _validators(case_run: CaseRun) -> dict[str, dict]:
    document = CaseScore.objects.get(case_run=case_run).document
    details = document["validator_details"]
    return {v["key"]: v for v in (details.values() if isinstance(details, dict) else details)}


@pytest.mark.parametrize(("black_box", "tier"), [(False, "structured_trace"), (True, "black_box")])
def test_a_hosted_case_is_scored_on_what_its_tier_shows(live_server, settings, workspace, admin, tasks, black_box, tier):
    settings.ALLOW_PRIVATE_PROVIDER_URLS = True
    settings.HOSTED_CALLBACK_BASE_URL = live_server.url
    version = _pack(workspace, admin)
    with agent_on_loopback(answers={"case-0": "note number 0"}, black_box=black_box) as agent:
        deployment = hosted_deployment(workspace, endpoint_url=agent_url(agent))
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])
        case_run = claim(CaseRun.objects.get(run=run), attempt=0)
        CaseRun.objects.filter(pk=case_run.pk).update(status=CaseStatus.QUEUED)
        assert pipeline.case_run_execute(case_run_id=case_run.pk, score_inline=True) == "dispatched"
        # the agent's terminal event finishes the case in the callback; the finalize job scores it
        assert wait_for(lambda: CaseRun.objects.get(pk=case_run.pk).is_terminal, timeout=30)
    tasks.drain()
    case_run.refresh_from_db()
    assert case_run.status == CaseStatus.COMPLETED
    assert case_run.final_output == "note number 0"
    assert case_run.verification == {"evidence_tier": tier}
    assert case_run.tool_call_count == (0 if black_box else 1)
    verdicts = _validators(case_run)
    assert verdicts["answer"]["verdict"] == "pass"  # the final answer is judged at every tier
    assert verdicts["wrote_notes"]["state"] == "unavailable" and "workspace files" in verdicts["wrote_notes"]["reason"]
    if black_box:
        assert verdicts["used_lookup"]["state"] == "unavailable" and "tool-call trace" in verdicts["used_lookup"]["reason"]
    else:
        assert (verdicts["used_lookup"]["state"], verdicts["used_lookup"]["verdict"]) == ("available", "pass")
