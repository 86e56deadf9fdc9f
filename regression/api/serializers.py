"""Output shapes of the regression suites API."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from regression.models import RegressionCase, RegressionSuite


class SuiteOutputSerializer(serializers.Serializer[RegressionSuite]):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    pack_id = serializers.IntegerField()
    pack_slug = serializers.CharField(source="pack.slug")
    cases_total = serializers.IntegerField(required=False)
    cases_active = serializers.IntegerField(required=False)
    cases_proposed = serializers.IntegerField(required=False)
    archived_at = serializers.DateTimeField(allow_null=True, help_text="Set while the suite is archived (no new run takes it).")
    created_at = serializers.DateTimeField()


class RegressionCaseOutputSerializer(serializers.Serializer[RegressionCase]):
    id = serializers.IntegerField()
    suite_id = serializers.IntegerField()
    title = serializers.CharField()
    status = serializers.CharField()
    severity = serializers.CharField()
    challenge_key = serializers.CharField()
    case_key = serializers.CharField()
    run_case_key = serializers.CharField(help_text="The case key its case runs get in a run that includes it.")
    source_run_id = serializers.IntegerField(allow_null=True)
    source_lane_id = serializers.IntegerField(allow_null=True)
    source_case_run_id = serializers.IntegerField(allow_null=True)
    source_first_sequence = serializers.IntegerField(allow_null=True, help_text="First event sequence number of the failed case run.")
    source_last_sequence = serializers.IntegerField(allow_null=True)
    failure_summary = serializers.CharField()
    created_at = serializers.DateTimeField()
    status_changed_at = serializers.DateTimeField(allow_null=True)


class CoverageOutputSerializer(serializers.Serializer[Any]):  # given a list (many=True), which the stubs do not type
    suite_id = serializers.IntegerField()
    suite_name = serializers.CharField()
    cases = serializers.IntegerField()
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    pending = serializers.IntegerField()
