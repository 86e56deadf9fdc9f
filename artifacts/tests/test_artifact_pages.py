"""Artifact pages: list (everyone), upload (members), download (everyone); strangers get 404."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from artifacts.models import Artifact
from artifacts.tests.factories import PNG, make_artifact

pytestmark = pytest.mark.django_db

LIST = "/w/acme/artifacts/"
UPLOAD = "/w/acme/artifacts/upload/"


def test_a_viewer_sees_the_list_without_the_upload_form(client_for, viewer, workspace):
    make_artifact(workspace, name="notes.txt")
    response = client_for(viewer).get(LIST)
    assert response.status_code == 200
    html = response.content.decode()
    assert "notes.txt" in html
    assert 'id="artifact-upload"' not in html


def test_an_empty_workspace_says_what_to_do(client_for, member):
    html = client_for(member).get(LIST).content.decode()
    assert "No artifacts yet." in html
    assert 'id="artifact-upload"' in html


def test_a_member_uploads_from_the_page(client_for, member, workspace):
    client = client_for(member)
    response = client.post(UPLOAD, {"file": SimpleUploadedFile("chart.png", PNG, content_type="text/plain")})
    assert response.status_code == 302
    artifact = Artifact.objects.get(workspace=workspace)
    assert (artifact.name, artifact.content_type) == ("chart.png", "image/png")
    assert "Uploaded chart.png (image/png)." in client.get(LIST).content.decode()


def test_a_refused_upload_says_why_next_to_the_field(client_for, member):
    response = client_for(member).post(UPLOAD, {"file": SimpleUploadedFile("page.html", b"<p>", content_type="text/plain")})
    assert response.status_code == 400
    assert "Not stored: .html files are not accepted" in response.content.decode()
    assert not Artifact.objects.exists()


def test_a_too_large_upload_is_refused(client_for, member, settings):
    settings.ARTIFACT_MAX_BYTES = 10
    response = client_for(member).post(UPLOAD, {"file": SimpleUploadedFile("big.txt", b"x" * 100_000)})
    assert response.status_code == 413
    assert "larger than the limit" in response.content.decode()


def test_a_viewer_cannot_upload(client_for, viewer):
    response = client_for(viewer).post(UPLOAD, {"file": SimpleUploadedFile("a.txt", b"x")})
    assert response.status_code == 403
    assert not Artifact.objects.exists()


def test_a_stranger_gets_404(client_for, stranger, workspace):
    artifact = make_artifact(workspace)
    client = client_for(stranger)
    assert client.get(LIST).status_code == 404
    assert client.post(UPLOAD, {"file": SimpleUploadedFile("a.txt", b"x")}).status_code == 404
    assert client.get(f"{LIST}{artifact.pk}/download/").status_code == 404


def test_downloads_are_attachments_checked_against_the_workspace(client_for, viewer, workspace, other_workspace):
    mine = make_artifact(workspace, data=b"mine\n", name="mine.txt")
    theirs = make_artifact(other_workspace, data=b"theirs\n", name="theirs.txt")
    client = client_for(viewer)
    response = client.get(f"{LIST}{mine.pk}/download/")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="mine.txt"'
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert b"".join(response.streaming_content) == b"mine\n"
    assert client.get(f"{LIST}{theirs.pk}/download/").status_code == 404


def test_the_kind_filter_narrows_the_list(client_for, viewer, workspace):
    make_artifact(workspace, name="upload.txt")
    make_artifact(workspace, name="report.md", kind="report")
    html = client_for(viewer).get(LIST, {"kind": "report"}).content.decode()
    assert "report.md" in html
    assert "upload.txt" not in html


def test_the_list_page_takes_a_fixed_number_of_queries(client_for, viewer, workspace, django_assert_max_num_queries):
    for i in range(3):
        make_artifact(workspace, name=f"f{i}.txt")
    client = client_for(viewer)
    client.get(LIST)
    with django_assert_max_num_queries(12):
        first = client.get(LIST)
    for i in range(10):
        make_artifact(workspace, name=f"g{i}.txt")
    with django_assert_max_num_queries(12) as ctx:
        second = client.get(LIST)
    assert first.status_code == second.status_code == 200
    assert len(ctx.captured_queries) <= 12
