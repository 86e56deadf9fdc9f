from __future__ import annotations

from pathlib import Path

import pytest

from bundle import process_bundle

from .rules import manifest_of

HERE = Path(__file__).resolve().parents[2] / "packs" / "tests"
LIBRARY = sorted((HERE.parent / "library").glob("*.yaml"))
EXAMPLES = sorted((HERE / "data" / "examples").glob("*.yaml"))
DEMOS = sorted((HERE.parent / "demo").glob("*.yaml"))


def test_the_corpus_is_complete() -> None:
    assert len(LIBRARY) == 12
    assert len(EXAMPLES) == 12
    assert len(DEMOS) == 2


@pytest.mark.parametrize("path", LIBRARY + EXAMPLES + DEMOS, ids=lambda p: p.name)
def test_every_real_pack_validates_except_cli_smoke_ruff(path: Path) -> None:
    result = process_bundle(path.read_bytes())
    if path.name == "cli-smoke-ruff.yaml":
        assert not result.valid
        assert 'mapping key "version" already defined' in result.error_text
    else:
        assert result.valid, result.error_text
        assert result.checksum is not None and len(result.checksum) == 64


def test_pack_specific_quirks_are_kept() -> None:
    helpdesk = process_bundle((HERE.parent / "library" / "it-helpdesk-triage.yaml").read_bytes())
    assert helpdesk.bundle is not None
    assert "tools" not in helpdesk.bundle["version"]  # version.tools is silently dropped
    vault = manifest_of((HERE / "data" / "examples" / "hashicorp-vault-boundary.yaml").read_bytes())
    assert vault["security"]["adversarial_prompts"]


def test_deep_research_analyst_is_warned_that_no_case_can_pass() -> None:
    result = process_bundle((HERE / "data" / "examples" / "deep-research-analyst.yaml").read_bytes())
    assert result.valid
    warned = {(w.path, w.line): w.message for w in result.warnings}
    assert warned[("version.evaluation_spec.validators[10].expected_from", 173)].startswith(
        'compares the whole final output with "confidence", which can never be a JSON object, but validator "valid_report_structure" '
        "passes only when the whole final output is a JSON object: the two can never pass together"
    )
    assert warned[("version.evaluation_spec.scorecard", 198)] == (
        'no case of this pack can pass: validators "has_confidence_levels" and "valid_report_structure" can never pass together, and '
        "a weighted scorecard with no gate and no pass_threshold needs every validator to pass"
    )
