"""``agentclash packs validate|publish`` against a live server: same output as ``validate_pack --json``."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from artifacts.models import Artifact, ArtifactKind
from packs.models import PackVersion

from .live import DEMO_PROMPT_PACK, REPO

pytestmark = pytest.mark.django_db(transaction=True)

LIBRARY = REPO / "packs" / "library"


def validate_pack_json(*files: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("validate_pack", *files, "--json", stdout=out)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue()


@pytest.fixture
def bundles(tmp_path):
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text(DEMO_PROMPT_PACK.read_text().replace("difficulty: easy", "difficulty: trivial"))
    duplicate = tmp_path / "duplicate.yaml"
    duplicate.write_text("pack:\n  slug: a\n  slug: b\n")
    return [str(DEMO_PROMPT_PACK), str(LIBRARY / "it-helpdesk-triage.yaml"), str(invalid), str(duplicate)]


def test_validate_prints_what_validate_pack_json_prints(cli, bundles):
    result = cli("packs", "validate", "--json", *bundles)
    expected_code, expected = validate_pack_json(*bundles)
    assert result.out == expected
    assert result.code == expected_code == 1
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert [line["valid"] for line in lines] == [True, True, False, False]
    assert any(e["field"] == "challenges[0].difficulty" for e in lines[2]["errors"])
    assert lines[1]["warnings"], "the helpdesk pack puts tools under version: and is warned about it"
    assert not PackVersion.objects.exists()


def test_validate_exits_zero_when_every_bundle_is_valid_and_reads_like_the_command(cli):
    result = cli("packs", "validate", str(DEMO_PROMPT_PACK))
    assert result.code == 0, result
    assert result.out == f"{DEMO_PROMPT_PACK}: valid\n"


def test_validate_refuses_an_unreadable_file_with_exit_4(cli, tmp_path):
    result = cli("packs", "validate", str(DEMO_PROMPT_PACK), str(tmp_path / "missing.yaml"))
    assert result.code == 4
    assert "missing.yaml: cannot read file" in result.err
    assert result.out == ""


def test_validate_needs_a_token_that_works(cli, monkeypatch):
    monkeypatch.setenv("AGENTCLASH_TOKEN", "act_wrong")
    result = cli("packs", "validate", str(DEMO_PROMPT_PACK))
    assert result.code == 4
    assert "HTTP 401" in result.err


def test_validate_with_a_workspace_the_token_cannot_see_is_a_usage_error(cli, other_workspace):
    result = cli("packs", "validate", "--workspace", other_workspace.slug, str(DEMO_PROMPT_PACK))
    assert result.code == 4
    assert "HTTP 404" in result.err


def test_publish_publishes_once_and_keeps_the_yaml_as_an_artifact(cli, workspace):
    first = cli("packs", "publish", str(DEMO_PROMPT_PACK))
    assert first.code == 0, first
    version = PackVersion.objects.get(workspace=workspace)
    assert first.out.startswith(f"Published demo-prompt-eval v1 (pack {version.pack_id}, version {version.pk}, ")
    bundle = Artifact.objects.get(workspace=workspace, kind=ArtifactKind.PACK_BUNDLE)
    assert bundle.metadata["pack_version_id"] == version.pk
    again = cli("packs", "publish", str(DEMO_PROMPT_PACK))
    assert again.code == 1
    assert "challenge_pack_version_exists" in again.err
    conflict = cli("packs", "publish", str(DEMO_PROMPT_PACK), "--format", "json")
    assert conflict.code == 1
    assert json.loads(conflict.out)["code"] == "challenge_pack_version_exists"
    assert PackVersion.objects.count() == 1


def test_publish_reports_an_invalid_bundle_with_exit_1(cli, bundles):
    result = cli("packs", "publish", bundles[2])
    assert result.code == 1
    assert result.err.startswith(f"{bundles[2]}: invalid\n")
    assert "challenges[0].difficulty" in result.err
    assert result.out == ""
    as_json = cli("packs", "publish", bundles[2], "--format", "json")
    assert as_json.code == 1
    body = json.loads(as_json.out)
    assert (body["file"], body["published"]) == (bundles[2], False)
    assert any(e["field"] == "challenges[0].difficulty" for e in body["errors"])
    assert not PackVersion.objects.exists()


def test_a_viewer_token_cannot_publish(cli, viewer, monkeypatch):
    from workspaces.services import api_token_create

    _, raw = api_token_create(user=viewer, name="read-only")
    monkeypatch.setenv("AGENTCLASH_TOKEN", raw)
    result = cli("packs", "publish", str(DEMO_PROMPT_PACK))
    assert result.code == 4
    assert "HTTP 403" in result.err
    assert not PackVersion.objects.exists()
