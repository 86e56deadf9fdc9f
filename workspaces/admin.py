"""Tenancy in the admin. Workspaces and memberships change through the services (the last-admin
rule, the audit trail); tokens are revoked, never edited; the audit trail is read-only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import ServiceAdmin, ServiceDeleteAdmin, ServiceModelForm
from workspaces import services
from workspaces.models import ApiToken, AuditEvent, Workspace, WorkspaceMembership


class WorkspaceAddForm(ServiceModelForm):
    admin = forms.ModelChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
        label="First admin",
        help_text="The user who administers the new workspace (adds members, provider accounts, secrets).",
    )

    class Meta:
        model = Workspace
        fields = ["name", "slug"]


class MembershipInline(admin.TabularInline):
    """The members, to read; add, change or remove them under Workspace memberships (the services' rules)."""

    model = WorkspaceMembership
    fields = ["user", "role", "created_at"]
    readonly_fields = ["user", "role", "created_at"]
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Workspace)
class WorkspaceAdmin(ServiceAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    locked_on_change = ("slug",)  # the workspace's URLs
    inlines = [MembershipInline]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = WorkspaceAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_prepopulated_fields(self, request: HttpRequest, obj: Any = None) -> dict[str, Any]:
        return dict(self.prepopulated_fields) if obj is None else {}

    def create(self, request: HttpRequest, data: dict[str, Any]) -> Workspace:
        return services.workspace_create(name=data["name"], slug=data["slug"], admin=data["admin"], actor=request.user)

    def update(self, request: HttpRequest, obj: Workspace, changes: dict[str, Any]) -> Workspace:
        return services.workspace_rename(workspace=obj, name=changes.get("name", obj.name), actor=request.user)


@admin.register(WorkspaceMembership)
class WorkspaceMembershipAdmin(ServiceDeleteAdmin):
    list_display = ["user", "workspace", "role", "created_at"]
    list_filter = ["role", "workspace"]
    search_fields = ["user__username", "user__email", "workspace__slug"]
    autocomplete_fields = ["user", "workspace"]
    locked_on_change = ("workspace", "user")

    def create(self, request: HttpRequest, data: dict[str, Any]) -> WorkspaceMembership:
        return services.membership_add(workspace=data["workspace"], user=data["user"], role=data["role"], actor=request.user)

    def update(self, request: HttpRequest, obj: WorkspaceMembership, changes: dict[str, Any]) -> WorkspaceMembership:
        return services.membership_update(membership=obj, role=changes.get("role", obj.role), actor=request.user)

    def delete(self, request: HttpRequest, obj: WorkspaceMembership) -> None:
        services.membership_remove(membership=obj, actor=request.user)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Raw tokens are shown once at creation (the app's page or ``createapitoken``); here they are
    only read and revoked (the ``revoke`` action, ``api_token_revoke``)."""

    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    fields = ["user", "name", "prefix", "expires_at", "revoked_at", "created_at", "last_used_at"]
    readonly_fields = ["user", "name", "prefix", "expires_at", "revoked_at", "created_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset:
            services.api_token_revoke(token=token)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "workspace", "actor", "action", "target"]
    list_filter = ["action", "workspace"]
    search_fields = ["target", "action", "actor__username"]
    readonly_fields = [f.name for f in AuditEvent._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
