"""The per-process manifest cache: one read per pack version, and never a stale one."""

from __future__ import annotations

from typing import Any

import pytest

from packs.manifests import pack_manifest, pack_manifest_cache_clear
from packs.models import PackVersion
from packs.tests.factories import publish

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    pack_manifest_cache_clear()
    yield
    pack_manifest_cache_clear()


def test_a_version_is_read_once_and_then_served_from_memory(workspace, admin, django_assert_num_queries):
    version = publish(workspace, admin, cases=2)
    with django_assert_num_queries(1):
        first = pack_manifest(pack_version_id=version.pk, checksum=version.manifest_checksum)
    with django_assert_num_queries(0):
        again = pack_manifest(pack_version_id=version.pk, checksum=version.manifest_checksum)
    assert again is first
    manifest: dict[str, Any] = first.manifest  # read as the test wrote it
    assert manifest["pack"]["slug"] == "tiny" and first.evaluation_spec["name"] == "tiny"
    assert first.case("default", "case-1") == next(c for c in manifest["input_sets"][0]["cases"] if c.get("case_key") == "case-1")


def test_without_a_checksum_it_asks_the_database_for_one(workspace, admin, django_assert_num_queries):
    version = publish(workspace, admin, cases=1)
    pack_manifest(pack_version_id=version.pk, checksum=version.manifest_checksum)
    with django_assert_num_queries(1):
        assert pack_manifest(pack_version_id=version.pk).manifest == version.manifest


def test_a_reused_primary_key_with_other_content_is_read_again(workspace, admin):
    # A recreated database can hand out the same id again; the checksum tells the versions apart.
    version = publish(workspace, admin, cases=1)
    stale = pack_manifest(pack_version_id=version.pk, checksum=version.manifest_checksum)
    changed = {**version.manifest, "evaluation_spec": {"name": "another"}}
    PackVersion.objects.filter(pk=version.pk).update(manifest=changed, manifest_checksum="0" * 64)
    fresh = pack_manifest(pack_version_id=version.pk, checksum="0" * 64)
    assert fresh is not stale and fresh.evaluation_spec == {"name": "another"}


def test_the_cache_keeps_the_versions_used_last_within_its_case_budget(workspace, admin, monkeypatch, django_assert_num_queries):
    from packs import manifests

    monkeypatch.setattr(manifests, "MAX_CASES", 5)
    a, b, c = (publish(workspace, admin, slug=f"pack-{n}", cases=2) for n in "abc")
    first_a = pack_manifest(pack_version_id=a.pk, checksum=a.manifest_checksum)
    pack_manifest(pack_version_id=b.pk, checksum=b.manifest_checksum)
    pack_manifest(pack_version_id=a.pk, checksum=a.manifest_checksum)  # a used last: b is the oldest
    pack_manifest(pack_version_id=c.pk, checksum=c.manifest_checksum)  # 6 cases > 5: b goes
    with django_assert_num_queries(0):
        assert pack_manifest(pack_version_id=a.pk, checksum=a.manifest_checksum) is first_a
        pack_manifest(pack_version_id=c.pk, checksum=c.manifest_checksum)
    with django_assert_num_queries(1):
        assert pack_manifest(pack_version_id=b.pk, checksum=b.manifest_checksum).manifest == b.manifest


def test_a_version_larger_than_the_budget_is_still_kept(workspace, admin, monkeypatch, django_assert_num_queries):
    from packs import manifests

    monkeypatch.setattr(manifests, "MAX_CASES", 1)
    version = publish(workspace, admin, cases=3)
    first = pack_manifest(pack_version_id=version.pk, checksum=version.manifest_checksum)
    with django_assert_num_queries(0):
        assert pack_manifest(pack_version_id=version.pk, checksum=version.manifest_checksum) is first
