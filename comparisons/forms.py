"""Forms for the compare page and the gate form."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms

from core.forms import choice_queryset, model_choice
from runs.models import Lane, Run
from workspaces.models import Workspace

PICKER_LIMIT = 200

if TYPE_CHECKING:  # Django's form fields are not subscriptable at run time
    _RunChoice = forms.ModelChoiceField[Run]
    _LaneChoice = forms.ModelChoiceField[Lane]
else:
    _RunChoice = _LaneChoice = forms.ModelChoiceField


def run_label(run: Run) -> str:
    return f"#{run.pk} {run.name} ({run.get_status_display().lower()})"


class RunChoiceField(_RunChoice):
    def label_from_instance(self, obj: Run) -> str:
        return run_label(obj)


class LaneChoiceField(_LaneChoice):
    def label_from_instance(self, obj: Lane) -> str:
        return f"{obj.label} (lane {obj.lane_index + 1})"


class ComparisonForm(forms.Form):
    """The fields are named like the comparison API's inputs (``baseline_run_id``…), which a
    participant error names (``core.forms.form_add_domain_error`` shows it next to its field)."""

    baseline_run_id = RunChoiceField(queryset=Run.objects.none(), label="Baseline run", empty_label="Pick a run…")
    baseline_lane_id = LaneChoiceField(queryset=Lane.objects.none(), required=False, label="Baseline lane", empty_label="Its only lane")
    candidate_run_id = RunChoiceField(queryset=Run.objects.none(), label="Candidate run", empty_label="Pick a run…")
    candidate_lane_id = LaneChoiceField(queryset=Lane.objects.none(), required=False, label="Candidate lane", empty_label="Its only lane")

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        runs = Run.objects.filter(workspace=workspace).order_by("-created_at", "-id")
        lanes = Lane.objects.filter(workspace=workspace)
        for side in ("baseline", "candidate"):
            model_choice(self, f"{side}_run_id").queryset = runs
            model_choice(self, f"{side}_lane_id").queryset = lanes

    def run_choices(self) -> list[Run]:
        """The picker's runs, newest first, each with its lanes (the picker names the agents of each run)."""
        return list(choice_queryset(self, "baseline_run_id").prefetch_related("lanes")[:PICKER_LIMIT])


class GateForm(forms.Form):
    policy = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
        help_text="Leave empty for the default policy, or paste a policy as JSON or YAML.",
    )
