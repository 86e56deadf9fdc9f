"""Output shapes shared by the infrastructure API views (inputs live on each view)."""

from __future__ import annotations

from rest_framework import serializers


class ProviderAccountOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    provider_key = serializers.CharField()
    credential_reference = serializers.CharField(help_text="workspace-secret://KEY; the key's value is never returned")
    base_url = serializers.CharField()
    status = serializers.CharField()
    last_test_status = serializers.CharField()
    last_test_message = serializers.CharField()
    last_tested_at = serializers.DateTimeField(allow_null=True)
    max_concurrent_calls = serializers.IntegerField(allow_null=True, help_text="null = no limit (docs/provider-limits.md)")
    requests_per_minute = serializers.IntegerField(allow_null=True)
    tokens_per_minute = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class RuntimeProfileOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    execution_target = serializers.CharField()
    max_iterations = serializers.IntegerField()
    max_tool_calls = serializers.IntegerField()
    step_timeout_seconds = serializers.IntegerField()
    run_timeout_seconds = serializers.IntegerField()
    max_in_flight_cases = serializers.IntegerField()
    allow_shell = serializers.BooleanField(allow_null=True)
    allow_network = serializers.BooleanField(allow_null=True)
    max_workspace_bytes = serializers.IntegerField(allow_null=True)
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class DeploymentOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    provider_account_id = serializers.IntegerField()
    provider_key = serializers.CharField(source="provider_account.provider_key")
    model = serializers.CharField()
    runtime_profile_id = serializers.IntegerField()
    execution_target = serializers.CharField(source="runtime_profile.execution_target")
    endpoint_url = serializers.CharField()
    system_prompt = serializers.CharField()
    output_schema = serializers.JSONField(allow_null=True)
    deployment_config = serializers.JSONField()
    status = serializers.CharField()
    is_default_judge = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ToolResourceOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    slug = serializers.CharField()
    tool_kind = serializers.CharField()
    capability_key = serializers.CharField()
    definition = serializers.JSONField()
    lifecycle_status = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class PrimitiveOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField()
    description = serializers.CharField()
    parameters = serializers.JSONField(help_text="JSON Schema of the arguments")
    accepts_secrets = serializers.BooleanField(help_text="Whether a composed tool delegating to it may use ${secrets.KEY}")
    examples = serializers.JSONField()


class SandboxTemplateOutputSerializer(serializers.Serializer):
    template_id = serializers.CharField(help_text="What packs write in sandbox.sandbox_template_id")
    name = serializers.CharField()
    packages = serializers.ListField(child=serializers.CharField())
    read_only_paths = serializers.ListField(child=serializers.CharField())
    updated_at = serializers.DateTimeField()
