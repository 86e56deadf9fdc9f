from __future__ import annotations

import json

import pytest

from engine.scoring import aggregate_lane
from packs.manifests import pack_manifest, pack_manifest_cache_clear
from packs.models import Case, Pack, PackVersion
from packs.tests.factories import CORPUS_FILES, EXAMPLE_FILES, bundle_yaml, publish, warned_bundle_yaml

BASE = "/api/v1/workspaces/acme"


def post_yaml(client, url, source, content_type="text/yaml"):
    return client.generic("POST", url, source.encode(), content_type=content_type)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_it_publishes_every_catalog_and_valid_example_pack_over_the_api(path, api_client_for, member):
    client = api_client_for(member)
    response = post_yaml(client, f"{BASE}/packs/publish", path.read_text())
    assert response.status_code == 201, response.content
    body = response.json()
    version = PackVersion.objects.get(pk=body["pack_version_id"])
    assert body["pack_id"] == body["challenge_pack_id"] == version.pack_id
    assert body["challenge_pack_version_id"] == version.pk
    assert body["evaluation_spec_id"] == version.evaluation_spec_id
    assert body["pack_slug"] == version.pack.slug
    assert body["version_number"] == version.number
    assert body["manifest_checksum"] == version.manifest_checksum
    assert sorted(body["input_set_ids"]) == sorted(version.input_sets.values_list("pk", flat=True))


def test_the_evaluation_spec_id_is_what_scorecards_and_comparisons_match_on(api_client_for, member, workspace):
    client = api_client_for(member)
    first = post_yaml(client, f"{BASE}/packs/publish", bundle_yaml(number=1)).json()
    same_spec = post_yaml(client, f"{BASE}/packs/publish", bundle_yaml(number=2, cases=5)).json()
    other_spec = post_yaml(client, f"{BASE}/packs/publish", bundle_yaml(number=3).replace("name: tiny", "name: tiny-v2")).json()
    pack_manifest_cache_clear()
    spec = pack_manifest(pack_version_id=first["challenge_pack_version_id"]).evaluation_spec  # as the scorer reads it
    assert first["evaluation_spec_id"] == aggregate_lane(spec, [])["refs"]["evaluation_spec_fingerprint"]
    assert len(first["evaluation_spec_id"]) == 64
    assert same_spec["evaluation_spec_id"] == first["evaluation_spec_id"]  # other cases, same spec
    assert other_spec["evaluation_spec_id"] != first["evaluation_spec_id"]
    assert client.get(f"{BASE}/pack-versions/{first['pack_version_id']}").json()["evaluation_spec_id"] == first["evaluation_spec_id"]


def test_it_validates_yaml_sent_as_text(api_client_for, member):
    response = post_yaml(api_client_for(member), f"{BASE}/packs/validate", bundle_yaml())
    assert response.status_code == 200
    assert response.json()["valid"] is True
    assert len(response.json()["manifest_checksum"]) == 64
    assert not Pack.objects.exists()


@pytest.mark.parametrize("content_type", ["application/x-yaml", "application/yaml"])
def test_it_accepts_the_other_yaml_media_types(api_client_for, member, content_type):
    response = post_yaml(api_client_for(member), f"{BASE}/packs/validate", bundle_yaml(), content_type)
    assert response.status_code == 200


def test_it_validates_yaml_sent_as_json(api_client_for, member):
    response = api_client_for(member).post(f"{BASE}/packs/validate", {"yaml": bundle_yaml()}, format="json")
    assert response.status_code == 200
    assert response.json()["valid"] is True


def test_it_answers_400_with_errors_and_lines_for_an_invalid_bundle(api_client_for, member):
    source = bundle_yaml().replace("difficulty: easy", "difficulty: trivial")
    response = post_yaml(api_client_for(member), f"{BASE}/packs/validate", source)
    assert response.status_code == 400
    body = response.json()
    assert body["valid"] is False
    assert body["error"]["code"] == "challenge_pack_invalid"
    error = next(e for e in body["errors"] if e["field"] == "challenges[0].difficulty")
    assert error["line"] == source.splitlines().index("    difficulty: trivial") + 1


def test_validate_lists_warnings_for_a_valid_bundle(api_client_for, member):
    response = post_yaml(api_client_for(member), f"{BASE}/packs/validate", warned_bundle_yaml())
    assert response.status_code == 200
    warnings = response.json()["warnings"]
    assert [(w["path"], w["line"]) for w in warnings] == [("version.tools", 9), ("version.tools.custom[0].implementation", 12)]
    assert warnings[1]["message"].startswith('mock tool "ping" has no response')
    assert post_yaml(api_client_for(member), f"{BASE}/packs/validate", bundle_yaml()).json()["warnings"] == []


def test_validate_lists_warnings_beside_the_errors_of_an_invalid_bundle(api_client_for, member):
    source = warned_bundle_yaml().replace("difficulty: easy", "difficulty: trivial")
    body = post_yaml(api_client_for(member), f"{BASE}/packs/validate", source).json()
    assert body["valid"] is False
    assert [w["path"] for w in body["warnings"]] == ["version.tools", "version.tools.custom[0].implementation"]


def test_publish_returns_and_keeps_the_warnings(api_client_for, member):
    client = api_client_for(member)
    body = post_yaml(client, f"{BASE}/packs/publish", warned_bundle_yaml()).json()
    assert [w["path"] for w in body["warnings"]] == ["version.tools", "version.tools.custom[0].implementation"]
    detail = client.get(f"{BASE}/pack-versions/{body['pack_version_id']}").json()
    assert detail["warnings"] == body["warnings"]
    assert detail["manifest"]["tools"]["custom"][0]["name"] == "ping"


def test_it_answers_400_not_500_for_a_yaml_syntax_error(api_client_for, member):
    response = post_yaml(api_client_for(member), f"{BASE}/packs/validate", (EXAMPLE_FILES[0].parent / "cli-smoke-ruff.yaml").read_text())
    assert response.status_code == 400
    assert response.json()["errors"][0]["line"] == 5


def test_it_requires_a_body(api_client_for, member):
    response = post_yaml(api_client_for(member), f"{BASE}/packs/validate", "")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "request body is required"


def test_it_rejects_bodies_over_one_mebibyte(api_client_for, member):
    source = bundle_yaml() + "#" + "x" * (1024 * 1024) + "\n"
    for url in ("validate", "publish"):
        response = post_yaml(api_client_for(member), f"{BASE}/packs/{url}", source)
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "payload_too_large"
    assert not Pack.objects.exists()


def test_it_answers_409_for_an_existing_version(api_client_for, member, workspace):
    publish(workspace, member)
    response = post_yaml(api_client_for(member), f"{BASE}/packs/publish", bundle_yaml())
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "challenge_pack_version_exists"
    assert PackVersion.objects.count() == 1


def test_it_answers_409_for_conflicting_metadata(api_client_for, member, workspace):
    publish(workspace, member)
    response = post_yaml(api_client_for(member), f"{BASE}/packs/publish", bundle_yaml(number=2, family="coding"))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "challenge_pack_metadata_conflict"


def test_publish_answers_400_for_an_invalid_bundle(api_client_for, member):
    response = api_client_for(member).post(f"{BASE}/packs/publish", {"yaml": "pack: {}\n"}, format="json")
    assert response.status_code == 400
    assert response.json()["valid"] is False
    assert not Pack.objects.exists()


def test_it_lists_and_reads_packs_versions_input_sets_and_cases(api_client_for, viewer, workspace, member):
    v1 = publish(workspace, member, number=1)
    publish(workspace, member, number=2, cases=3)
    client = api_client_for(viewer)

    packs = client.get(f"{BASE}/packs").json()
    assert packs["count"] == 1
    assert packs["results"][0]["versions_count"] == 2
    assert packs["results"][0]["latest_version_number"] == 2

    pack = client.get(f"{BASE}/packs/{v1.pack_id}").json()
    assert pack["slug"] == "tiny"

    versions = client.get(f"{BASE}/packs/{v1.pack_id}/versions").json()["results"]
    assert [v["number"] for v in versions] == [2, 1]
    assert versions[0]["cases_count"] == 3

    detail = client.get(f"{BASE}/pack-versions/{v1.pk}").json()
    assert detail["manifest"]["pack"]["slug"] == "tiny"

    input_sets = client.get(f"{BASE}/pack-versions/{v1.pk}/input-sets").json()["results"]
    assert input_sets[0]["cases_count"] == 2

    cases = client.get(f"{BASE}/input-sets/{input_sets[0]['id']}/cases").json()["results"]
    assert [c["case_key"] for c in cases] == ["case-0", "case-1"]
    assert cases[0]["payload"]["payload"] == {"a": 0, "b": 1}


def test_it_changes_the_lifecycle_and_nothing_else(api_client_for, member, workspace):
    version = publish(workspace, member)
    client = api_client_for(member)
    response = client.patch(f"{BASE}/pack-versions/{version.pk}", {"lifecycle_status": "deprecated"}, format="json")
    assert response.status_code == 200
    version.refresh_from_db()
    assert version.lifecycle_status == "deprecated"

    response = client.patch(f"{BASE}/pack-versions/{version.pk}", {"lifecycle_status": "runnable", "number": 7}, format="json")
    assert response.status_code == 400
    version.refresh_from_db()
    assert (version.number, version.lifecycle_status) == (1, "deprecated")

    response = client.patch(f"{BASE}/pack-versions/{version.pk}", {"lifecycle_status": "gone"}, format="json")
    assert response.status_code == 400


# --- three personas on every endpoint ---------------------------------------------------------

READS = [
    "packs",
    "packs/{pack}",
    "packs/{pack}/versions",
    "pack-versions/{version}",
    "pack-versions/{version}/input-sets",
    "input-sets/{input_set}/cases",
]


@pytest.fixture
def published(workspace, member):
    version = publish(workspace, member)
    return {"pack": version.pack_id, "version": version.pk, "input_set": version.input_sets.get().pk}


@pytest.mark.parametrize("path", READS)
def test_viewers_read_and_strangers_get_404(path, published, api_client_for, viewer, stranger):
    url = f"{BASE}/{path.format(**published)}"
    assert api_client_for(viewer).get(url).status_code == 200
    response = api_client_for(stranger).get(url)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("path", READS[1:])
def test_ids_of_another_workspace_are_404(path, published, api_client_for, stranger, other_workspace):
    # The stranger is admin of globex; acme's ids must not resolve under globex either.
    url = f"/api/v1/workspaces/globex/{path.format(**published)}"
    assert api_client_for(stranger).get(url).status_code == 404


WRITES = [
    ("post", "packs/validate", lambda p: bundle_yaml(slug="other")),
    ("post", "packs/publish", lambda p: bundle_yaml(slug="other")),
    ("patch", "pack-versions/{version}", lambda p: json.dumps({"lifecycle_status": "deprecated"})),
]


@pytest.mark.parametrize(("method", "path", "body"), WRITES, ids=[w[1] for w in WRITES])
def test_members_write_viewers_get_403_and_strangers_404(method, path, body, published, api_client_for, member, viewer, stranger):
    url = f"{BASE}/{path.format(**published)}"
    content_type = "application/json" if method == "patch" else "text/yaml"

    def call(user):
        return api_client_for(user).generic(method.upper(), url, body(published).encode(), content_type=content_type)

    assert call(stranger).status_code == 404
    assert call(viewer).status_code == 403
    assert call(member).status_code in (200, 201)
    assert Case.objects.count() == (4 if path == "packs/publish" else 2)


def test_anonymous_callers_are_401(client, published):
    assert client.get(f"{BASE}/packs").status_code in (401, 403)


def test_the_pack_list_api_query_count_does_not_grow_with_packs(api_client_for, viewer, workspace, member, django_assert_num_queries):
    for i in range(2):
        publish(workspace, member, slug=f"p{i}")
    client = api_client_for(viewer)
    # membership, count, the annotated page
    with django_assert_num_queries(3):
        assert client.get(f"{BASE}/packs").json()["count"] == 2
    for i in range(2, 7):
        publish(workspace, member, slug=f"p{i}", number=2)
    with django_assert_num_queries(3):
        assert client.get(f"{BASE}/packs").json()["count"] == 7
