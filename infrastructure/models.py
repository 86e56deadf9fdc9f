"""Workspace infrastructure: provider accounts, runtime profiles, agent deployments, tool resources.

These tables were created by the ``workspaces`` app; they keep their names (``db_table``) so
existing databases move over without copying a row (see migrations/0001_initial.py).
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from workspaces.models import Workspace


class LifecycleStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    ARCHIVED = "archived", "Archived"


class ProviderKey(models.TextChoices):
    SCRIPTED = "scripted", "Scripted (offline, deterministic)"
    OPENAI = "openai", "OpenAI / OpenAI-compatible"
    ANTHROPIC = "anthropic", "Anthropic"
    GEMINI = "gemini", "Google Gemini"
    XAI = "xai", "xAI (Grok)"
    OPENROUTER = "openrouter", "OpenRouter"
    MISTRAL = "mistral", "Mistral AI"
    CUSTOM = "custom", "Custom OpenAI-compatible server (base URL required)"


class ProviderAccount(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        ERROR = "error", "Error"
        ARCHIVED = "archived", "Archived"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="provider_accounts")
    name = models.CharField(max_length=200)
    provider_key = models.CharField(max_length=32, choices=ProviderKey.choices)
    credential_reference = models.CharField(max_length=200, blank=True, help_text="workspace-secret://KEY")
    base_url = models.URLField(max_length=500, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    last_test_status = models.CharField(max_length=16, blank=True)
    last_test_message = models.CharField(max_length=500, blank=True)
    last_tested_at = models.DateTimeField(null=True, blank=True)
    # Limits shared by every worker (runs/throttle/, docs/provider-limits.md); blank = no limit.
    max_concurrent_calls = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)], help_text="Model calls in flight at once, across all workers"
    )
    requests_per_minute = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)], help_text="Model calls started in any 60 seconds"
    )
    tokens_per_minute = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)], help_text="Tokens (input + output) used in any 60 seconds"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "workspaces_provideraccount"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="uniq_provider_account_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.provider_key})"

    @property
    def is_archived(self) -> bool:
        return self.status == self.Status.ARCHIVED

    @property
    def limits(self) -> dict[str, int]:
        """The limits that are set, by field name (what runs/throttle/ enforces)."""
        return {name: value for name in PROVIDER_LIMIT_FIELDS if (value := getattr(self, name)) is not None}


PROVIDER_LIMIT_FIELDS = ("max_concurrent_calls", "requests_per_minute", "tokens_per_minute")


class ProviderCallLease(models.Model):
    """One model call counted against its provider account's limits (the database backend of
    ``runs/throttle/``; with Redis these live in Redis instead).

    ``lease_expires_at`` is set while the call runs (a concurrency slot) and cleared when it ends;
    a worker killed mid-call leaks its slot only until then. ``started_at`` and ``tokens`` feed
    the per-minute windows; rows older than a minute whose lease ended are deleted as calls go.
    """

    account = models.ForeignKey(ProviderAccount, on_delete=models.CASCADE, related_name="+")
    token = models.CharField(max_length=64, unique=True)
    started_at = models.DateTimeField()
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    tokens = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["account", "started_at"])]

    def __str__(self) -> str:
        return f"call {self.token} on account {self.account_id}"


class ExecutionTarget(models.TextChoices):
    NATIVE = "native", "Native (agent loop with tools)"
    PROMPT_EVAL = "prompt_eval", "Prompt eval (one model call)"
    MULTI_TURN = "multi_turn", "Multi-turn (user simulator)"
    RESPONSES = "responses", "Responses (OpenAI Responses API)"  # docs/responses-mode.md
    # The agent runs on the team's own server; the worker hands it each case (docs/hosted-agents.md).
    HOSTED_EXTERNAL = "hosted_external", "Hosted external (the team's HTTPS endpoint)"


class RuntimeProfile(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="runtime_profiles")
    name = models.CharField(max_length=200)
    execution_target = models.CharField(max_length=32, choices=ExecutionTarget.choices, default=ExecutionTarget.NATIVE)
    max_iterations = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)])
    max_tool_calls = models.PositiveIntegerField(default=0, help_text="0 = unlimited")
    step_timeout_seconds = models.PositiveIntegerField(default=60, validators=[MinValueValidator(1)])
    run_timeout_seconds = models.PositiveIntegerField(default=300, validators=[MinValueValidator(1)])
    max_in_flight_cases = models.PositiveIntegerField(default=8, validators=[MinValueValidator(1)])
    allow_shell = models.BooleanField(null=True, blank=True, help_text="Override the pack's sandbox (blank = pack decides)")
    allow_network = models.BooleanField(null=True, blank=True, help_text="Override the pack's sandbox (blank = pack decides)")
    max_workspace_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=LifecycleStatus.choices, default=LifecycleStatus.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "workspaces_runtimeprofile"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="uniq_runtime_profile_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def is_archived(self) -> bool:
        return self.status == LifecycleStatus.ARCHIVED


class AgentDeployment(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="deployments")
    name = models.CharField(max_length=200)
    provider_account = models.ForeignKey(ProviderAccount, on_delete=models.PROTECT, related_name="deployments")
    model = models.CharField(max_length=200)
    runtime_profile = models.ForeignKey(RuntimeProfile, on_delete=models.PROTECT, related_name="deployments")
    system_prompt = models.TextField(blank=True)
    output_schema = models.JSONField(null=True, blank=True)
    deployment_config = models.JSONField(default=dict, blank=True)
    endpoint_url = models.URLField(
        max_length=500,
        blank=True,
        help_text="Hosted agents only: the HTTPS endpoint the worker posts each case to (docs/hosted-agents.md).",
    )
    status = models.CharField(max_length=16, choices=LifecycleStatus.choices, default=LifecycleStatus.ACTIVE)
    is_default_judge = models.BooleanField(
        default=False,
        help_text="The workspace's default judge: new runs use it for an LLM judge model no deployment matches exactly.",
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "workspaces_agentdeployment"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="uniq_deployment_name"),
            models.UniqueConstraint(
                fields=["workspace"],
                condition=models.Q(is_default_judge=True),
                name="one_default_judge_per_workspace",
                violation_error_message="This workspace already has a default judge deployment; unset that one first.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_archived(self) -> bool:
        return self.status == LifecycleStatus.ARCHIVED


class ToolResource(models.Model):
    class ToolKind(models.TextChoices):
        PRIMITIVE = "primitive", "Primitive"
        COMPOSED = "composed", "Composed"

    class Lifecycle(models.TextChoices):
        ACTIVE = "active", "Active"
        DISABLED = "disabled", "Disabled"
        ARCHIVED = "archived", "Archived"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="tool_resources")
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100)
    tool_kind = models.CharField(max_length=16, choices=ToolKind.choices)
    capability_key = models.CharField(max_length=100)
    definition = models.JSONField(default=dict, blank=True)
    lifecycle_status = models.CharField(max_length=16, choices=Lifecycle.choices, default=Lifecycle.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "workspaces_toolresource"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "slug"], name="uniq_tool_resource_slug")]

    def __str__(self) -> str:
        return self.name

    @property
    def is_archived(self) -> bool:
        return self.lifecycle_status == self.Lifecycle.ARCHIVED


class ModelPrice(models.Model):
    """A workspace's price for a model, edited by operators in the admin (docs/scoring.md, Cost).

    Scoring prices a model from the pack's own ``pricing`` rows first, then these rows, then the
    price library; a row here corrects or adds to the library for this workspace only. A blank
    ``provider_key`` prices the model whatever the provider.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="model_prices")
    provider_key = models.CharField(max_length=32, blank=True, help_text="e.g. openai, anthropic; blank = any provider")
    provider_model_id = models.CharField(max_length=200, help_text="The model id as the deployment names it, e.g. gpt-4o")
    input_cost_per_million_tokens = models.DecimalField(max_digits=14, decimal_places=6, validators=[MinValueValidator(0)])
    output_cost_per_million_tokens = models.DecimalField(max_digits=14, decimal_places=6, validators=[MinValueValidator(0)])
    note = models.CharField(max_length=300, blank=True, help_text="Where the price comes from (a contract, a price page)")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["provider_key", "provider_model_id"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "provider_key", "provider_model_id"], name="uniq_model_price"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def name(self) -> str:
        return f"{self.provider_key or '*'}/{self.provider_model_id}"

    def as_pricing_row(self) -> dict[str, object]:
        """The evaluation spec's ``pricing.models`` row shape, which the engine reads."""
        return {
            "provider_key": self.provider_key,
            "provider_model_id": self.provider_model_id,
            "input_cost_per_million_tokens": float(self.input_cost_per_million_tokens),
            "output_cost_per_million_tokens": float(self.output_cost_per_million_tokens),
        }


class SandboxTemplate(models.Model):
    """An operator's sandbox template, chosen by a pack's ``sandbox.sandbox_template_id``
    (docs/operations.md, "Sandbox templates"): Debian packages installed like the pack's
    ``additional_packages``, and host paths under ``/opt`` bound read-only at the same path.
    Installation-wide: operators edit them in the admin or the API; packs only name them."""

    template_id = models.SlugField(max_length=100, unique=True, help_text="What packs write in sandbox.sandbox_template_id")
    name = models.CharField(max_length=200)
    packages = models.JSONField(default=list, blank=True, help_text="Debian package names, installed into every sandbox of the pack")
    read_only_paths = models.JSONField(
        default=list, blank=True, help_text="Absolute host paths under /opt/, bound read-only at the same path in the sandbox"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["template_id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.template_id})"
