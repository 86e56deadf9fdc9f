"""Output shapes of the packs API (input shapes live on their views)."""

from __future__ import annotations

from rest_framework import serializers


class ErrorItemSerializer(serializers.Serializer):
    field = serializers.CharField()
    message = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)


class WarningItemSerializer(serializers.Serializer):
    """A validation warning: legal, but probably not what the author meant (never an error)."""

    path = serializers.CharField(allow_blank=True)
    message = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)


class PackOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    slug = serializers.CharField()
    name = serializers.CharField()
    family = serializers.CharField()
    description = serializers.CharField()
    lifecycle_status = serializers.CharField()
    versions_count = serializers.IntegerField()
    latest_version_id = serializers.IntegerField(allow_null=True)
    latest_version_number = serializers.IntegerField(source="latest_number", allow_null=True)
    latest_execution_mode = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class PackVersionOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    pack_id = serializers.IntegerField()
    number = serializers.IntegerField()
    execution_mode = serializers.CharField()
    lifecycle_status = serializers.CharField()
    manifest_checksum = serializers.CharField()
    published_at = serializers.DateTimeField()
    published_by = serializers.CharField(source="published_by.username", default=None, allow_null=True)


class PackVersionDetailOutputSerializer(PackVersionOutputSerializer):
    evaluation_spec_id = serializers.CharField(help_text="SHA-256 of the evaluation spec's canonical JSON (as in the publish answer).")
    pack_slug = serializers.CharField(source="pack.slug")
    pack_name = serializers.CharField(source="pack.name")
    manifest = serializers.JSONField()
    warnings = WarningItemSerializer(
        many=True, allow_null=True, help_text="Validation warnings recorded at publish; null for versions published before they were."
    )


class InputSetOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    pack_version_id = serializers.IntegerField()
    key = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    checksum = serializers.CharField()
    cases_count = serializers.IntegerField()


class CaseOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    input_set_id = serializers.IntegerField()
    challenge_key = serializers.CharField()
    case_key = serializers.CharField()
    item_key = serializers.CharField()
    position = serializers.IntegerField()
    payload = serializers.JSONField()
