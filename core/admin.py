"""Admin building blocks shared by every app.

An operator's save in the admin is the same write as a member's on a page or through the API:
:class:`ServiceAdmin` hands the cleaned form to the app's service and shows a
:class:`~core.errors.DomainError` it raises as a form error (``form_add_domain_error``, like the
pages). History is :class:`ReadOnlyAdmin`.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from core.errors import DomainError
from core.forms import form_add_domain_error

# Where ServiceAdmin.changeform_view leaves a refused save's error for the second pass.
_ERROR_ATTRIBUTE = "_service_admin_error"


class ReadOnlyAdmin(admin.ModelAdmin):
    """History must not change: visible, never added, edited or deleted (superusers included)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ServiceModelForm(forms.ModelForm):
    """An admin form that only cleans its fields: the service validates the object (``full_clean``,
    constraints, rules across fields and rows) when it saves, as it does for the pages and the API.

    ModelForm's own model validation would check a constraint before the service gets to keep it
    (choosing a second default judge: the service demotes the first one, ``full_clean`` alone
    refuses), so it is switched off here.
    """

    def _post_clean(self) -> None:
        return None  # ModelForm builds and validates the instance here; the service does both


def _form_with_error(form_class: type[forms.ModelForm], error: DomainError) -> type[forms.ModelForm]:
    class FormWithServiceError(form_class):  # type: ignore[valid-type,misc]
        def clean(self) -> dict[str, Any] | None:
            data = super().clean()
            form_add_domain_error(self, error)
            return data

    return FormWithServiceError


class ServiceAdmin(admin.ModelAdmin):
    """A model admin whose adds and changes are the app's services.

    Subclasses implement :meth:`create` (the cleaned form's fields, named like the service's
    arguments) and :meth:`update` (only the fields the operator changed). A ``DomainError`` from
    either rolls the admin's transaction back and shows the form again with the error next to its
    field. ``workspace`` (objects never move between workspaces) and ``locked_on_change`` are
    read-only once the object exists; ``not_on_add`` are fields the create service does not take.
    """

    form = ServiceModelForm
    locked_on_change: tuple[str, ...] = ("workspace",)
    not_on_add: tuple[str, ...] = ()

    def create(self, request: HttpRequest, data: dict[str, Any]) -> Model:
        raise NotImplementedError

    def update(self, request: HttpRequest, obj: Any, changes: dict[str, Any]) -> Model:
        raise NotImplementedError

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        readonly = list(super().get_readonly_fields(request, obj))
        return readonly + [name for name in self.locked_on_change if name not in readonly] if obj is not None else readonly

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:  # names, or tuples of names on one line
        fields = list(super().get_fields(request, obj))
        return [name for name in fields if name not in self.not_on_add] if obj is None else fields

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> type[forms.ModelForm]:
        form_class = super().get_form(request, obj, change=change, **kwargs)
        error = getattr(request, _ERROR_ATTRIBUTE, None)
        return _form_with_error(form_class, error) if error is not None else form_class

    def changeform_view(
        self, request: HttpRequest, object_id: str | None = None, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except DomainError as error:
            # The view's transaction rolled the service's writes back; the second pass validates
            # the same POST, adds the error to the form and renders it (nothing is saved).
            setattr(request, _ERROR_ATTRIBUTE, error)
            return super().changeform_view(request, object_id, form_url, extra_context)

    def save_form(self, request: HttpRequest, form: forms.ModelForm, change: bool) -> Any:
        if not change:
            return self.create(request, dict(form.cleaned_data))
        changes = {name: form.cleaned_data[name] for name in form.changed_data if name in form.cleaned_data}
        return self.update(request, form.instance, changes) if changes else form.instance

    def save_model(self, request: HttpRequest, obj: Any, form: forms.ModelForm, change: bool) -> None:
        return None  # save_form saved it through the service

    def save_related(self, request: HttpRequest, form: forms.ModelForm, formsets: Any, change: bool) -> None:
        # The services write related rows themselves: a ServiceAdmin's inlines are read-only, so
        # saving their formsets writes nothing (and records that for the change message).
        for formset in formsets:
            if formset.has_changed():
                raise ImproperlyConfigured(f"{type(self).__name__}: inlines of a ServiceAdmin must be read-only")
            self.save_formset(request, form, formset, change=change)


class ServiceDeleteAdmin(ServiceAdmin):
    """A :class:`ServiceAdmin` whose deletes are a service too (:meth:`delete`); one it refuses
    (the workspace's last admin) is a message on the object's page, not a server error."""

    def delete(self, request: HttpRequest, obj: Any) -> None:
        raise NotImplementedError

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.delete(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for obj in queryset:
            try:
                self.delete(request, obj)
            except DomainError as error:
                self.message_user(request, f"{obj}: {error.message}", messages.ERROR)

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        try:
            return super().delete_view(request, object_id, extra_context)
        except DomainError as error:
            self.message_user(request, error.message, messages.ERROR)
            return HttpResponseRedirect(request.path.removesuffix("delete/") + "change/")
