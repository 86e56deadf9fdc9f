from __future__ import annotations

import pytest
from django.urls import reverse

from packs.models import Pack, PackVersion
from packs.tests.factories import COMPOSED_TOOLS, CORPUS_FILES, LIBRARY_FILES, bundle_yaml, publish, warned_bundle_yaml
from secrets_app.models import WorkspaceSecret


def url(name, *args, ws="acme"):
    return reverse(f"packs:{name}", args=[ws, *args])


@pytest.fixture
def version(workspace, member):
    return publish(workspace, member, source=bundle_yaml(tools=COMPOSED_TOOLS))


# --- list -------------------------------------------------------------------------------------


def test_the_empty_list_says_what_to_do_next(client_for, member):
    response = client_for(member).get(url("list"))
    assert response.status_code == 200
    assert b"No packs in this workspace yet" in response.content
    assert url("new").encode() in response.content
    assert url("library").encode() in response.content


def test_the_list_shows_latest_version_mode_and_count(client_for, viewer, workspace, member):
    publish(workspace, member, number=1)
    v2 = publish(workspace, member, number=2)
    response = client_for(viewer).get(url("list"))
    page = response.content.decode()
    assert "Tiny pack" in page and "reasoning" in page and "prompt_eval" in page
    assert f'href="{url("version", v2.pk)}">v2</a>' in page
    assert '<td class="num">2</td>' in page
    assert url("new") not in page  # viewers read only


def test_the_pack_list_query_count_does_not_grow_with_packs(client_for, viewer, workspace, member, django_assert_num_queries):
    for i in range(3):
        publish(workspace, member, slug=f"p{i}", number=1)
        publish(workspace, member, slug=f"p{i}", number=2)
    client = client_for(viewer)
    client.get(url("list"))  # warm the session
    # session, user, membership, memberships for navigation, the annotated pack list
    with django_assert_num_queries(5):
        response = client.get(url("list"))
    assert response.content.decode().count('class="num">2</td>') == 3
    for i in range(3, 8):
        publish(workspace, member, slug=f"p{i}")
    with django_assert_num_queries(5):
        client.get(url("list"))


# --- detail and version -----------------------------------------------------------------------


def test_the_pack_page_lists_versions(client_for, viewer, version):
    response = client_for(viewer).get(url("detail", version.pack_id))
    assert response.status_code == 200
    assert url("version", version.pk).encode() in response.content
    assert url("version_yaml", version.pk).encode() in response.content


def test_the_version_page_explains_the_pack(client_for, viewer, version, workspace):
    WorkspaceSecret.objects.create(workspace=workspace, key="UNRELATED", ciphertext=b"x", key_id="k")
    page = client_for(viewer).get(url("version", version.pk)).content.decode()
    for text in [
        "Add two numbers",
        "case-0",
        "case-1",
        "lookup_weather",
        "http_request",
        "city",
        "exact_match",
        "correctness",
        "Start a run",
    ]:
        assert text in page, text
    assert f"/w/acme/runs/new/?pack_version={version.pk}" in page
    assert "WEATHER_API_KEY" in page
    assert "Missing" in page
    assert 'name="lifecycle_status"' not in page  # viewer


def test_the_version_page_says_a_referenced_secret_is_set_without_its_value(client_for, viewer, version, workspace):
    WorkspaceSecret.objects.create(workspace=workspace, key="WEATHER_API_KEY", ciphertext=b"very-secret-ciphertext", key_id="k")
    page = client_for(viewer).get(url("version", version.pk)).content.decode()
    assert 'badge-ok">Set' in page
    assert "very-secret-ciphertext" not in page


def test_the_cases_partial_pages_through_cases_for_htmx(client_for, viewer, workspace, member):
    version = publish(workspace, member, cases=30)
    input_set = version.input_sets.get()
    response = client_for(viewer).get(
        url("version", version.pk), {"input_set": input_set.pk, "page": 2}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="cases"
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="cases">')
    assert "case-29" in page and "case-0<" not in page
    assert "Page 2 of 2" in page


def test_it_downloads_the_raw_yaml(client_for, viewer, version):
    response = client_for(viewer).get(url("version_yaml", version.pk))
    assert response.status_code == 200
    assert response.content.decode() == version.raw_yaml
    assert 'filename="tiny-v1.yaml"' in response["Content-Disposition"]


def test_members_change_a_version_lifecycle(client_for, member, version):
    response = client_for(member).post(url("version_lifecycle", version.pk), {"lifecycle_status": "archived"})
    assert response.status_code == 302
    version.refresh_from_db()
    assert version.lifecycle_status == "archived"


def test_the_lifecycle_redirect_stays_on_this_site(client_for, member, version):
    response = client_for(member).post(
        url("version_lifecycle", version.pk), {"lifecycle_status": "archived", "next": "https://evil.example/"}
    )
    assert response["Location"] == url("version", version.pk)


def test_members_change_a_pack_lifecycle(client_for, member, version):
    client_for(member).post(url("lifecycle", version.pack_id), {"lifecycle_status": "deprecated"})
    assert Pack.objects.get().lifecycle_status == "deprecated"


# --- editor -----------------------------------------------------------------------------------


def test_validate_returns_the_errors_partial_with_lines(client_for, member):
    source = bundle_yaml().replace("difficulty: easy", "difficulty: trivial")
    response = client_for(member).post(url("new"), {"yaml": source, "action": "validate"}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="editor-result"')
    line = source.splitlines().index("    difficulty: trivial") + 1
    assert f'data-line="{line}"' in page
    assert "challenges[0].difficulty" in page
    assert "disabled" in page.split('id="publish-button"')[1].split(">")[0]
    assert not Pack.objects.exists()


def test_validate_says_when_there_is_nothing_to_validate(client_for, member):
    response = client_for(member).post(url("new"), {"yaml": "  ", "action": "validate"}, HTTP_HX_REQUEST="true")
    assert b"Paste a pack bundle" in response.content


def test_validate_enables_publish_for_a_valid_bundle(client_for, member):
    response = client_for(member).post(url("new"), {"yaml": bundle_yaml(), "action": "validate"}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert "Ready to publish" in page
    assert "disabled" not in page.split('id="publish-button"')[1].split(">")[0]


def test_validate_lists_warnings_with_lines_and_still_enables_publish(client_for, member):
    response = client_for(member).post(url("new"), {"yaml": warned_bundle_yaml(), "action": "validate"}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert "Ready to publish" in page
    assert "disabled" not in page.split('id="publish-button"')[1].split(">")[0]
    warnings = page.split('id="editor-warnings"')[1]
    assert "2 warnings" in warnings
    assert 'data-line="9"' in warnings and "<code>version.tools</code> is read as the pack&#x27;s tools" in warnings
    assert 'data-line="12"' in warnings and "mock tool &quot;ping&quot; has no response" in warnings
    assert 'data-warning-lines="9,12"' in page
    assert not Pack.objects.exists()


def test_validate_shows_warnings_beside_the_errors_of_an_invalid_bundle(client_for, member):
    source = warned_bundle_yaml().replace("difficulty: easy", "difficulty: trivial")
    response = client_for(member).post(url("new"), {"yaml": source, "action": "validate"}, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    assert "challenges[0].difficulty" in page.split('id="editor-warnings"')[0]
    assert "<code>version.tools</code>" in page.split('id="editor-warnings"')[1]


def test_a_bundle_without_warnings_shows_no_warnings_section(client_for, member):
    response = client_for(member).post(url("new"), {"yaml": bundle_yaml(), "action": "validate"}, HTTP_HX_REQUEST="true")
    assert b'id="editor-warnings"' not in response.content
    assert b'data-warning-lines=""' in response.content


def test_publish_keeps_the_warnings_on_the_version_and_its_page_shows_them(client_for, member):
    client = client_for(member)
    response = client.post(url("new"), {"yaml": warned_bundle_yaml(), "action": "publish"}, follow=True)
    version = PackVersion.objects.get()
    assert [(w["path"], w["line"]) for w in version.warnings] == [("version.tools", 9), ("version.tools.custom[0].implementation", 12)]
    assert all(set(w) == {"path", "message", "line"} for w in version.warnings)
    assert "Published Tiny pack version 1 with 2 warnings (listed on this page)." in [str(m) for m in response.context["messages"]]
    section = response.content.decode().split('id="warnings"')[1].split("</section>")[0]
    assert "line 9" in section and "<code>version.tools</code> is read as the pack&#x27;s tools" in section
    assert "line 12" in section and "mock tool &quot;ping&quot; has no response" in section
    # The tools the author put under version: are the version's tools.
    assert "ping" in response.content.decode().split("<h2>Composed tools</h2>")[1]


def test_the_version_page_says_when_there_are_no_warnings(client_for, viewer, workspace, member):
    version = publish(workspace, member)
    assert version.warnings == []
    page = client_for(viewer).get(url("version", version.pk)).content.decode()
    assert "None: validation found nothing questionable" in page.split('id="warnings"')[1]


def test_the_version_page_says_when_warnings_were_not_recorded(client_for, viewer, workspace, member):
    version = publish(workspace, member)
    PackVersion.objects.filter(pk=version.pk).update(warnings=None)  # published before warnings existed
    page = client_for(viewer).get(url("version", version.pk)).content.decode()
    assert "published before validation warnings were recorded" in page.split('id="warnings"')[1]


def test_validate_shows_a_conflict_before_publishing(client_for, member, workspace):
    publish(workspace, member)
    response = client_for(member).post(url("new"), {"yaml": bundle_yaml(), "action": "validate"}, HTTP_HX_REQUEST="true")
    assert b"already published" in response.content


def test_publish_redirects_to_the_version_page(client_for, member):
    response = client_for(member).post(url("new"), {"yaml": bundle_yaml(), "action": "publish"})
    version = PackVersion.objects.get()
    assert response.status_code == 302
    assert response["Location"] == url("version", version.pk)
    assert version.published_by == member


def test_publish_shows_conflicts_as_errors(client_for, member, workspace):
    publish(workspace, member)
    response = client_for(member).post(url("new"), {"yaml": bundle_yaml(name="Other name", number=2), "action": "publish"})
    assert response.status_code == 200
    assert b"pack.name" in response.content and b"already exists" in response.content
    assert PackVersion.objects.count() == 1


def test_publish_accepts_an_uploaded_file(client_for, member):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("pack.yaml", bundle_yaml().encode(), content_type="text/yaml")
    response = client_for(member).post(url("new"), {"yaml": "", "file": upload, "action": "publish"})
    assert response.status_code == 302
    assert PackVersion.objects.count() == 1


def test_the_new_version_page_starts_from_the_latest_yaml(client_for, member, version):
    response = client_for(member).get(url("version_new", version.pack_id))
    assert b"lookup_weather" in response.content
    response = client_for(member).post(url("version_new", version.pack_id), {"yaml": bundle_yaml(slug="x", number=2), "action": "publish"})
    assert response.status_code == 200
    assert b"pack.slug" in response.content
    assert PackVersion.objects.count() == 1


# --- library ----------------------------------------------------------------------------------


def test_the_library_lists_the_twelve_packs_with_the_licence(client_for, viewer):
    page = client_for(viewer).get(url("library")).content.decode()
    assert page.count('class="card" id="library-') == len(LIBRARY_FILES) == 12
    assert "SWE Bug Fix" in page and "MIT" in page and "Permission is hereby granted" in page
    assert "Add to workspace" not in page  # viewer


def test_adding_a_library_pack_publishes_it_once(client_for, member):
    client = client_for(member)
    response = client.post(url("library_add", "swe-bug-fix"))
    version = PackVersion.objects.get()
    assert response["Location"] == url("version", version.pk)
    assert version.pack.slug == "swe-bug-fix"

    response = client.post(url("library_add", "swe-bug-fix"), follow=True)
    assert b"already in this workspace" in response.content
    assert PackVersion.objects.count() == 1
    page = client.get(url("library")).content.decode()
    assert "Already in this workspace" in page


# --- three personas on every page -------------------------------------------------------------

READ_PAGES = [("list", ()), ("library", ()), ("detail", ("pack",)), ("version", ("version",)), ("version_yaml", ("version",))]
MEMBER_GETS = [("new", ()), ("version_new", ("pack",))]
MEMBER_POSTS = [
    ("version_lifecycle", ("version",), {"lifecycle_status": "deprecated"}),
    ("lifecycle", ("pack",), {"lifecycle_status": "deprecated"}),
    ("library_add", ("slug",), {}),
    ("new", (), {"yaml": bundle_yaml(slug="other"), "action": "publish"}),
]


def _args(version, names):
    values = {"pack": version.pack_id, "version": version.pk, "slug": "swe-bug-fix"}
    return [values[n] for n in names]


@pytest.mark.parametrize(("name", "arg_names"), READ_PAGES)
def test_viewers_read_pages_and_strangers_get_404(name, arg_names, client_for, viewer, stranger, version):
    target = url(name, *_args(version, arg_names))
    assert client_for(viewer).get(target).status_code == 200
    assert client_for(stranger).get(target).status_code == 404


@pytest.mark.parametrize(("name", "arg_names"), [p for p in READ_PAGES if p[1]])
def test_ids_of_another_workspace_are_404_under_the_strangers_own(name, arg_names, client_for, stranger, version, other_workspace):
    assert client_for(stranger).get(url(name, *_args(version, arg_names), ws="globex")).status_code == 404


@pytest.mark.parametrize(("name", "arg_names"), MEMBER_GETS)
def test_the_editor_is_for_members(name, arg_names, client_for, member, viewer, stranger, version):
    target = url(name, *_args(version, arg_names))
    assert client_for(member).get(target).status_code == 200
    assert client_for(viewer).get(target).status_code == 403
    assert client_for(stranger).get(target).status_code == 404


@pytest.mark.parametrize(("name", "arg_names", "data"), MEMBER_POSTS, ids=[p[0] for p in MEMBER_POSTS])
def test_writes_are_for_members(name, arg_names, data, client_for, member, viewer, stranger, version):
    target = url(name, *_args(version, arg_names))
    before = (PackVersion.objects.count(), version.lifecycle_status, version.pack.lifecycle_status)
    assert client_for(stranger).post(target, data).status_code == 404
    assert client_for(viewer).post(target, data).status_code == 403
    version.refresh_from_db()
    assert (PackVersion.objects.count(), version.lifecycle_status, version.pack.lifecycle_status) == before
    assert client_for(member).post(target, data).status_code == 302


def test_anonymous_visitors_are_sent_to_login(client, version):
    response = client.get(url("list"))
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_every_corpus_pack_has_a_readable_version_page(path, client_for, viewer, workspace, member):
    version = publish(workspace, member, source=path.read_text())
    response = client_for(viewer).get(url("version", version.pk))
    assert response.status_code == 200
    for challenge in version.challenges.all():
        assert challenge.key in response.content.decode()
