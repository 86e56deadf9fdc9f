"""Challenge packs and their immutable published versions (spec pack-format.md §6)."""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from engine.scoring.aggregate import spec_fingerprint
from engine.scoring.spec import EvaluationSpec


class Pack(models.Model):
    class Lifecycle(models.TextChoices):
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "Active"
        DEPRECATED = "deprecated", "Deprecated"
        ARCHIVED = "archived", "Archived"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="packs")
    slug = models.SlugField(max_length=128)
    name = models.CharField(max_length=200)
    family = models.CharField(max_length=100, blank=True)
    description = models.TextField(blank=True)
    lifecycle_status = models.CharField(max_length=16, choices=Lifecycle.choices, default=Lifecycle.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "slug"], name="uniq_pack_slug_per_workspace")]

    def __str__(self) -> str:
        return self.name


class PackVersion(models.Model):
    """Immutable after publish: only ``lifecycle_status`` may change."""

    class Lifecycle(models.TextChoices):
        DRAFT = "draft", "Draft"
        RUNNABLE = "runnable", "Runnable"
        DEPRECATED = "deprecated", "Deprecated"
        ARCHIVED = "archived", "Archived"

    MUTABLE_FIELDS = frozenset({"lifecycle_status"})

    pack = models.ForeignKey(Pack, on_delete=models.CASCADE, related_name="versions")
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="pack_versions")
    number = models.PositiveIntegerField()
    execution_mode = models.CharField(max_length=32)
    manifest = models.JSONField()
    manifest_checksum = models.CharField(max_length=64)
    raw_yaml = models.TextField()
    # What validation warned about at publish ({"path", "message", "line"} each): legal constructs
    # that probably do not do what the author meant (docs/pack-authoring.md, "Warnings"). None on
    # versions published before warnings were recorded.
    warnings = models.JSONField(null=True, blank=True, default=None)
    lifecycle_status = models.CharField(max_length=16, choices=Lifecycle.choices, default=Lifecycle.RUNNABLE)
    published_at = models.DateTimeField(auto_now_add=True)
    published_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["pack__name", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["pack", "number"], name="uniq_pack_version_number"),
            models.CheckConstraint(condition=models.Q(number__gt=0), name="pack_version_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.pack.name} v{self.number}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            update_fields = kwargs.get("update_fields")
            if update_fields is None or not set(update_fields) <= self.MUTABLE_FIELDS:
                raise ValidationError("A published pack version is immutable; only its lifecycle status can change.")
        super().save(*args, **kwargs)

    @property
    def evaluation_spec_id(self) -> str:
        """The version's evaluation spec, identified by its content: the SHA-256 of its canonical JSON.

        There is no evaluation-spec row (the spec lives in the manifest, immutable with the version),
        so the id is the fingerprint every lane scorecard already carries as
        ``refs.evaluation_spec_fingerprint`` and comparisons match on: two versions with the same
        spec share it (docs/pack-authoring.md, "Validate, then publish").
        """
        spec = (self.manifest or {}).get("evaluation_spec")
        return spec_fingerprint(cast(EvaluationSpec, spec if isinstance(spec, dict) else {}))


class Challenge(models.Model):
    pack_version = models.ForeignKey(PackVersion, on_delete=models.CASCADE, related_name="challenges")
    key = models.CharField(max_length=200)
    title = models.CharField(max_length=500)
    category = models.CharField(max_length=100, blank=True)
    difficulty = models.CharField(max_length=16, blank=True)
    instructions = models.TextField(blank=True)
    execution_order = models.PositiveIntegerField(default=0)
    definition = models.JSONField(default=dict)

    class Meta:
        ordering = ["pack_version", "execution_order"]
        constraints = [models.UniqueConstraint(fields=["pack_version", "key"], name="uniq_challenge_key_per_version")]

    def __str__(self) -> str:
        return self.key


class InputSet(models.Model):
    pack_version = models.ForeignKey(PackVersion, on_delete=models.CASCADE, related_name="input_sets")
    key = models.CharField(max_length=200)
    name = models.CharField(max_length=500, blank=True)
    description = models.TextField(blank=True)
    checksum = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["pack_version", "key"]
        constraints = [models.UniqueConstraint(fields=["pack_version", "key"], name="uniq_input_set_key_per_version")]

    def __str__(self) -> str:
        return self.name or self.key


class Case(models.Model):
    input_set = models.ForeignKey(InputSet, on_delete=models.CASCADE, related_name="cases")
    pack_version = models.ForeignKey(PackVersion, on_delete=models.CASCADE, related_name="cases")
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="cases", null=True, blank=True)
    challenge_key = models.CharField(max_length=200)
    case_key = models.CharField(max_length=200)
    item_key = models.CharField(max_length=200, blank=True)
    position = models.PositiveIntegerField(default=0)
    payload = models.JSONField(default=dict, help_text="The whole normalised case: inputs, expectations, assets, …")

    class Meta:
        ordering = ["input_set", "position"]
        constraints = [models.UniqueConstraint(fields=["input_set", "case_key"], name="uniq_case_key_per_input_set")]

    def __str__(self) -> str:
        return self.case_key
