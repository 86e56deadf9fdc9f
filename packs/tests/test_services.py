from __future__ import annotations

from unittest import mock

import pytest
from django.core.exceptions import ValidationError

from bundle import process_bundle
from core.errors import DomainError
from engine.modes.simulator import SUPPORTED_ACTORS
from packs import services
from packs.demo_seed import seed as demo_seed
from packs.models import Case, Challenge, InputSet, Pack, PackVersion
from packs.tests.factories import CORPUS_FILES, EXAMPLE_FILES, LIBRARY_FILES, VALID_EXAMPLE_FILES, bundle_yaml, publish, warned_bundle_yaml
from workspaces.models import AuditEvent


def test_the_corpus_is_all_there():
    assert len(LIBRARY_FILES) == 12
    assert len(EXAMPLE_FILES) == 12
    assert len(VALID_EXAMPLE_FILES) == 11


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_it_publishes_every_catalog_and_valid_example_pack(path, workspace, member):
    source = path.read_text()
    version = services.pack_publish(workspace=workspace, user=member, source=source)

    manifest = process_bundle(source).manifest
    assert version.pack.slug == manifest["pack"]["slug"]
    assert version.number == manifest["version"]["number"]
    assert version.raw_yaml == source
    assert version.manifest == manifest
    assert version.lifecycle_status == PackVersion.Lifecycle.RUNNABLE
    assert version.published_by == member
    assert version.challenges.count() == len(manifest["challenges"])
    assert version.input_sets.count() == len(manifest.get("input_sets") or [])
    expected_cases = sum(len(s.get("cases") or []) for s in manifest.get("input_sets") or [])
    assert version.cases.count() == expected_cases
    assert not version.cases.filter(challenge__isnull=True).exists()


def test_it_rejects_cli_smoke_ruff_with_the_duplicate_key_line(workspace, member):
    source = (EXAMPLE_FILES[0].parent / "cli-smoke-ruff.yaml").read_text()
    with pytest.raises(services.PackInvalid) as caught:
        services.pack_publish(workspace=workspace, user=member, source=source)
    assert caught.value.errors[0]["line"] == 5
    assert "already defined" in caught.value.errors[0]["message"]
    assert not Pack.objects.exists()


def test_it_writes_rows_with_the_whole_normalised_case_as_payload(workspace, member):
    version = publish(workspace, member, cases=3)
    input_set = InputSet.objects.get(pack_version=version)
    cases = list(input_set.cases.all())
    assert [c.case_key for c in cases] == ["case-0", "case-1", "case-2"]
    assert [c.position for c in cases] == [0, 1, 2]
    assert cases[1].payload["payload"] == {"a": 1, "b": 1}
    assert cases[1].payload["expectations"][0]["value"] == "2"
    assert cases[1].payload["challenge_key"] == "add"
    assert cases[1].challenge == Challenge.objects.get(pack_version=version, key="add")
    assert input_set.checksum
    assert version.manifest_checksum == process_bundle(version.raw_yaml).checksum
    assert AuditEvent.objects.filter(workspace=workspace, action="pack.published", target="tiny v1").exists()


def test_it_reuses_the_pack_for_a_new_version(workspace, member):
    v1 = publish(workspace, member, number=1)
    v2 = publish(workspace, member, number=2)
    assert v1.pack_id == v2.pack_id
    assert Pack.objects.count() == 1


def test_it_rejects_an_existing_version_number_with_a_conflict(workspace, member):
    publish(workspace, member, number=1)
    with pytest.raises(services.PackConflict) as caught:
        publish(workspace, member, number=1, cases=5)
    assert caught.value.code == "challenge_pack_version_exists"
    assert caught.value.field == "version.number"
    assert caught.value.line is not None
    assert Case.objects.count() == 2


@pytest.mark.parametrize("change", [{"name": "Renamed"}, {"family": "coding"}])
def test_it_rejects_a_slug_with_different_metadata(workspace, member, change):
    publish(workspace, member, number=1)
    with pytest.raises(services.PackConflict) as caught:
        publish(workspace, member, number=2, **change)
    assert caught.value.code == "challenge_pack_metadata_conflict"
    assert PackVersion.objects.count() == 1


def test_the_same_slug_in_another_workspace_is_independent(workspace, other_workspace, member):
    publish(workspace, member)
    publish(other_workspace, None, name="Different name")
    assert Pack.objects.count() == 2


def test_it_writes_nothing_when_a_late_step_fails(workspace, member):
    with mock.patch.object(Case.objects, "bulk_create", side_effect=RuntimeError("disk full")), pytest.raises(RuntimeError):
        publish(workspace, member)
    assert not Pack.objects.exists()
    assert not PackVersion.objects.exists()
    assert not Challenge.objects.exists()
    assert not InputSet.objects.exists()
    assert not AuditEvent.objects.filter(action="pack.published").exists()


def test_it_writes_nothing_new_when_a_second_version_fails_late(workspace, member):
    publish(workspace, member, number=1)
    with mock.patch("packs.services.audit_record", side_effect=RuntimeError("boom")), pytest.raises(RuntimeError):
        publish(workspace, member, number=2)
    assert list(PackVersion.objects.values_list("number", flat=True)) == [1]
    assert Case.objects.count() == 2


def test_it_reports_a_field_too_long_for_the_database_as_a_bundle_error(workspace, member):
    with pytest.raises(services.PackInvalid) as caught:
        publish(workspace, member, name="x" * 300)
    assert caught.value.errors[0]["field"] == "pack.name"
    assert not Pack.objects.exists()


def test_it_refuses_bundles_over_one_mebibyte(workspace, member):
    source = bundle_yaml() + "# " + "x" * (1024 * 1024) + "\n"
    with pytest.raises(services.PackInvalid) as caught:
        services.pack_publish(workspace=workspace, user=member, source=source)
    assert "1 MiB" in caught.value.errors[0]["message"]


def test_a_published_version_is_immutable(workspace, member):
    version = publish(workspace, member)
    version.number = 9
    with pytest.raises(ValidationError):
        version.save()
    version.refresh_from_db()
    assert version.number == 1


def test_it_changes_only_the_lifecycle_of_a_version(workspace, member):
    version = publish(workspace, member)
    services.pack_version_set_lifecycle(version=version, lifecycle_status="deprecated", user=member)
    version.refresh_from_db()
    assert version.lifecycle_status == "deprecated"
    assert AuditEvent.objects.filter(action="pack_version.lifecycle_changed").exists()
    with pytest.raises(DomainError):
        services.pack_version_set_lifecycle(version=version, lifecycle_status="bogus", user=member)


def test_it_changes_the_pack_lifecycle(workspace, member):
    version = publish(workspace, member)
    pack = services.pack_set_lifecycle(pack=version.pack, lifecycle_status="archived", user=member)
    pack.refresh_from_db()
    assert pack.lifecycle_status == "archived"


def test_a_new_version_page_rejects_another_slug(workspace, member):
    version = publish(workspace, member)
    with pytest.raises(services.PackConflict) as caught:
        services.pack_publish(workspace=workspace, user=member, source=bundle_yaml(slug="other", number=2), pack=version.pack)
    assert caught.value.field == "pack.slug"


def test_the_demo_seed_publishes_both_demo_packs_once(workspace, admin):
    notes = demo_seed(workspace=workspace, user=admin)
    assert len(notes) == 2 and all(note.endswith("is ready.") for note in notes)
    assert set(Pack.objects.filter(workspace=workspace).values_list("slug", flat=True)) == {"demo-file-fixes", "demo-prompt-eval"}
    assert demo_seed(workspace=workspace, user=admin) == notes
    assert PackVersion.objects.filter(workspace=workspace).count() == 2


# --- warnings use what this installation's engine supports (packs/installation.py) ------------


def test_warnings_name_the_engine_primitive_a_delegate_was_probably_meant_to_be():
    source = (EXAMPLE_FILES[0].parent / "deep-research-analyst.yaml").read_text()
    warnings = services.warning_dicts(services.bundle_validate(source))
    hidden = [w for w in warnings if w["path"].endswith(".implementation.primitive")]
    assert [w["path"] for w in hidden] == [f"version.tools.custom[{i}].implementation.primitive" for i in range(4)]
    assert hidden[0]["message"] == (
        '"shell_exec" is neither a primitive of this installation (did you mean "exec"?) nor a tool of this pack: '
        'tool "fetch_and_save" is hidden from the model'
    )


@pytest.mark.parametrize(
    ("trigger", "path", "message"),
    [
        ("manual", "trigger", '"manual" never fires in an unattended run: this human phase is always skipped'),
        (
            "on_assistant_mismatch",
            "actor",
            '"human" cannot run on this installation (it runs {actors} actors): runs of this pack are refused',
        ),
    ],
)
def test_warnings_know_which_simulator_actors_the_engine_runs(trigger, path, message):
    source = (EXAMPLE_FILES[0].parent / "multi-turn-refund-recovery.yaml").read_text()
    source = source.replace("trigger: manual", f"trigger: {trigger}")
    warnings = services.warning_dicts(services.bundle_validate(source))
    expected = message.format(actors=", ".join(sorted(SUPPORTED_ACTORS)))
    assert {"path": f"input_sets[0].cases[0].user_simulator.phases[3].{path}", "message": expected} in [
        {"path": w["path"], "message": w["message"]} for w in warnings
    ]


def test_an_invalid_bundle_carries_its_warnings(workspace, member):
    with pytest.raises(services.PackInvalid) as caught:
        services.pack_publish(workspace=workspace, user=member, source=warned_bundle_yaml().replace("difficulty: easy", "difficulty: x"))
    assert [w["path"] for w in caught.value.warnings] == ["version.tools", "version.tools.custom[0].implementation"]
    assert not PackVersion.objects.exists()
