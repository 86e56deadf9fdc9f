"""Operators manage secrets in the admin too, through the same services. The value is write-only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from core.errors import DomainError
from secrets_app import services
from secrets_app.models import WorkspaceSecret
from workspaces.models import Role, Workspace


def _admin_workspaces(request: HttpRequest) -> QuerySet[Workspace]:
    if request.user.is_superuser:
        return Workspace.objects.all()
    return Workspace.objects.filter(memberships__user=request.user.pk, memberships__role=Role.ADMIN)


class WorkspaceSecretAdminForm(forms.ModelForm):
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

    def clean_hosts(self) -> list[str]:
        lines = [line.strip() for line in (self.cleaned_data.get("hosts") or "").splitlines() if line.strip()]
        try:
            return services.secret_allowed_hosts_normalise(lines)
        except DomainError as error:
            raise forms.ValidationError(error.message) from None

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.instance.pk is None and not data.get("value"):
            self.add_error("value", "Enter a value (at least 1 byte).")
        value = data.get("value")
        if value:
            for message in services.secret_value_errors(value):
                self.add_error("value", message)
        return data

    def validate_unique(self) -> None:
        # secret_set replaces an existing key, which is what an operator adding it again wants.
        return None


@admin.register(WorkspaceSecret)
class WorkspaceSecretAdmin(admin.ModelAdmin):
    form = WorkspaceSecretAdminForm
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

    def get_readonly_fields(self, request: HttpRequest, obj: WorkspaceSecret | None = None) -> list[str]:
        # The key is part of the ciphertext's associated data; replacing means deleting and adding.
        return [*self.readonly_fields, "workspace", "key"] if obj is not None else list(self.readonly_fields)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "workspace":
            kwargs["queryset"] = _admin_workspaces(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description="Allowed hosts")
    def hosts_display(self, obj: WorkspaceSecret) -> str:
        return ", ".join(obj.allowed_hosts or []) or "— (tools cannot send it)"

    def save_model(self, request: HttpRequest, obj: WorkspaceSecret, form: forms.ModelForm, change: bool) -> None:
        value = form.cleaned_data.get("value") or None
        hosts = form.cleaned_data.get("hosts") or []
        if value is None and change and hosts == list(obj.allowed_hosts or []):
            return  # editing without a new value or new hosts changes nothing
        try:
            secret, _ = services.secret_set(workspace=obj.workspace, key=obj.key, value=value, allowed_hosts=hosts, actor=request.user)
        except ValidationError as exc:  # the form already checked; keep the admin from showing a 500
            raise ValidationError(exc.messages) from None
        obj.pk, obj.ciphertext, obj.key_id, obj.allowed_hosts = secret.pk, secret.ciphertext, secret.key_id, secret.allowed_hosts
        obj.created_at, obj.updated_at = secret.created_at, secret.updated_at

    def delete_model(self, request: HttpRequest, obj: WorkspaceSecret) -> None:
        services.secret_delete(secret=obj, actor=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[WorkspaceSecret]) -> None:
        for secret in queryset.select_related("workspace"):
            services.secret_delete(secret=secret, actor=request.user)
