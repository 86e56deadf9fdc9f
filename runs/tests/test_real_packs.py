"""Issue 15's yardstick: every real AgentClash pack, raced by a scripted good and a scripted bad agent.

For each valid pack in packs/library and packs/tests/data/examples, runs/tests/real_packs/agents/
<slug>.yaml holds a "good" agent (does what each case asks) and a "bad" agent (fails the way the
pack is designed to catch), scripted judges and, for multi-turn packs, a scripted user
simulator. A careful reviewer expects: the good lane ranks first on the run scorecard, and the
default gate policy says ``fail`` for good → bad and ``pass`` for good → good (the good agent run
twice). runs/tests/real_packs/harness.py does the racing; this module states the verdicts.

KNOWN_FAILURES lists the packs that do not get those verdicts yet, each with the reason found
when this test was written. They are strict xfails: when a fix makes a pack pass, the test
fails until its entry is deleted here.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from conftest import require_or_skip
from engine.events import TOOL_CALL_FAILED, TOOL_CALL_RESULTS, TOOL_REGISTRY_WARNING
from packs.services import PackInvalid, pack_publish
from packs.tests.factories import CORPUS_FILES, EXAMPLE_FILES
from runs.models import RunEvent
from runs.tests.real_packs.harness import PackAgents, all_pack_agents, race_lanes, race_pack
from runs.tests.real_packs.reviewer import review

pytestmark = pytest.mark.django_db

# Why a pack's verdicts differ from a reviewer's, per pack (issue 15): a strict xfail with the reason.
# Delete an entry when its pack passes; strict xfail flags the ones that start passing. Every pack
# passes today: cost is priced (scripted = 0), the default gate policy requires the dimensions the
# pack declares (docs/scorecards-and-gates.md), security findings are evaluated and multi-turn
# packs run with their simulator.
KNOWN_FAILURES: dict[str, str] = {}

PACKS = all_pack_agents()


def _param(spec: PackAgents) -> Any:
    reason = KNOWN_FAILURES.get(spec.slug)
    # Only a wrong verdict or a refused run is an expected failure; a crash in the harness is not.
    marks = [pytest.mark.xfail(strict=True, raises=(AssertionError, ValidationError), reason=reason)] if reason else []
    return pytest.param(spec, id=spec.slug, marks=marks)


def test_every_valid_pack_has_scripted_agents():
    assert sorted(spec.slug for spec in PACKS) == sorted(path.stem for path in CORPUS_FILES)
    assert sorted(spec.pack_path.name for spec in PACKS) == sorted(path.name for path in CORPUS_FILES)


@pytest.mark.parametrize("spec", [_param(spec) for spec in PACKS])
def test_the_good_agent_wins_and_the_gate_catches_the_bad_one(spec, tasks, workspace, admin):
    if spec.data.get("needs_sandbox", True):
        require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    races = race_pack(spec, tasks=tasks, workspace=workspace, user=admin)
    for race in races:
        observed = race.verdicts()
        assert observed == spec.expect, f"{spec.slug}/{race.input_set}: {observed}\n" + json.dumps(race.describe(), indent=1, default=str)


@pytest.mark.parametrize("spec", [pytest.param(spec, id=spec.slug) for spec in PACKS if spec.security])
def test_the_security_scripts_are_what_they_claim(spec, tasks, workspace, admin):
    """Script check, not a product verdict: the good agent never leaks, matches no forbidden
    output and refuses every adversarial prompt (each in its own turn's answer); the bad agent
    leaks a planted secret or matches a high/critical forbidden output, in what it wrote
    (answers, assistant text or tool-call arguments; runs/tests/real_packs/reviewer.py)."""
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    for good, bad in race_lanes(spec, tasks=tasks, workspace=workspace, user=admin):
        good_review, bad_review = review(spec.security, good), review(spec.security, bad)
        assert good_review and all(not any(found.values()) for found in good_review.values()), good_review
        assert bad_review and all(
            found["leaks"] or any(hit.startswith(("high", "critical")) for hit in found["forbidden"]) for found in bad_review.values()
        ), bad_review


# Packs that declare their tools under `version:` (issue 15 item 7): read as the pack's tools, with
# a warning, so the good agent's calls reach them. Their verdicts alone do not show it (a bad agent
# that calls a forbidden tool fails its assertion even when no tool exists), so this says it.
TOOLS_UNDER_VERSION = {
    "deep-research-analyst": set(),  # its composed tools delegate to `shell_exec`: hidden, with a warning
    "it-helpdesk-triage": {"search_runbook", "restart_service"},
    "tool-calling-accuracy": {"get_order", "issue_refund"},
}


@pytest.mark.parametrize("spec", [pytest.param(spec, id=spec.slug) for spec in PACKS if spec.slug in TOOLS_UNDER_VERSION])
def test_tools_declared_under_version_reach_the_good_agent(spec, tasks, workspace, admin):
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    for good, _bad in race_lanes(spec, tasks=tasks, workspace=workspace, user=admin):
        version = good.run.pack_version
        assert any(w["path"] == "version.tools" for w in version.warnings), version.warnings
        results = RunEvent.objects.filter(lane=good, event_type__in=TOOL_CALL_RESULTS).order_by("sequence_number")
        failed = [e.payload for e in results if e.event_type == TOOL_CALL_FAILED]
        assert not failed, failed
        mocks = [e.payload for e in results if e.payload.get("tool_category") == "mock"]
        assert {p["tool_name"] for p in mocks} == TOOLS_UNDER_VERSION[spec.slug]
        hidden = RunEvent.objects.filter(lane=good, event_type=TOOL_REGISTRY_WARNING).values_list("payload__message", flat=True)
        assert all("shell_exec" in message for message in hidden), list(hidden)
        assert bool(hidden) == (spec.slug == "deep-research-analyst")


def test_cli_smoke_ruff_stays_invalid_with_its_message(workspace, admin):
    source = (EXAMPLE_FILES[0].parent / "cli-smoke-ruff.yaml").read_text()
    with pytest.raises(PackInvalid) as caught:
        pack_publish(workspace=workspace, user=admin, source=source)
    first = caught.value.errors[0]
    assert first["line"] == 5
    # The clear message: which key is duplicated and where it was first defined.
    assert 'key "version" already defined at line 1' in first["message"], first
