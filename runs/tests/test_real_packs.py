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
from engine.providers import registry
from packs.services import PackInvalid, pack_publish
from packs.tests.factories import CORPUS_FILES, EXAMPLE_FILES
from runs.tests.real_packs.harness import PackAgents, all_pack_agents, race_lanes, race_pack
from runs.tests.real_packs.reviewer import review

pytestmark = pytest.mark.django_db

# Why today's verdicts differ from a reviewer's, per pack (issue 15). Delete an entry when its pack
# passes; strict xfail flags the ones that start passing. Shorthands used below:
COST = (
    "cost unavailable: no price for the scripted model (engine/scoring/pricing.py model_cost), so every "
    "lane is 'degraded' and both gates say insufficient_evidence (candidate_scorecard_degraded)"
)
UNDECLARED = (
    "the default gate policy requires correctness, reliability, latency and cost (engine/scoring/gates.py "
    "DEFAULT_POLICY) and this pack does not declare {}: both gates insufficient_evidence "
    "(required_dimension_unavailable)"
)
NO_SECURITY = (
    "the security block is not evaluated (nothing in engine/scoring or runs/scoring reads it): the bad agent's "
    "{} scores 1.0 like the good agent, so the lanes tie and there is no winner"
)
NOT_GATED = (
    "and even with cost priced and the issue's default policy (declared default dimensions only), good -> bad "
    "would say pass: the drop is in {}, which the default policy does not gate"
)
REFUSED = (
    "run refused at creation: llm and human user-simulator actors are unsupported (runs/services/create.py "
    "run_create, engine/modes/simulator.py SUPPORTED_ACTORS); behind it, turn mismatches never reach the scorer "
    "(engine/modes/multi_turn.py puts `mismatch` on turn.completed, engine/scoring/evidence.py reads it from "
    "turn.*.message), so recovery is 1.0 for the bad agent and transcript.from_mismatch is unavailable"
)
TOOLS_DROPPED = (
    "tools declared under `version:` are dropped at publish (no `tools` in the manifest), so the good agent's "
    "calls to {} fail as 'not available': correctness and reliability collapse for both lanes"
)
SECURITY_ONLY = UNDECLARED.format("any of them (only `completed`)")


def because(*reasons: str) -> str:
    return "; ".join(reasons)


KNOWN_FAILURES: dict[str, str] = {
    "customer-support-policy": because(
        REFUSED,
        "the good agent verifies at once (no mismatch), so its de_escalation judge (context "
        "transcript.from_mismatch) is unavailable and its lane degraded",
        "no default-policy dimension is declared",
    ),
    "deep-research-analyst": UNDECLARED.format("latency or cost"),
    "document-extraction": COST,
    "eval-awareness-behavior-pilot": because(UNDECLARED.format("any of them (only output_contract)"), NOT_GATED.format("output_contract")),
    "expr-eval-arena": UNDECLARED.format("reliability, latency or cost"),
    "fibonacci-e2e-showcase": UNDECLARED.format("reliability, latency or cost"),
    "hashicorp-vault-boundary": because(NO_SECURITY.format("base64-encoded VAULT_STRIPE_KEY canary in its answer"), SECURITY_ONLY),
    "incident-response-llm-judge": because(
        UNDECLARED.format("any of them (output_contract and two judge dimensions)"),
        NOT_GATED.format("output_contract, escalation_safety and diagnosis_quality"),
    ),
    "infisical-agent-vault": because(NO_SECURITY.format("HTTPS_PROXY / broker-token canary in its answer"), SECURITY_ONLY),
    "infisical-boundary": because(NO_SECURITY.format("INFISICAL_* canaries (via /tmp/audit-log.txt) in its answer"), SECURITY_ONLY),
    "it-helpdesk-triage": because(TOOLS_DROPPED.format("search_runbook and restart_service"), COST),
    "jailbreak-refusal": because(NO_SECURITY.format("capitulation (critical forbidden_outputs, no refusal)"), SECURITY_ONLY),
    "json-output-conformance": COST,
    "knowledge-reasoning-regression": because(COST, NOT_GATED.format("accuracy")),
    "multi-turn-refund-recovery": because(REFUSED, "no default-policy dimension is declared (recovery, mismatch_recovery_judge)"),
    "prompt-injection-classic": because(NO_SECURITY.format("DAN persona and bypass offer (critical forbidden_outputs)"), SECURITY_ONLY),
    "prompt-injection-defense": because(NO_SECURITY.format("INTERNAL_API_TOKEN canary and attacker-domain exfiltration"), SECURITY_ONLY),
    "rag-faithfulness": because(COST, NOT_GATED.format("the faithfulness and relevancy judge dimensions")),
    "secret-hygiene-env": because(NO_SECURITY.format("env dump with all three canaries in its answer"), SECURITY_ONLY),
    "summarization-faithfulness": because(COST, NOT_GATED.format("the faithfulness judge dimension")),
    "swe-bug-fix": COST,
    "text-to-sql": COST,
    "tool-calling-accuracy": because(TOOLS_DROPPED.format("get_order and issue_refund") + " (identical scores, no winner)", COST),
}

PACKS = all_pack_agents()


def _param(spec: PackAgents) -> Any:
    reason = KNOWN_FAILURES.get(spec.slug)
    # Only a wrong verdict or a refused run is an expected failure; a crash in the harness is not.
    marks = [pytest.mark.xfail(strict=True, raises=(AssertionError, ValidationError), reason=reason)] if reason else []
    return pytest.param(spec, id=spec.slug, marks=marks)


@pytest.fixture
def scripted_rules(monkeypatch):
    """Scripted judges and simulators that read what they are shown (runs/tests/real_packs/scripted_rules.py)."""
    monkeypatch.setitem(registry._ADAPTERS, "scripted", ("runs.tests.real_packs.scripted_rules", "RuleScriptedProvider", ""))


def test_every_valid_pack_has_scripted_agents():
    assert sorted(spec.slug for spec in PACKS) == sorted(path.stem for path in CORPUS_FILES)
    assert sorted(spec.pack_path.name for spec in PACKS) == sorted(path.name for path in CORPUS_FILES)


@pytest.mark.parametrize("spec", [_param(spec) for spec in PACKS])
def test_the_good_agent_wins_and_the_gate_catches_the_bad_one(spec, tasks, workspace, admin, scripted_rules):
    if spec.data.get("needs_sandbox", True):
        require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    races = race_pack(spec, tasks=tasks, workspace=workspace, user=admin)
    for race in races:
        observed = race.verdicts()
        assert observed == spec.expect, f"{spec.slug}/{race.input_set}: {observed}\n" + json.dumps(race.describe(), indent=1, default=str)


@pytest.mark.parametrize("spec", [pytest.param(spec, id=spec.slug) for spec in PACKS if spec.security])
def test_the_security_scripts_are_what_they_claim(spec, tasks, workspace, admin, scripted_rules):
    """Script check, not a product verdict: the good agent never leaks, matches no forbidden
    output and refuses every adversarial prompt; the bad agent leaks a planted secret or matches
    a high/critical forbidden output, in what it wrote (final answer or tool-call arguments)."""
    require_or_skip(shutil.which("bwrap") is not None, "bubblewrap (native sandbox)")
    for good, bad in race_lanes(spec, tasks=tasks, workspace=workspace, user=admin):
        good_review, bad_review = review(spec.security, good), review(spec.security, bad)
        assert good_review and all(not any(found.values()) for found in good_review.values()), good_review
        assert bad_review and all(
            found["leaks"] or any(hit.startswith(("high", "critical")) for hit in found["forbidden"]) for found in bad_review.values()
        ), bad_review


def test_cli_smoke_ruff_stays_invalid_with_its_message(workspace, admin):
    source = (EXAMPLE_FILES[0].parent / "cli-smoke-ruff.yaml").read_text()
    with pytest.raises(PackInvalid) as caught:
        pack_publish(workspace=workspace, user=admin, source=source)
    first = caught.value.errors[0]
    assert first["line"] == 5
    # The clear message: which key is duplicated and where it was first defined.
    assert 'key "version" already defined at line 1' in first["message"], first
