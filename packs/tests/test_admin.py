from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from packs.models import Case, Pack, PackVersion
from packs.tests.factories import bundle_yaml, publish, warned_bundle_yaml
from workspaces.tests.factories import make_user


@pytest.fixture
def staff_client(client, db):
    user = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


def upload(source: str) -> SimpleUploadedFile:
    return SimpleUploadedFile("pack.yaml", source.encode(), content_type="text/yaml")


def test_the_add_form_asks_for_a_workspace_and_a_file(staff_client):
    response = staff_client.get(reverse("admin:packs_packversion_add"))
    assert response.status_code == 200
    assert b'name="yaml_file"' in response.content
    assert b'name="workspace_choice"' in response.content


def test_a_valid_upload_publishes_through_the_service(staff_client, workspace):
    response = staff_client.post(
        reverse("admin:packs_packversion_add"), {"workspace_choice": workspace.pk, "yaml_file": upload(bundle_yaml())}
    )
    assert response.status_code == 302
    version = PackVersion.objects.get()
    assert version.workspace == workspace
    assert version.published_by.username == "root"
    assert Case.objects.filter(pack_version=version).count() == 2


def test_a_valid_upload_with_warnings_publishes_and_shows_them(staff_client, workspace):
    response = staff_client.post(
        reverse("admin:packs_packversion_add"), {"workspace_choice": workspace.pk, "yaml_file": upload(warned_bundle_yaml())}, follow=True
    )
    version = PackVersion.objects.get()
    shown = [(m.level_tag, str(m)) for m in response.context["messages"]]
    assert ("warning", "Warning: version.tools " + version.warnings[0]["message"] + " (line 9)") in shown
    assert ("warning", "Warning: version.tools.custom[0].implementation " + version.warnings[1]["message"] + " (line 12)") in shown
    change = staff_client.get(reverse("admin:packs_packversion_change", args=[version.pk])).content.decode()
    assert "Validation warnings" in change
    assert "Warning: version.tools is read as the pack&#x27;s tools" in change


def test_a_valid_upload_without_warnings_shows_none(staff_client, workspace):
    response = staff_client.post(
        reverse("admin:packs_packversion_add"), {"workspace_choice": workspace.pk, "yaml_file": upload(bundle_yaml())}, follow=True
    )
    assert not [m for m in response.context["messages"] if m.level_tag == "warning"]
    version = PackVersion.objects.get()
    assert "None." in staff_client.get(reverse("admin:packs_packversion_change", args=[version.pk])).content.decode()


def test_an_invalid_upload_shows_field_paths_and_lines(staff_client, workspace):
    source = bundle_yaml().replace("difficulty: easy", "difficulty: trivial")
    response = staff_client.post(reverse("admin:packs_packversion_add"), {"workspace_choice": workspace.pk, "yaml_file": upload(source)})
    assert response.status_code == 200
    line = source.splitlines().index("    difficulty: trivial") + 1
    errors = response.context["adminform"].form.errors["yaml_file"]
    assert any(e.startswith("challenges[0].difficulty") and e.endswith(f"(line {line})") for e in errors)
    assert not Pack.objects.exists()


def test_a_conflicting_upload_is_a_form_error(staff_client, workspace):
    publish(workspace)
    response = staff_client.post(
        reverse("admin:packs_packversion_add"), {"workspace_choice": workspace.pk, "yaml_file": upload(bundle_yaml())}
    )
    assert response.status_code == 200
    assert "challenge_pack_version_exists" in response.context["adminform"].form.errors["yaml_file"][0]
    assert PackVersion.objects.count() == 1


def test_only_the_lifecycle_can_change_after_publish(staff_client, workspace):
    version = publish(workspace)
    change_url = reverse("admin:packs_packversion_change", args=[version.pk])
    response = staff_client.get(change_url)
    form = response.context["adminform"].form
    assert list(form.fields) == ["lifecycle_status"]

    data = {"lifecycle_status": "deprecated", "number": 9, "raw_yaml": "x", "execution_mode": "native"}
    for inline in response.context["inline_admin_formsets"]:
        management = inline.formset.management_form
        data.update({f"{management.prefix}-{name}": value for name, value in management.initial.items()})
        for index, form in enumerate(inline.formset.forms):
            data[f"{inline.formset.prefix}-{index}-id"] = form.instance.pk
            data[f"{inline.formset.prefix}-{index}-pack_version"] = version.pk
    response = staff_client.post(change_url, data)
    assert response.status_code == 302
    version.refresh_from_db()
    assert (version.lifecycle_status, version.number, version.execution_mode) == ("deprecated", 1, "prompt_eval")
    assert version.raw_yaml == bundle_yaml()


def test_published_history_cannot_be_edited_or_deleted(staff_client, workspace):
    version = publish(workspace)
    case = version.cases.first()
    assert staff_client.get(reverse("admin:packs_case_change", args=[case.pk])).status_code == 200  # view only
    response = staff_client.post(reverse("admin:packs_case_change", args=[case.pk]), {"case_key": "changed"})
    assert response.status_code == 403
    assert staff_client.post(reverse("admin:packs_packversion_delete", args=[version.pk]), {"post": "yes"}).status_code == 403
    assert PackVersion.objects.filter(pk=version.pk).exists()
    for name in ("pack", "packversion", "challenge", "inputset", "case"):
        assert staff_client.get(reverse(f"admin:packs_{name}_changelist")).status_code == 200
