"""The new-run form: pack version → input set → deployments → name."""

from __future__ import annotations

from typing import Any

from django import forms

from core.forms import choice_queryset, model_choice
from infrastructure.models import AgentDeployment, LifecycleStatus
from packs.models import InputSet, PackVersion
from packs.selectors import pack_versions_runnable
from workspaces.models import Workspace


class RunCreateForm(forms.Form):
    pack_version = forms.ModelChoiceField(queryset=PackVersion.objects.none(), label="Pack version", empty_label="Choose a pack version…")
    input_set = forms.ModelChoiceField(
        queryset=InputSet.objects.none(), required=False, label="Input set", empty_label="Choose an input set…"
    )
    deployments = forms.ModelMultipleChoiceField(
        queryset=AgentDeployment.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        label="Agents",
        help_text="Each deployment races through every case in its own lane.",
    )
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to the pack version and the time.")

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspace = workspace
        model_choice(self, "pack_version").queryset = pack_versions_runnable(workspace=workspace)
        model_choice(self, "deployments").queryset = AgentDeployment.objects.filter(
            workspace=workspace, status=LifecycleStatus.ACTIVE
        ).order_by("name")
        version = self.selected_version()
        if version is not None:
            sets = InputSet.objects.filter(pack_version=version).order_by("key")
            model_choice(self, "input_set").queryset = sets
            only = sets.first() if sets.count() == 1 else None
            if only is not None:
                self.fields["input_set"].widget = forms.HiddenInput()
                self.fields["input_set"].initial = only.pk
                self.single_input_set = only

    single_input_set: InputSet | None = None

    def selected_version(self) -> PackVersion | None:
        raw = self.data.get("pack_version") if self.is_bound else self.initial.get("pack_version")
        if raw in (None, ""):
            return None
        try:
            return choice_queryset(self, "pack_version").filter(pk=int(raw)).first()
        except (TypeError, ValueError):
            return None

    def preview(self) -> str:
        """ "2 agents × 40 cases", from whatever is chosen so far."""
        version = self.selected_version()
        if version is None:
            return ""
        raw_set = (self.data.get("input_set") if self.is_bound else None) or (self.single_input_set.pk if self.single_input_set else None)
        input_set = None
        if raw_set:
            try:
                input_set = choice_queryset(self, "input_set").filter(pk=int(raw_set)).first()
            except (TypeError, ValueError):
                input_set = None
        cases = input_set.cases.count() if input_set else None
        agents = len(self.data.getlist("deployments")) if self.is_bound and hasattr(self.data, "getlist") else 0
        agent_text = f"{agents} agent{'s' if agents != 1 else ''}"
        case_text = f"{cases} case{'s' if cases != 1 else ''}" if cases is not None else "? cases (choose an input set)"
        total = f" = {agents * cases} case runs" if cases and agents else ""
        return f"{agent_text} × {case_text}{total}"
