from __future__ import annotations

from django import forms

from artifacts.models import ArtifactKind


class ArtifactUploadForm(forms.Form):
    file = forms.FileField(
        allow_empty_file=True, help_text="Text (txt, md, csv, json, jsonl, yaml), PDF, PNG, JPEG, GIF, WebP, zip or gzip."
    )


class ArtifactFilterForm(forms.Form):
    kind = forms.ChoiceField(required=False, choices=[("", "Every kind"), *ArtifactKind.choices])
