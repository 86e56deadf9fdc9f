"""Admin for packs. A version is added by uploading its YAML (published through pack_publish);
after that only its lifecycle status can change. Challenges, input sets and cases are history.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from core.admin import ReadOnlyAdmin, ServiceAdmin, ServiceModelForm
from packs import services
from packs.models import Case, Challenge, InputSet, Pack, PackVersion
from workspaces.models import Workspace


def _error_text(error: dict[str, Any]) -> str:
    where = f" (line {error['line']})" if error.get("line") else ""
    return f"{error['field']} {error['message']}{where}".strip()


def _warning_text(warning: dict[str, Any]) -> str:
    return "Warning: " + _error_text({"field": warning.get("path") or "", "message": warning["message"], "line": warning.get("line")})


class PackVersionUploadForm(ServiceModelForm):
    """Add form: a workspace and a YAML file; clean() validates and checks conflicts."""

    workspace_choice = forms.ModelChoiceField(queryset=Workspace.objects.all(), label="Workspace")
    yaml_file = forms.FileField(
        label="Bundle YAML file",
        help_text="A challenge-pack bundle (at most 1 MiB). It is validated and published as a new, immutable version.",
    )

    class Meta:
        model = PackVersion
        fields: list[str] = []

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        upload = data.get("yaml_file")
        workspace = data.get("workspace_choice")
        if not upload or not workspace:
            return data
        if upload.size > services.MAX_BUNDLE_BYTES:
            self.add_error("yaml_file", "The file is larger than 1 MiB.")
            return data
        try:
            source = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            self.add_error("yaml_file", "The file is not UTF-8 text.")
            return data
        try:  # the service's check, here so every line-numbered error lands next to the file
            services.pack_check(workspace=workspace, source=source)
        except services.PackInvalid as exc:
            self.add_error("yaml_file", [_error_text(e) for e in exc.errors])
        except services.PackConflict as exc:
            self.add_error("yaml_file", f"{exc.code}: {_error_text(exc.as_dict())}")
        data["source"] = source
        return data


class ChallengeInline(admin.TabularInline):
    model = Challenge
    fields: ClassVar[tuple[str, ...]] = ("execution_order", "key", "title", "category", "difficulty")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class InputSetInline(admin.TabularInline):
    model = InputSet
    fields: ClassVar[tuple[str, ...]] = ("key", "name", "checksum")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PackVersion)
class PackVersionAdmin(ServiceAdmin):
    list_display = ["pack", "number", "workspace", "execution_mode", "lifecycle_status", "published_at", "published_by"]
    list_filter = ["lifecycle_status", "execution_mode", "workspace"]
    search_fields = ["pack__name", "pack__slug", "manifest_checksum"]
    list_select_related = ["pack", "workspace", "published_by"]
    readonly_fields = [
        "pack",
        "workspace",
        "number",
        "execution_mode",
        "manifest_checksum",
        "published_at",
        "published_by",
        "manifest",
        "raw_yaml",
        "warnings_list",
    ]
    fields: ClassVar[tuple[str, ...]] = (
        "pack",
        "workspace",
        "number",
        "execution_mode",
        "lifecycle_status",
        "manifest_checksum",
        "published_at",
        "published_by",
        "warnings_list",
        "raw_yaml",
        "manifest",
    )
    inlines = [ChallengeInline, InputSetInline]

    @admin.display(description="Validation warnings")
    def warnings_list(self, obj: PackVersion) -> str:
        if obj.warnings is None:
            return "Not recorded (published before validation warnings were)."
        if not obj.warnings:
            return "None."
        return format_html_join(mark_safe("<br>"), "{}", ((_warning_text(w),) for w in obj.warnings))

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):
        if obj is None:
            kwargs["form"] = PackVersionUploadForm
            kwargs["fields"] = []
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        if obj is None:
            return ["workspace_choice", "yaml_file"]
        return list(self.fields)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [] if obj is None else list(self.readonly_fields)

    def get_inlines(self, request: HttpRequest, obj: Any) -> list:
        return [] if obj is None else self.inlines

    def create(self, request: HttpRequest, data: dict[str, Any]) -> PackVersion:
        version = services.pack_publish(workspace=data["workspace_choice"], user=request.user, source=data["source"])
        messages.info(request, f"Published {version.pack.name} version {version.number} with {version.cases.count()} cases.")
        for warning in version.warnings or []:
            messages.warning(request, _warning_text(warning))
        return version

    def update(self, request: HttpRequest, obj: PackVersion, changes: dict[str, Any]) -> PackVersion:
        if "lifecycle_status" not in changes:
            return obj
        current = PackVersion.objects.select_related("pack", "workspace").get(pk=obj.pk)
        return services.pack_version_set_lifecycle(version=current, lifecycle_status=changes["lifecycle_status"], user=request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Pack)
class PackAdmin(ServiceAdmin):
    list_display = ["name", "slug", "family", "workspace", "lifecycle_status", "updated_at"]
    list_filter = ["lifecycle_status", "family", "workspace"]
    search_fields = ["name", "slug"]
    list_select_related = ["workspace"]
    readonly_fields = ["workspace", "slug", "name", "family", "description", "created_at", "updated_at"]
    fields = ["workspace", "slug", "name", "family", "description", "lifecycle_status", "created_at", "updated_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # packs are created by publishing a version

    def update(self, request: HttpRequest, obj: Pack, changes: dict[str, Any]) -> Pack:
        if "lifecycle_status" not in changes:
            return obj
        current = Pack.objects.select_related("workspace").get(pk=obj.pk)
        return services.pack_set_lifecycle(pack=current, lifecycle_status=changes["lifecycle_status"], user=request.user)


@admin.register(Challenge)
class ChallengeAdmin(ReadOnlyAdmin):
    list_display = ["key", "title", "pack_version", "category", "difficulty", "execution_order"]
    list_filter = ["difficulty"]
    search_fields = ["key", "title", "pack_version__pack__slug"]
    list_select_related = ["pack_version__pack"]


@admin.register(InputSet)
class InputSetAdmin(ReadOnlyAdmin):
    list_display = ["key", "name", "pack_version", "checksum"]
    search_fields = ["key", "name", "pack_version__pack__slug"]
    list_select_related = ["pack_version__pack"]


@admin.register(Case)
class CaseAdmin(ReadOnlyAdmin):
    list_display = ["case_key", "challenge_key", "input_set", "pack_version", "position"]
    search_fields = ["case_key", "challenge_key", "pack_version__pack__slug"]
    list_select_related = ["input_set", "pack_version__pack"]
