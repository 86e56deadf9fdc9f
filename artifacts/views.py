"""Artifact pages: the workspace's files (everyone), upload (members), download (everyone)."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import FileResponse, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from artifacts import selectors, services
from artifacts.content import ALLOWED_CONTENT_TYPES, ContentRefused
from artifacts.downloads import download_response
from artifacts.forms import ArtifactFilterForm, ArtifactUploadForm
from workspaces.access import WorkspaceRequest, can, workspace_view
from workspaces.models import Role

PER_PAGE = 50
_MULTIPART_SLACK = 64 * 1024


def _list_page(request: WorkspaceRequest, form: ArtifactUploadForm, *, status: int = 200, upload_error: str = "") -> HttpResponse:
    filters = ArtifactFilterForm(request.GET or None)
    kind = filters.cleaned_data["kind"] if filters.is_valid() else ""
    page = Paginator(selectors.artifact_list(workspace=request.workspace, kind=kind), PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "filters": filters,
        "kind": kind,
        "form": form,
        "can_upload": can(request.membership, Role.MEMBER),
        "max_bytes": services.max_bytes(),
        "allowed_types": ALLOWED_CONTENT_TYPES,
        "upload_error": upload_error,
    }
    return render(request, "artifacts/artifact_list.html", context, status=status)


@workspace_view()
@require_GET
def artifact_list(request: WorkspaceRequest) -> HttpResponse:
    return _list_page(request, ArtifactUploadForm())


@workspace_view(Role.MEMBER)
@require_http_methods(["GET", "POST"])
def artifact_upload(request: WorkspaceRequest) -> HttpResponse:
    if request.method == "GET":
        return redirect("artifacts:list", request.workspace.slug)
    limit = services.max_bytes()
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > limit + _MULTIPART_SLACK:
        return _list_page(request, ArtifactUploadForm(), status=413, upload_error=f"The file is larger than the limit of {limit} bytes.")
    form = ArtifactUploadForm(request.POST, request.FILES)
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            artifact = services.artifact_create(workspace=request.workspace, user=request.user, stream=upload, name=upload.name or "")
        except ContentRefused as exc:
            form.add_error("file", f"Not stored: {exc.message}.")
        else:
            messages.success(request, f"Uploaded {artifact.name} ({artifact.content_type}).")
            return redirect("artifacts:list", request.workspace.slug)
    return _list_page(request, form, status=400)


@workspace_view()
@require_GET
def artifact_download(request: WorkspaceRequest, artifact_id: str) -> FileResponse:
    return download_response(selectors.artifact_get(workspace=request.workspace, pk=artifact_id))
