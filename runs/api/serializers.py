"""Output shapes shared by the run API views."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from runs.lookups import CASE_STATUSES, case_counts
from runs.models import MAX_REPEATS, Run, RunEvent
from runs.presenters import event_json


@extend_schema_field(
    {
        "oneOf": [{"type": "integer", "minimum": 1, "maximum": MAX_REPEATS}, {"type": "string", "enum": ["auto"]}],
        "default": 1,
        "description": f'Trials of every case in every lane: 1 to {MAX_REPEATS}, or "auto" (adaptive rounds, needs max_repeats).',
    }
)
class RepeatsField(serializers.Field):
    """``repeats``: an integer from 1 to 50, or ``"auto"``."""

    default_error_messages = {"invalid": f'repeats must be an integer from 1 to {MAX_REPEATS}, or "auto" (got {{value}}).'}

    def to_internal_value(self, data: Any) -> int | str:
        if isinstance(data, str) and data.strip().lower() == "auto":
            return "auto"
        if isinstance(data, str) and data.strip().isdigit():
            data = int(data.strip())
        if isinstance(data, bool) or not isinstance(data, int) or not 1 <= data <= MAX_REPEATS:
            self.fail("invalid", value=repr(data)[:40])
        return int(data)

    def to_representation(self, value: Any) -> Any:
        return value


class LaneOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    lane_index = serializers.IntegerField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field named like a DRF Field attribute
    deployment_id = serializers.IntegerField(allow_null=True)
    deployment_name = serializers.CharField()
    model = serializers.CharField(source="model_name")
    status = serializers.CharField()
    failure_reason = serializers.CharField()
    trials = serializers.IntegerField(help_text="Trials of every case scheduled in this lane so far.")


class RunJudgeOutputSerializer(serializers.Serializer):
    model = serializers.CharField(help_text="The judge model as written in the pack.")
    deployment_id = serializers.IntegerField(allow_null=True, help_text="null: no judge configured (allow_missing_judges).")
    deployment_name = serializers.CharField(allow_null=True)
    provider_key = serializers.CharField(allow_null=True, help_text="The provider the judge calls go to.")
    called_model = serializers.CharField(allow_null=True, help_text="The model the judge calls ask for.")
    source = serializers.CharField(allow_null=True, help_text="chosen | model_match | workspace_default")  # type: ignore[assignment]  # a field named like a DRF Field attribute


class RunSimulatorOutputSerializer(serializers.Serializer):
    deployment_id = serializers.IntegerField()
    deployment_name = serializers.CharField()
    provider_key = serializers.CharField()
    called_model = serializers.CharField()


class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.CharField()
    execution_mode = serializers.CharField()
    race_context = serializers.BooleanField(help_text="Peer standings were on: agents were told how the other lanes stood.")
    pack_version_id = serializers.IntegerField()
    pack_name = serializers.CharField(source="pack_version.pack.name")
    pack_version_number = serializers.IntegerField(source="pack_version.number")
    input_set_id = serializers.IntegerField()
    failure_reason = serializers.CharField()
    score_status = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    lanes = LaneOutputSerializer(many=True, source="lanes.all")
    judges = RunJudgeOutputSerializer(many=True, source="judge_rows")
    simulator = RunSimulatorOutputSerializer(source="simulator_row", allow_null=True)
    repeats = serializers.SerializerMethodField(help_text='The repeats asked for: an integer, or "auto".')
    repeats_mode = serializers.CharField(help_text="fixed | auto")
    max_repeats = serializers.IntegerField(allow_null=True, help_text="auto: the most trials of one case (null when fixed).")
    max_regression = serializers.SerializerMethodField(help_text="auto: the drop the rounds' sequential gate tolerates (null when fixed).")
    confidence = serializers.SerializerMethodField(help_text="auto: the confidence of the rounds' sequential gate (null when fixed).")
    rounds = serializers.IntegerField(help_text="Rounds of trials scheduled so far (1 when fixed).")
    round_log = serializers.JSONField(help_text="auto: per finished round, the gate decisions and the lanes given another round.")
    case_counts = serializers.SerializerMethodField()

    def get_repeats(self, run: Run) -> int | str:
        return "auto" if run.is_adaptive else run.repeats

    def get_max_regression(self, run: Run) -> float | None:
        return run.round_max_regression if run.is_adaptive else None

    def get_confidence(self, run: Run) -> float | None:
        return run.round_confidence if run.is_adaptive else None

    def get_case_counts(self, run: Run) -> dict[str, int]:
        if hasattr(run, "cases_total"):
            counts = {s: getattr(run, f"cases_{s}") for s in CASE_STATUSES}
            counts["total"] = run.cases_total
            return counts
        # By status, as the list's annotations (the pages' tally_* counts stay on the pages).
        return {k: v for k, v in case_counts(run=run).items() if not k.startswith("tally_")}


class CaseRunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    case_key = serializers.CharField()
    lane_id = serializers.IntegerField()
    deployment_name = serializers.CharField(source="lane.label")
    trial = serializers.IntegerField(help_text="Which trial of the case in its lane (1-based).")
    status = serializers.CharField()
    attempt = serializers.IntegerField(help_text="Retry attempt of this trial (a retry keeps the trial).")
    stop_reason = serializers.CharField()
    final_output = serializers.CharField(allow_null=True)
    error = serializers.CharField()
    step_count = serializers.IntegerField()
    tool_call_count = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    duration_ms = serializers.IntegerField(allow_null=True)
    passed = serializers.BooleanField(allow_null=True)
    score = serializers.FloatField(allow_null=True)
    regression_case_id = serializers.IntegerField(allow_null=True, help_text="Set when the case run runs a regression case.")


class EventOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    event_id = serializers.CharField()
    schema_version = serializers.SerializerMethodField()
    run_id = serializers.IntegerField()
    run_agent_id = serializers.IntegerField(source="lane_id")
    case_run_id = serializers.IntegerField(allow_null=True)
    case_key = serializers.CharField()
    attempt = serializers.IntegerField()
    sequence_number = serializers.IntegerField()
    event_type = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]  # a field named like a DRF Field attribute
    occurred_at = serializers.DateTimeField()
    payload = serializers.JSONField()

    def get_schema_version(self, event: RunEvent) -> str:
        return str(event_json(event)["schema_version"])

    def to_representation(self, instance: RunEvent) -> dict[str, Any]:
        # The fields above document the shape; runs.presenters.event_json is the one that builds it.
        return {**event_json(instance)}
