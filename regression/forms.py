"""Forms of the regression pages: a new suite, promoting a failed case."""

from __future__ import annotations

from typing import Any

from django import forms

from core.forms import model_choice
from packs.models import Pack
from regression.models import RegressionCase, RegressionSuite
from workspaces.models import Workspace


class SuiteCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    pack = forms.ModelChoiceField(queryset=Pack.objects.none(), empty_label="Choose the pack…", help_text="Its failed cases go in.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model_choice(self, "pack").queryset = Pack.objects.filter(workspace=workspace).order_by("name")


class SuiteEditForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class PromoteForm(forms.Form):
    suite = forms.ModelChoiceField(queryset=RegressionSuite.objects.none(), empty_label=None, label="Suite")
    severity = forms.ChoiceField(choices=RegressionCase.Severity.choices, initial=RegressionCase.Severity.BLOCKING)

    def __init__(self, *args: Any, workspace: Workspace, pack_id: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model_choice(self, "suite").queryset = RegressionSuite.objects.filter(
            workspace=workspace, pack_id=pack_id, archived_at__isnull=True
        ).order_by("name")
