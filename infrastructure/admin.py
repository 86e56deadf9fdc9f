"""Infrastructure in the admin: every add and change is the services' (the pages' and the API's
rules, audit and errors), through ``core.admin.ServiceAdmin``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import ReadOnlyAdmin, ServiceAdmin, ServiceModelForm
from engine.scoring.pricing import library_price, library_source
from infrastructure import services
from infrastructure.models import (
    PROVIDER_LIMIT_FIELDS,
    AgentDeployment,
    ModelPrice,
    ProviderAccount,
    ProviderCallLease,
    RuntimeProfile,
    SandboxTemplate,
    ToolResource,
)


class ProviderAccountAdminForm(ServiceModelForm):
    # A plain text field: the service's base-URL rules give the message, not URLField's.
    base_url = forms.CharField(required=False, max_length=500, help_text="https, public address (runtime spec §7.4)")

    class Meta:
        model = ProviderAccount
        fields = ["workspace", "name", "provider_key", "credential_reference", "base_url", "status", *PROVIDER_LIMIT_FIELDS]


@admin.register(ProviderAccount)
class ProviderAccountAdmin(ServiceAdmin):
    form = ProviderAccountAdminForm
    not_on_add = ("status",)
    list_display = ["name", "workspace", "provider_key", "credential_reference", "base_url", "status", "last_test_status", "last_tested_at"]
    list_filter = ["provider_key", "status", "workspace"]
    search_fields = ["name"]
    readonly_fields = ["last_test_status", "last_test_message", "last_tested_at", "created_by", "created_at", "updated_at"]
    actions = ["test_connection"]

    def create(self, request: HttpRequest, data: dict[str, Any]) -> ProviderAccount:
        return services.provider_account_create(actor=request.user, **data)

    def update(self, request: HttpRequest, obj: ProviderAccount, changes: dict[str, Any]) -> ProviderAccount:
        return services.provider_account_update(account=obj, actor=request.user, **changes)

    @admin.action(description="Test connection (list the provider's models)")
    def test_connection(self, request: HttpRequest, queryset: QuerySet[ProviderAccount]) -> None:
        for account in queryset.select_related("workspace"):
            result = services.provider_account_test_connection(account=account, actor=request.user)
            self.message_user(request, f"{account.name}: {result.message}", messages.SUCCESS if result.ok else messages.ERROR)


@admin.register(RuntimeProfile)
class RuntimeProfileAdmin(ServiceAdmin):
    fields = ["workspace", *services.RUNTIME_PROFILE_FIELDS, "status"]
    not_on_add = ("status",)
    list_display = ["name", "workspace", "execution_target", "max_iterations", "max_tool_calls", "status"]
    list_filter = ["execution_target", "status", "workspace"]
    search_fields = ["name"]

    def create(self, request: HttpRequest, data: dict[str, Any]) -> RuntimeProfile:
        return services.runtime_profile_create(actor=request.user, **data)

    def update(self, request: HttpRequest, obj: RuntimeProfile, changes: dict[str, Any]) -> RuntimeProfile:
        return services.runtime_profile_update(profile=obj, actor=request.user, **changes)


class AgentDeploymentAdminForm(ServiceModelForm):
    endpoint_url = forms.CharField(
        required=False, max_length=500, help_text="Hosted agents only: https, public address (docs/hosted-agents.md)"
    )

    class Meta:
        model = AgentDeployment
        fields = ["workspace", *services.DEPLOYMENT_FIELDS, "status"]


@admin.register(AgentDeployment)
class AgentDeploymentAdmin(ServiceAdmin):
    """Choosing a deployment as the default judge here demotes the previous one, as on the page."""

    form = AgentDeploymentAdminForm
    not_on_add = ("status",)
    list_display = ["name", "workspace", "provider_account", "model", "runtime_profile", "status", "is_default_judge"]
    list_filter = ["status", "is_default_judge", "workspace"]
    search_fields = ["name", "model"]
    list_select_related = ["workspace", "provider_account", "runtime_profile"]

    def create(self, request: HttpRequest, data: dict[str, Any]) -> AgentDeployment:
        return services.deployment_create(actor=request.user, **data)

    def update(self, request: HttpRequest, obj: AgentDeployment, changes: dict[str, Any]) -> AgentDeployment:
        return services.deployment_update(deployment=obj, actor=request.user, **changes)


@admin.register(ToolResource)
class ToolResourceAdmin(ServiceAdmin):
    fields = ["workspace", *services.TOOL_RESOURCE_FIELDS]
    list_display = ["name", "slug", "workspace", "tool_kind", "capability_key", "lifecycle_status"]
    list_filter = ["tool_kind", "lifecycle_status", "workspace"]
    search_fields = ["name", "slug", "capability_key"]

    def create(self, request: HttpRequest, data: dict[str, Any]) -> ToolResource:
        return services.tool_resource_create(actor=request.user, **data)

    def update(self, request: HttpRequest, obj: ToolResource, changes: dict[str, Any]) -> ToolResource:
        return services.tool_resource_update(tool=obj, actor=request.user, **changes)


@admin.register(ModelPrice)
class ModelPriceAdmin(ServiceAdmin):
    """Per-workspace model prices: they win over the price library, the pack's own rows win over them."""

    list_display = ["name", "workspace", "input_cost_per_million_tokens", "output_cost_per_million_tokens", "note", "updated_at"]
    list_filter = ["provider_key", "workspace"]
    search_fields = ["provider_model_id", "note"]
    list_select_related = ["workspace"]
    fields = [
        "workspace",
        "provider_key",
        "provider_model_id",
        "input_cost_per_million_tokens",
        "output_cost_per_million_tokens",
        "note",
        "library_reference",
        "updated_at",
    ]
    readonly_fields = ["library_reference", "updated_at"]

    def create(self, request: HttpRequest, data: dict[str, Any]) -> ModelPrice:
        return services.model_price_create(actor=request.user, **data)

    def update(self, request: HttpRequest, obj: ModelPrice, changes: dict[str, Any]) -> ModelPrice:
        return services.model_price_update(price=obj, actor=request.user, **changes)

    @admin.display(description="Price library")
    def library_reference(self, obj: ModelPrice) -> str:
        """What scoring would charge without this row, so an operator sees what they override."""
        if obj is None or not obj.provider_model_id:
            return "—"
        per_input = library_price(obj.provider_key, obj.provider_model_id, 1_000_000, 0)
        per_output = library_price(obj.provider_key, obj.provider_model_id, 0, 1_000_000)
        if per_input is None or per_output is None:
            return f"{library_source()} has no price for this model"
        return f"{library_source()}: {per_input:g} USD input, {per_output:g} USD output per million tokens"


@admin.register(ProviderCallLease)
class ProviderCallLeaseAdmin(ReadOnlyAdmin):
    """Model calls counted against provider account limits (the database backend; docs/provider-limits.md).

    Read-only: a slot held by a killed worker frees itself when its lease expires.
    """

    list_display = ["token", "account", "started_at", "lease_expires_at", "tokens"]
    list_filter = ["account"]
    list_select_related = ["account"]


@admin.register(SandboxTemplate)
class SandboxTemplateAdmin(ServiceAdmin):
    """Installation-wide sandbox templates, chosen by packs' ``sandbox.sandbox_template_id`` (docs/operations.md)."""

    locked_on_change = ("template_id",)
    list_display = ["template_id", "name", "packages", "read_only_paths", "updated_at"]
    search_fields = ["template_id", "name"]
    fields = ["template_id", "name", "packages", "read_only_paths", "updated_at"]
    readonly_fields = ["updated_at"]

    def create(self, request: HttpRequest, data: dict[str, Any]) -> SandboxTemplate:
        return services.sandbox_template_create(actor=request.user, **data)

    def update(self, request: HttpRequest, obj: SandboxTemplate, changes: dict[str, Any]) -> SandboxTemplate:
        return services.sandbox_template_update(template=obj, actor=request.user, **changes)
