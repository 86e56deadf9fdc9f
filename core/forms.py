"""Forms helpers: a service's :class:`~core.errors.DomainError` on a form (the one mapping for
pages and the admin), and typed access to a form's model choice fields (``form.fields`` holds
plain ``Field``s for mypy)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet

from core.errors import DomainError


def form_add_domain_error(form: forms.BaseForm, error: DomainError) -> None:
    """Show a service's error on the form: next to ``error.field`` when the form has that field
    (form field names are the services' argument names), else above the fields."""
    form.add_error(error.field if error.field in form.fields else None, error.message)


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
