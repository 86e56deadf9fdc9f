"""Runs, lanes, per-case executions and their events.

State machines follow spec runtime.md §4.2; transitions are compare-and-set updates with a
history row (see runs/lifecycle.py), never plain saves.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from engine.scoring.stats import MAX_REPEATS
from workspaces.models import Workspace

# Hosted external agents (docs/hosted-agents.md): the lane snapshot's execution target, and the pack
# execution modes a hosted agent can race in (one case in, one answer out; a multi-turn pack needs
# the simulator's turns fed to the agent, which the protocol does not carry yet).
HOSTED_EXTERNAL = "hosted_external"  # infrastructure.models.ExecutionTarget.HOSTED_EXTERNAL
HOSTED_PACK_MODES = frozenset({"native", "prompt_eval"})


class RunStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    QUEUED = "queued", "Queued"
    PROVISIONING = "provisioning", "Provisioning"
    RUNNING = "running", "Running"
    SCORING = "scoring", "Scoring"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


RUN_TERMINAL = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    RunStatus.DRAFT: frozenset({RunStatus.QUEUED}),
    RunStatus.QUEUED: frozenset({RunStatus.PROVISIONING, RunStatus.FAILED, RunStatus.CANCELLED}),
    RunStatus.PROVISIONING: frozenset({RunStatus.RUNNING, RunStatus.FAILED, RunStatus.CANCELLED}),
    RunStatus.RUNNING: frozenset({RunStatus.SCORING, RunStatus.FAILED, RunStatus.CANCELLED}),
    RunStatus.SCORING: frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED}),
    RunStatus.COMPLETED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
}


class LaneStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    READY = "ready", "Ready"
    EXECUTING = "executing", "Executing"
    EVALUATING = "evaluating", "Evaluating"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"  # its run was cancelled before the lane finished


LANE_TERMINAL = frozenset({LaneStatus.COMPLETED, LaneStatus.FAILED, LaneStatus.CANCELLED})
LANE_TRANSITIONS: dict[str, frozenset[str]] = {
    LaneStatus.QUEUED: frozenset({LaneStatus.READY, LaneStatus.FAILED, LaneStatus.CANCELLED}),
    LaneStatus.READY: frozenset({LaneStatus.EXECUTING, LaneStatus.FAILED, LaneStatus.CANCELLED}),
    LaneStatus.EXECUTING: frozenset({LaneStatus.EVALUATING, LaneStatus.FAILED, LaneStatus.CANCELLED}),
    # evaluating → executing: an adaptive run's next round of trials (runs/pipeline/rounds.py).
    LaneStatus.EVALUATING: frozenset({LaneStatus.COMPLETED, LaneStatus.FAILED, LaneStatus.CANCELLED, LaneStatus.EXECUTING}),
    LaneStatus.COMPLETED: frozenset(),
    LaneStatus.FAILED: frozenset(),
    LaneStatus.CANCELLED: frozenset(),
}


class CaseStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


CASE_TERMINAL = frozenset({CaseStatus.COMPLETED, CaseStatus.FAILED, CaseStatus.CANCELLED})


class ScoreStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SCORED = "scored", "Scored"
    ERRORED = "errored", "Errored"
    # A run that was cancelled or failed before every lane finished gets no run scorecard (its
    # finished cases keep their own verdicts).
    SKIPPED = "skipped", "Not scored"


# Repeated trials (docs/runs.md, "Trials"): a run plays every case of every lane `repeats` times.
DEFAULT_AUTO_FIRST_ROUND = 2  # trials per case in an adaptive run's first round


class RepeatsMode(models.TextChoices):
    FIXED = "fixed", "Fixed"
    AUTO = "auto", "Adaptive"


class Run(models.Model):
    class Mode(models.TextChoices):
        SINGLE_AGENT = "single_agent", "Single agent"
        COMPARISON = "comparison", "Comparison"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="runs")
    pack_version = models.ForeignKey("packs.PackVersion", on_delete=models.PROTECT, related_name="runs")
    input_set = models.ForeignKey("packs.InputSet", on_delete=models.PROTECT, related_name="runs")
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.SINGLE_AGENT)
    execution_mode = models.CharField(
        max_length=32, default="native", help_text="native | prompt_eval | multi_turn | responses (from the pack version)."
    )
    failure_reason = models.TextField(blank=True)
    score_status = models.CharField(max_length=16, choices=ScoreStatus.choices, default=ScoreStatus.PENDING)
    judge_snapshot = models.JSONField(
        default=dict,
        blank=True,
        help_text="Per LLM judge model named by the pack: the deployment that answers it as it was at run creation, "
        "or null when the run was started without one (allow_missing_judges).",
    )
    simulator_snapshot = models.JSONField(
        null=True, blank=True, help_text="The deployment that plays llm user-simulator actors, as it was at run creation."
    )
    race_context = models.BooleanField(
        default=False, help_text="Peer standings: between steps each lane's agent is told how the other lanes stand (docs/runs.md)."
    )
    workspace_had_secrets = models.BooleanField(
        default=True,
        help_text="Whether the workspace had any secret when the run was created: a case of a run without one, whose "
        "deployments and pack reference none, skips reading secrets (docs/secrets.md). True for older runs.",
    )
    repeats = models.PositiveSmallIntegerField(
        default=1,
        help_text="Trials of every case in every lane (fixed mode); in adaptive mode the trials of the first round.",
    )
    repeats_mode = models.CharField(max_length=8, choices=RepeatsMode.choices, default=RepeatsMode.FIXED)
    max_repeats = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Adaptive mode: the most trials of one case the rounds may reach (null in fixed mode)."
    )
    round_max_regression = models.FloatField(
        default=0.05,
        help_text="Adaptive mode: the tolerated drop the rounds' sequential gate resolves (0 < value < 1; 0.05 by default).",
    )
    round_confidence = models.FloatField(
        default=0.95, help_text="Adaptive mode: the confidence of the rounds' sequential gate (0.5 ≤ value < 1; 0.95 by default)."
    )
    rounds = models.PositiveSmallIntegerField(default=1, help_text="Rounds of trials scheduled so far (1 in fixed mode).")
    round_log = models.JSONField(
        default=list,
        blank=True,
        help_text="Adaptive mode: one entry per finished round (its decisions and the lanes given another round).",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancelled_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(status__in=RunStatus.values), name="run_status_valid"),
            models.CheckConstraint(condition=models.Q(repeats__gte=1, repeats__lte=MAX_REPEATS), name="run_repeats_range"),
            models.CheckConstraint(condition=models.Q(repeats_mode__in=RepeatsMode.values), name="run_repeats_mode_valid"),
            models.CheckConstraint(
                condition=(models.Q(repeats_mode=RepeatsMode.FIXED, max_repeats__isnull=True))
                | models.Q(repeats_mode=RepeatsMode.AUTO, max_repeats__isnull=False, max_repeats__gte=1, max_repeats__lte=MAX_REPEATS),
                name="run_max_repeats_with_auto",
            ),
            models.CheckConstraint(
                condition=models.Q(
                    round_max_regression__gt=0, round_max_regression__lt=1, round_confidence__gte=0.5, round_confidence__lt=1
                ),
                name="run_round_policy_range",
            ),
        ]
        # The dispatcher's question: the workspace's running runs (runs/pipeline/advance.py, fair scheduling).
        indexes = [models.Index(fields=["workspace"], name="run_running_ws", condition=models.Q(status="running"))]

    def __str__(self) -> str:
        return self.name

    @property
    def is_adaptive(self) -> bool:
        return self.repeats_mode == RepeatsMode.AUTO

    @property
    def is_terminal(self) -> bool:
        return self.status in RUN_TERMINAL

    @property
    def judge_rows(self) -> list[dict[str, Any]]:
        """The judge snapshot as rows (API and run page): one per judge model, deployment or None."""
        snapshot = self.judge_snapshot if isinstance(self.judge_snapshot, dict) else {}
        return [{"model": model, **_caller_row(entry)} for model, entry in snapshot.items()]

    @property
    def simulator_row(self) -> dict[str, Any] | None:
        return _caller_row(self.simulator_snapshot) if isinstance(self.simulator_snapshot, dict) else None


def _caller_row(entry: Any) -> dict[str, Any]:
    """A judge's or simulator's snapshot, flattened for people and API clients."""
    if not isinstance(entry, dict):
        return {"deployment_id": None, "deployment_name": None, "provider_key": None, "called_model": None, "source": None}
    deployment = entry.get("deployment")
    if not isinstance(deployment, dict):
        deployment = {}
    account = entry.get("provider_account")
    if not isinstance(account, dict):
        account = {}
    return {
        "deployment_id": deployment.get("id"),
        "deployment_name": deployment.get("name"),
        "provider_key": account.get("provider_key"),
        "called_model": deployment.get("model") or entry.get("model"),
        "source": entry.get("source"),
    }


class RunStatusHistory(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="status_history")
    from_status = models.CharField(max_length=16)
    to_status = models.CharField(max_length=16)
    reason = models.TextField(blank=True)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["changed_at", "id"]
        verbose_name_plural = "run status history"

    def __str__(self) -> str:
        return f"{self.from_status} → {self.to_status}"


class Lane(models.Model):
    """One lane: one deployment, frozen as a snapshot at run creation."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="lanes")
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    deployment = models.ForeignKey("infrastructure.AgentDeployment", on_delete=models.SET_NULL, null=True, blank=True, related_name="lanes")
    lane_index = models.PositiveIntegerField()
    label = models.CharField(max_length=200)
    snapshot = models.JSONField(help_text="Deployment, provider account, model and runtime profile as they were at run creation.")
    status = models.CharField(max_length=16, choices=LaneStatus.choices, default=LaneStatus.QUEUED, db_index=True)
    failure_reason = models.TextField(blank=True)
    next_sequence = models.PositiveBigIntegerField(default=1)
    trials = models.PositiveSmallIntegerField(
        default=1, help_text="Trials of every case scheduled in this lane so far (the run's repeats; adaptive rounds add more)."
    )
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "runs_runagent"  # the lane was called RunAgent until 2026-11
        ordering = ["run", "lane_index"]
        constraints = [models.UniqueConstraint(fields=["run", "lane_index"], name="uniq_lane_index_per_run")]

    def __str__(self) -> str:
        return f"{self.run} / {self.label}"

    @property
    def is_terminal(self) -> bool:
        return self.status in LANE_TERMINAL

    # The snapshot as a worker, a scorer and a page read it (written by runs.services.create).
    # Lanes created before the snapshot was split into parts kept the deployment's fields flat.

    def _snapshot_part(self, name: str) -> dict[str, Any]:
        snapshot = self.snapshot if isinstance(self.snapshot, dict) else {}
        part = snapshot.get(name)
        return part if isinstance(part, dict) else {}

    @property
    def deployment_snapshot(self) -> dict[str, Any]:
        snapshot = self.snapshot if isinstance(self.snapshot, dict) else {}
        part = snapshot.get("deployment")
        return part if isinstance(part, dict) else snapshot

    @property
    def provider_account_snapshot(self) -> dict[str, Any]:
        return self._snapshot_part("provider_account")

    @property
    def runtime_profile_snapshot(self) -> dict[str, Any]:
        return self._snapshot_part("runtime_profile")

    @property
    def deployment_name(self) -> str:
        return str(self.deployment_snapshot.get("name") or self.label)

    @property
    def model_name(self) -> str:
        """The provider's model name the lane's agent ran on (``gpt-4.1``, ``scripted-1``…)."""
        snapshot = self.snapshot if isinstance(self.snapshot, dict) else {}
        return str(self.deployment_snapshot.get("model") or snapshot.get("model") or "")

    @property
    def provider_key(self) -> str:
        snapshot = self.snapshot if isinstance(self.snapshot, dict) else {}
        key = self.provider_account_snapshot.get("provider_key") or snapshot.get("provider_key")
        return str(key or self.deployment_snapshot.get("provider_key") or "")

    @property
    def deployment_config(self) -> dict[str, Any]:
        snapshot = self.snapshot if isinstance(self.snapshot, dict) else {}
        config = self.deployment_snapshot.get("deployment_config") or snapshot.get("deployment_config")
        return dict(config) if isinstance(config, dict) else {}


class LaneStatusHistory(models.Model):
    lane = models.ForeignKey(Lane, on_delete=models.CASCADE, related_name="status_history")
    from_status = models.CharField(max_length=16)
    to_status = models.CharField(max_length=16)
    reason = models.TextField(blank=True)
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "runs_runagentstatushistory"  # the lane was called RunAgent until 2026-11
        ordering = ["changed_at", "id"]
        verbose_name_plural = "lane status history"

    def __str__(self) -> str:
        return f"{self.from_status} → {self.to_status}"


class CaseRun(models.Model):
    """One lane × one case × one trial (1, 2, …: repeats of the case; a retry is a new ``attempt`` of the same trial)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="case_runs")
    lane = models.ForeignKey(Lane, on_delete=models.CASCADE, related_name="case_runs")
    case = models.ForeignKey("packs.Case", on_delete=models.PROTECT, related_name="+")
    case_key = models.CharField(max_length=200)
    position = models.PositiveIntegerField(default=0)
    trial = models.PositiveSmallIntegerField(default=1, help_text="Which trial of the case in its lane (1-based; docs/runs.md).")
    status = models.CharField(max_length=16, choices=CaseStatus.choices, default=CaseStatus.QUEUED, db_index=True)
    attempt = models.PositiveIntegerField(default=0)
    stop_reason = models.CharField(max_length=32, blank=True)
    final_output = models.TextField(null=True, blank=True)  # noqa: DJ001 - null = no answer, '' = empty answer
    error = models.TextField(blank=True)
    step_count = models.PositiveIntegerField(default=0)
    tool_call_count = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    total_tokens = models.PositiveBigIntegerField(default=0)
    duration_ms = models.PositiveBigIntegerField(null=True, blank=True)
    verification = models.JSONField(default=dict, blank=True, help_text="Post-execution captures (files, listings, code runs).")
    provider_failure = models.JSONField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True, help_text="When a case_run_execute task was last enqueued.")
    claimed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    score_status = models.CharField(max_length=16, choices=ScoreStatus.choices, default=ScoreStatus.PENDING)
    passed = models.BooleanField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    hosted_bytes = models.PositiveBigIntegerField(
        default=0,
        help_text="Bytes of events stored for the current attempt: what a hosted agent posted, or a native case's events (docs/operations.md, Quotas).",
    )
    regression_case = models.ForeignKey(
        "regression.RegressionCase", on_delete=models.RESTRICT, null=True, blank=True, related_name="case_runs",
        help_text="Set when the case run runs a regression case (its payload snapshot is the case).",
    )  # fmt: skip

    class Meta:
        ordering = ["lane", "position", "trial"]
        constraints = [
            models.UniqueConstraint(fields=["lane", "case_key", "trial"], name="uniq_case_trial_per_lane"),
            models.CheckConstraint(condition=models.Q(trial__gte=1, trial__lte=MAX_REPEATS), name="caserun_trial_range"),
        ]
        indexes = [
            models.Index(fields=["run", "status"]),
            models.Index(fields=["lane", "status"]),
            # The dispatcher's two questions, answered without reading the lane's queued cases
            # (runs/pipeline/advance.py `lane_dispatch`, docs/performance.md): how many are
            # in flight, and which undispatched ones come next.
            models.Index(
                fields=["lane"],
                name="caserun_in_flight",
                condition=models.Q(status="running") | models.Q(status="queued", dispatched_at__isnull=False),
            ),
            models.Index(
                fields=["lane", "position", "id"],
                name="caserun_to_dispatch",
                condition=models.Q(status="queued", dispatched_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.lane} / {self.case_key}" + (f" / trial {self.trial}" if self.trial != 1 else "")

    @property
    def is_terminal(self) -> bool:
        return self.status in CASE_TERMINAL

    @property
    def case_payload(self) -> dict[str, Any]:
        """The case as staged and scored: a regression case's snapshot wins over the pack's Case row."""
        regression = self.regression_case if self.regression_case_id is not None else None
        payload = regression.payload if regression is not None else self.case.payload
        return payload if isinstance(payload, dict) else {}


class RunEvent(models.Model):
    """The canonical event envelope (spec runtime.md §4.4). Append-only."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    lane = models.ForeignKey(Lane, on_delete=models.CASCADE, related_name="events")
    case_run = models.ForeignKey(CaseRun, on_delete=models.CASCADE, related_name="events", null=True, blank=True)
    event_id = models.CharField(max_length=300, unique=True)
    sequence_number = models.PositiveBigIntegerField()
    event_type = models.CharField(max_length=64)
    source = models.CharField(max_length=32)
    occurred_at = models.DateTimeField()
    case_key = models.CharField(max_length=200, blank=True)
    attempt = models.PositiveIntegerField(default=0)
    payload = models.JSONField(default=dict)
    payload_ref = models.CharField(max_length=300, blank=True, help_text="Storage path when the payload exceeded the inline limit.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["lane", "sequence_number"], name="uniq_event_sequence_per_lane")]
        indexes = [models.Index(fields=["run", "id"]), models.Index(fields=["case_run", "sequence_number"])]

    def __str__(self) -> str:
        return f"{self.event_type} #{self.sequence_number}"


class RunArtifact(models.Model):
    """An artifact attached to a run (its events export, a scorecard, a CI report, any upload).

    Lives here, not in ``artifacts``: artifacts sit below packs and know nothing of runs.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="attachments")
    artifact = models.ForeignKey("artifacts.Artifact", on_delete=models.PROTECT, related_name="run_attachments")
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    attached_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    attached_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["attached_at", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "artifact"], name="uniq_run_artifact")]

    def __str__(self) -> str:
        return f"artifact {self.artifact_id} on run {self.run_id}"


class RunShare(models.Model):
    """A read-only public link to a run's report, served at ``/s/<token>/`` (docs/runs.md, "Share
    links"). Only the SHA-256 of the token is stored; the link is shown once, when it is made."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="shares")
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    view_count = models.PositiveIntegerField(default=0)
    last_viewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"share {self.pk} of run {self.run_id}"

    @staticmethod
    def hash(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()


class WorkspaceUsage(Workspace):
    """A workspace seen by its stored bytes against the operator's quotas (the admin's "Workspace
    usage" page; docs/operations.md, Quotas). No table of its own."""

    class Meta:
        proxy = True
        verbose_name = "workspace usage"
        verbose_name_plural = "workspace usage"
