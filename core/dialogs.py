"""Create/edit dialogs shared by the infrastructure and secrets pages.

One view serves three cases: a plain GET/POST renders a full form page (works without
JavaScript), an htmx GET returns an auto-opening ``<dialog>``, and an htmx POST with errors
returns just the form so the errors land next to their fields. Success redirects (htmx:
``HX-Redirect``) to the list with a message.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRedirect


def dialog_form_response(
    request: HttpRequest,
    *,
    form: forms.Form,
    action: str,
    title: str,
    submit_label: str,
    cancel_url: str,
    section_title: str,
    form_id: str,
    intro: str = "",
) -> HttpResponse:
    context = {
        "form": form,
        "action": action,
        "title": title,
        "submit_label": submit_label,
        "cancel_url": cancel_url,
        "section_title": section_title,
        "form_id": form_id,
        "dialog_id": f"{form_id}-dialog",
        "intro": intro,
        "autoopen": True,
    }
    if getattr(request, "htmx", False):
        # The list page already holds the "new" dialog's fields (id_name, …): a dialog fetched next
        # to it names its fields after its form, so every label points at its own field.
        form.auto_id = f"{form_id}-%s"
        template = "core/_form.html" if request.method == "POST" else "core/_dialog.html"
        return render(request, template, context)
    return render(request, "core/form_page.html", context)


def dialog_success(request: HttpRequest, *, url: str, message: str) -> HttpResponse:
    messages.success(request, message)
    if getattr(request, "htmx", False):
        return HttpResponseClientRedirect(url)
    return redirect(url)


def add_service_errors(form: forms.Form, exc: ValidationError) -> None:
    """Put a service's ValidationError next to the form's fields (unknown keys go on top)."""
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc.messages)
        return
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)
