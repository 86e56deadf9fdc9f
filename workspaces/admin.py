from __future__ import annotations

from django.contrib import admin

from workspaces.models import ApiToken, AuditEvent, Workspace, WorkspaceMembership


class MembershipInline(admin.TabularInline):
    model = WorkspaceMembership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(WorkspaceMembership)
class WorkspaceMembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "workspace", "role", "created_at"]
    list_filter = ["role", "workspace"]
    search_fields = ["user__username", "user__email", "workspace__slug"]
    autocomplete_fields = ["user", "workspace"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]
    fields = ["user", "name", "prefix", "expires_at", "revoked_at", "created_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        # Raw tokens are shown once at creation; that needs the app page or `createapitoken`.
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset) -> None:
        from workspaces.services import api_token_revoke

        for token in queryset:
            api_token_revoke(token=token)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "workspace", "actor", "action", "target"]
    list_filter = ["action", "workspace"]
    search_fields = ["target", "action", "actor__username"]
    readonly_fields = [f.name for f in AuditEvent._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
