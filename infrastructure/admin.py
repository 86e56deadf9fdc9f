"""Infrastructure in the admin: every change goes through the services (audited, validated)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin, messages

from core.admin import ReadOnlyAdmin
from engine.scoring.pricing import library_price, library_source
from infrastructure.base_url import BaseUrlError, base_url_check, system_resolver
from infrastructure.models import (
    PROVIDER_LIMIT_FIELDS,
    AgentDeployment,
    ExecutionTarget,
    ModelPrice,
    ProviderAccount,
    ProviderCallLease,
    ProviderKey,
    RuntimeProfile,
    ToolResource,
)
from infrastructure.scripted_config import scripted_config_errors
from infrastructure.services import endpoint_url_error, provider_account_test_connection, tool_definition_errors
from secrets_app.services import credential_reference_key
from workspaces.services import audit_record


class _AuditedInfraAdmin(admin.ModelAdmin):
    """Operators edit infrastructure here too; the same rules as the services apply and every save is audited."""

    audit_prefix = ""

    def save_model(self, request, obj, form, change) -> None:

        super().save_model(request, obj, form, change)
        audit_record(
            workspace=obj.workspace,
            actor=request.user,
            action=f"{self.audit_prefix}.{'updated' if change else 'created'}",
            target=obj.name,
            metadata={"fields": sorted(form.changed_data), "via": "admin"},
        )


class ProviderAccountAdminForm(forms.ModelForm):
    base_url = forms.CharField(required=False, max_length=500, help_text="https, public address (runtime spec §7.4)")

    class Meta:
        model = ProviderAccount
        fields = ["workspace", "name", "provider_key", "credential_reference", "base_url", "status", *PROVIDER_LIMIT_FIELDS]

    def clean(self) -> dict:

        super().clean()

        data = self.cleaned_data
        reference = data.get("credential_reference") or ""
        if reference and credential_reference_key(reference) is None:
            self.add_error("credential_reference", "Use the form workspace-secret://KEY.")
        url = data.get("base_url") or ""
        if not url and data.get("provider_key") == ProviderKey.CUSTOM:
            self.add_error("base_url", "A custom provider needs the base URL of its OpenAI-compatible server (…/v1).")
        if url and "base_url" in self.changed_data:
            try:
                base_url_check(url, allow_private=settings.ALLOW_PRIVATE_PROVIDER_URLS, resolver=system_resolver)
            except BaseUrlError as exc:
                self.add_error("base_url", str(exc))
        return data


@admin.register(ProviderAccount)
class ProviderAccountAdmin(_AuditedInfraAdmin):
    form = ProviderAccountAdminForm
    audit_prefix = "provider_account"
    list_display = ["name", "workspace", "provider_key", "credential_reference", "base_url", "status", "last_test_status", "last_tested_at"]
    list_filter = ["provider_key", "status", "workspace"]
    search_fields = ["name"]
    readonly_fields = ["last_test_status", "last_test_message", "last_tested_at", "created_by", "created_at", "updated_at"]
    actions = ["test_connection"]

    @admin.action(description="Test connection (list the provider's models)")
    def test_connection(self, request, queryset) -> None:

        for account in queryset.select_related("workspace"):
            result = provider_account_test_connection(account=account, actor=request.user)
            self.message_user(request, f"{account.name}: {result.message}", messages.SUCCESS if result.ok else messages.ERROR)


@admin.register(RuntimeProfile)
class RuntimeProfileAdmin(_AuditedInfraAdmin):
    audit_prefix = "runtime_profile"
    list_display = ["name", "workspace", "execution_target", "max_iterations", "max_tool_calls", "status"]
    list_filter = ["execution_target", "status", "workspace"]
    search_fields = ["name"]


class AgentDeploymentAdminForm(forms.ModelForm):
    endpoint_url = forms.CharField(
        required=False, max_length=500, help_text="Hosted agents only: https, public address (docs/hosted-agents.md)"
    )

    class Meta:
        model = AgentDeployment
        fields = [
            "workspace",
            "name",
            "provider_account",
            "model",
            "runtime_profile",
            "system_prompt",
            "output_schema",
            "deployment_config",
            "endpoint_url",
            "status",
            "is_default_judge",
        ]

    def clean(self) -> dict:

        super().clean()

        data = self.cleaned_data
        workspace, account, profile = data.get("workspace"), data.get("provider_account"), data.get("runtime_profile")
        if workspace and account and account.workspace_id != workspace.pk:
            self.add_error("provider_account", "Choose a provider account of the same workspace.")
        if workspace and profile and profile.workspace_id != workspace.pk:
            self.add_error("runtime_profile", "Choose a runtime profile of the same workspace.")
        hosted = bool(profile and profile.execution_target == ExecutionTarget.HOSTED_EXTERNAL)
        if account and account.provider_key == ProviderKey.SCRIPTED and not hosted:
            for error in scripted_config_errors(data.get("deployment_config")):
                self.add_error("deployment_config", error)
        if profile and ("endpoint_url" in self.changed_data or "runtime_profile" in self.changed_data):
            if endpoint_error := endpoint_url_error(execution_target=profile.execution_target, url=data.get("endpoint_url") or ""):
                self.add_error("endpoint_url", endpoint_error)
        return data


@admin.register(AgentDeployment)
class AgentDeploymentAdmin(_AuditedInfraAdmin):
    form = AgentDeploymentAdminForm
    audit_prefix = "deployment"
    list_display = ["name", "workspace", "provider_account", "model", "runtime_profile", "status", "is_default_judge"]
    list_filter = ["status", "is_default_judge", "workspace"]
    search_fields = ["name", "model"]
    list_select_related = ["workspace", "provider_account", "runtime_profile"]


class ToolResourceAdminForm(forms.ModelForm):
    class Meta:
        model = ToolResource
        fields = ["workspace", "name", "slug", "tool_kind", "capability_key", "definition", "lifecycle_status"]

    def clean(self) -> dict:

        super().clean()

        data = self.cleaned_data
        if data.get("tool_kind"):
            for error in tool_definition_errors(tool_kind=data["tool_kind"], definition=data.get("definition")):
                self.add_error("definition", error)
        return data


@admin.register(ToolResource)
class ToolResourceAdmin(_AuditedInfraAdmin):
    form = ToolResourceAdminForm
    audit_prefix = "tool_resource"
    list_display = ["name", "slug", "workspace", "tool_kind", "capability_key", "lifecycle_status"]
    list_filter = ["tool_kind", "lifecycle_status", "workspace"]
    search_fields = ["name", "slug", "capability_key"]


@admin.register(ModelPrice)
class ModelPriceAdmin(_AuditedInfraAdmin):
    """Per-workspace model prices: they win over the price library, the pack's own rows win over them."""

    audit_prefix = "model_price"
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
