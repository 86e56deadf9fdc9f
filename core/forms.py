"""Typed access to a form's model choice fields (``form.fields`` holds plain ``Field``s for mypy)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet


def model_choice(form: forms.BaseForm, name: str) -> forms.ModelChoiceField[Any]:
    """The form's (multiple) model choice field ``name``, to set its queryset, labels or empty label."""
    field = form.fields[name]
    if not isinstance(field, forms.ModelChoiceField):
        raise TypeError(f"{name} is not a model choice field")
    return field


def choice_queryset(form: forms.BaseForm, name: str) -> QuerySet[Any]:
    """The objects the model choice field ``name`` offers."""
    queryset = model_choice(form, name).queryset
    if queryset is None:
        raise TypeError(f"{name} has no queryset")
    return queryset
