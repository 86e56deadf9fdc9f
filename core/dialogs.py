"""Create/edit dialogs shared by the infrastructure and secrets pages.

One view serves three cases: a plain GET/POST renders a full form page (works without
JavaScript), an htmx GET returns an auto-opening ``<dialog>``, and an htmx POST with errors
returns just the form so the errors land next to their fields. Success redirects (htmx:
``HX-Redirect``) to the list with a message. :func:`dialog_save` is the whole walk for a view:
form → service → response, a service's :class:`~core.errors.DomainError` shown on the form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django_htmx.http import HttpResponseClientRedirect

from core.errors import DomainError
from core.forms import form_add_domain_error

T = TypeVar("T")


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


def dialog_save(
    request: HttpRequest,
    *,
    form: forms.Form,
    save: Callable[[dict[str, Any]], T],
    success: Callable[[T], str],
    list_url: str,
    action: str,
    title: str,
    submit_label: str,
    section_title: str,
    form_id: str,
    intro: str = "",
) -> HttpResponse:
    """A create/edit dialog's POST or GET: on a valid POST call ``save(form.cleaned_data)`` (a
    service; the form's field names are its arguments) and redirect to ``list_url`` with
    ``success(obj)``; otherwise (or when the service refuses) answer with the form."""
    if request.method == "POST" and form.is_valid():
        try:
            obj = save(form.cleaned_data)
        except DomainError as error:
            form_add_domain_error(form, error)
        else:
            return dialog_success(request, url=list_url, message=success(obj))
    return dialog_form_response(
        request,
        form=form,
        action=action,
        title=title,
        submit_label=submit_label,
        cancel_url=list_url,
        section_title=section_title,
        form_id=form_id,
        intro=intro,
    )
