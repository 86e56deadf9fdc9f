"""Forms for the compare page and the gate form."""

from __future__ import annotations

from django import forms

from runs.models import Lane, Run
from workspaces.models import Workspace

PICKER_LIMIT = 200


def run_label(run: Run) -> str:
    return f"#{run.pk} {run.name} ({run.get_status_display().lower()})"


class ComparisonForm(forms.Form):
    baseline_run = forms.ModelChoiceField(queryset=Run.objects.none(), label="Baseline run")
    baseline_lane = forms.ModelChoiceField(queryset=Lane.objects.none(), required=False, label="Baseline lane")
    candidate_run = forms.ModelChoiceField(queryset=Run.objects.none(), label="Candidate run")
    candidate_lane = forms.ModelChoiceField(queryset=Lane.objects.none(), required=False, label="Candidate lane")

    def __init__(self, *args: object, workspace: Workspace, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        runs = Run.objects.filter(workspace=workspace).order_by("-created_at", "-id")
        lanes = Lane.objects.filter(workspace=workspace)
        for side in ("baseline", "candidate"):
            field = self.fields[f"{side}_run"]
            field.queryset = runs
            field.label_from_instance = run_label
            field.empty_label = "Pick a run…"
            self.fields[f"{side}_lane"].queryset = lanes
            self.fields[f"{side}_lane"].empty_label = "Its only lane"
            self.fields[f"{side}_lane"].label_from_instance = lambda lane: f"{lane.label} (lane {lane.lane_index + 1})"

    def run_choices(self) -> list[Run]:
        """The picker's runs, newest first, each with its lanes (the picker names the agents of each run)."""
        return list(self.fields["baseline_run"].queryset.prefetch_related("lanes")[:PICKER_LIMIT])


class GateForm(forms.Form):
    policy = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
        help_text="Leave empty for the default policy, or paste a policy as JSON or YAML.",
    )
