"""Operators manage secrets in the admin too, through the same services. The value is write-only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import ServiceDeleteAdmin, ServiceModelForm
from core.errors import DomainError
from secrets_app import services
from secrets_app.models import WorkspaceSecret
from workspaces.models import Role, Workspace


def _admin_workspaces(request: HttpRequest) -> QuerySet[Workspace]:
    if request.user.is_superuser:
        return Workspace.objects.all()
    return Workspace.objects.filter(memberships__user=request.user.pk, memberships__role=Role.ADMIN)


class WorkspaceSecretAdminForm(ServiceModelForm):
    value = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only. Leave blank to keep the current value when editing.",
    )
    hosts = forms.CharField(
        label="Allowed hosts",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="One host per line, optional :port; *.example.org for the hosts below it. Empty: no tool can send it.",
    )

    class Meta:
        model = WorkspaceSecret
        fields = ["workspace", "key"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["hosts"].initial = "\n".join(self.instance.allowed_hosts or [])

    def clean_value(self) -> str | None:
        return self.cleaned_data.get("value") or None  # blank: keep the stored value

    def clean_hosts(self) -> list[str]:
        lines = [line.strip() for line in (self.cleaned_data.get("hosts") or "").splitlines() if line.strip()]
        try:  # the service's own check, here so the message lands next to this field
            return services.secret_allowed_hosts_normalise(lines)
        except DomainError as error:
            raise forms.ValidationError(error.message) from None


@admin.register(WorkspaceSecret)
class WorkspaceSecretAdmin(ServiceDeleteAdmin):
    """Saving replaces the value (blank keeps it) and the allowed hosts through ``secret_set``."""

    form = WorkspaceSecretAdminForm
    locked_on_change = ("workspace", "key")  # the key is part of the ciphertext's associated data
    list_display = ["key", "workspace", "hosts_display", "created_at", "created_by", "updated_at", "updated_by"]
    list_filter = ["workspace"]
    search_fields = ["key", "workspace__slug"]
    readonly_fields = ["created_at", "created_by", "updated_at", "updated_by"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkspaceSecret]:
        return (
            super()
            .get_queryset(request)
            .filter(workspace__in=_admin_workspaces(request))
            .select_related("workspace", "created_by", "updated_by")
        )

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "workspace":
            kwargs["queryset"] = _admin_workspaces(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description="Allowed hosts")
    def hosts_display(self, obj: WorkspaceSecret) -> str:
        return ", ".join(obj.allowed_hosts or []) or "— (tools cannot send it)"

    def create(self, request: HttpRequest, data: dict[str, Any]) -> WorkspaceSecret:
        secret, _ = services.secret_set(
            workspace=data["workspace"], key=data["key"], value=data["value"], allowed_hosts=data["hosts"], actor=request.user
        )
        return secret

    def update(self, request: HttpRequest, obj: WorkspaceSecret, changes: dict[str, Any]) -> WorkspaceSecret:
        value, hosts = changes.get("value"), changes.get("hosts")
        if value is None and (hosts is None or hosts == list(obj.allowed_hosts or [])):
            return obj  # no new value and the same hosts: nothing to change
        secret, _ = services.secret_set(workspace=obj.workspace, key=obj.key, value=value, allowed_hosts=hosts, actor=request.user)
        return secret

    def delete(self, request: HttpRequest, obj: WorkspaceSecret) -> None:
        services.secret_delete(secret=obj, actor=request.user)
