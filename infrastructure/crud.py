"""One pattern for the infrastructure collections: provider accounts, runtime profiles,
deployments and tool resources.

Each collection states what it is in an :class:`Entity` (its model, noun, the role that manages
it, its list selector and services); its pages add the forms and texts in a :class:`Pages`
(``infrastructure/views.py``) and its API the serializers (``infrastructure/api/views.py``).
Everything else is shared: the views here, the API bases in ``infrastructure/api/crud.py``, the
list page layout ``core/object_list.html`` and the dialogs of ``core/dialogs.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

from django import forms
from django.contrib import messages
from django.db.models import Model, QuerySet
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core.dialogs import dialog_save
from infrastructure import selectors, services
from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile, ToolResource
from workspaces.access import WorkspaceRequest, can, object_get_for_workspace, workspace_view
from workspaces.models import Role, Workspace

M = TypeVar("M", bound=Model)
View = Callable[..., HttpResponse]


@dataclasses.dataclass(frozen=True)
class Entity(Generic[M]):
    """A workspace collection as the pages and the API see it."""

    model: type[M]
    noun: str  # "provider account": messages, titles, URL names (provider_account_…), ids (provider-account-…)
    manage_role: str  # who may create, change and archive (everyone in the workspace may read)
    object_arg: str  # the update and archive services' keyword for the object: account=, profile=…
    select: Callable[..., QuerySet[M]]  # selector(workspace=, include_archived=)
    create: Callable[..., M]  # service(workspace=, actor=, **fields)
    update: Callable[..., M]  # service(<object_arg>=, actor=, **fields)
    archive: Callable[..., M]  # service(<object_arg>=, actor=)
    related: tuple[str, ...] = ("workspace",)  # select_related for one object (what its output reads)

    @property
    def plural(self) -> str:
        return f"{self.noun}s"

    @property
    def with_article(self) -> str:
        return f"{'an' if self.noun[0] in 'aeiou' else 'a'} {self.noun}"

    @property
    def url_stem(self) -> str:
        return self.noun.replace(" ", "_")

    @property
    def html_id(self) -> str:
        return self.noun.replace(" ", "-")

    def get(self, *, workspace: Workspace, pk: Any) -> M:
        """One object of this workspace by user-supplied id (the access helper: another workspace's is a 404)."""
        return object_get_for_workspace(self.model._default_manager.select_related(*self.related), workspace=workspace, pk=pk)

    def save(self, obj: M | None, *, workspace: Workspace, actor: Any, fields: dict[str, Any]) -> M:
        """Create (``obj`` None) or change through the services; their field names are the forms' and serializers'."""
        if obj is None:
            return self.create(workspace=workspace, actor=actor, **fields)
        return self.update(**{self.object_arg: obj}, actor=actor, **fields)

    def archive_one(self, obj: M, *, actor: Any) -> M:
        return self.archive(**{self.object_arg: obj}, actor=actor)


def _no_extras(workspace: Workspace) -> dict[str, Any]:
    return {}


def _name(obj: Model) -> str:
    return str(getattr(obj, "name", obj))


@dataclasses.dataclass(frozen=True)
class Pages(Generic[M]):
    """What a collection's pages add to its :class:`Entity`: forms and the words around them."""

    entity: Entity[M]
    form: type[forms.Form]  # its field names are the services' arguments
    edit_form: type[forms.Form] | None = None  # when editing offers other fields (a provider account's status)
    form_kwargs: Callable[[Workspace], dict[str, Any]] = _no_extras  # e.g. the workspace whose objects a choice offers
    list_context: Callable[[Workspace], dict[str, Any]] = _no_extras  # more for the list template (its empty state)
    intro: str = ""  # above the create form
    edit_intro: str = ""
    created_note: str = ""  # after “<Noun> “name” created.”
    saved_note: str = ""  # after “<Noun> “name” saved.”
    archive_note: str = ""  # after “Archive <name>?” in the archive button's confirmation

    @property
    def template(self) -> str:
        return f"infrastructure/{self.entity.url_stem}s.html"

    def url(self, action: str, request: WorkspaceRequest, *args: Any) -> str:
        """``infra:<stem>s`` for the list, ``infra:<stem>_<action>`` for the others."""
        name = f"{self.entity.url_stem}s" if action == "list" else f"{self.entity.url_stem}_{action}"
        return reverse(f"infra:{name}", args=[request.workspace.slug, *args])


def object_list(request: WorkspaceRequest, pages: Pages[Any]) -> HttpResponse:
    entity = pages.entity
    show_archived = request.GET.get("archived") == "1"
    form = pages.form(**pages.form_kwargs(request.workspace))
    context = {
        "title": entity.plural.capitalize(),
        "objects": entity.select(workspace=request.workspace, include_archived=show_archived),
        "can_manage": can(request.membership, entity.manage_role),
        "show_archived": show_archived,
        "archivable": True,
        "table_id": f"{entity.html_id}s-table",
        "edit_url_name": f"infra:{entity.url_stem}_edit",
        "archive_url_name": f"infra:{entity.url_stem}_archive",
        "archive_note": pages.archive_note,
        # the create dialog the list page holds
        "form": form,
        "action": pages.url("create", request),
        "cancel_url": pages.url("list", request),
        "form_id": f"{entity.html_id}-form",
        "submit_label": "Create",
        "new_label": f"New {entity.noun}",
        "intro": pages.intro,
        **pages.list_context(request.workspace),
    }
    return render(request, pages.template, context)


def _dialog(request: WorkspaceRequest, pages: Pages[M], *, form: forms.Form, obj: M | None) -> HttpResponse:
    entity = pages.entity
    noun = entity.noun.capitalize()
    if obj is None:
        title, submit, form_id, intro, done = f"New {entity.noun}", "Create", f"{entity.html_id}-form", pages.intro, "created"
        action, note = pages.url("create", request), pages.created_note
    else:
        title, submit, form_id, intro, done = f"Edit {_name(obj)}", "Save", f"{entity.html_id}-edit-form", pages.edit_intro, "saved"
        action, note = pages.url("edit", request, obj.pk), pages.saved_note
    return dialog_save(
        request,
        form=form,
        save=lambda data: entity.save(obj, workspace=request.workspace, actor=request.user, fields=data),
        success=lambda saved: f"{noun} “{_name(saved)}” {done}.{f' {note}' if note else ''}",
        list_url=pages.url("list", request),
        action=action,
        title=title,
        submit_label=submit,
        section_title=entity.plural.capitalize(),
        form_id=form_id,
        intro=intro,
    )


def object_create(request: WorkspaceRequest, pages: Pages[Any]) -> HttpResponse:
    form = pages.form(request.POST or None, **pages.form_kwargs(request.workspace))
    return _dialog(request, pages, form=form, obj=None)


def object_edit(request: WorkspaceRequest, pages: Pages[Any], pk: int) -> HttpResponse:
    obj = pages.entity.get(workspace=request.workspace, pk=pk)
    form_class = pages.edit_form or pages.form
    initial = {name: getattr(obj, name) for name in form_class.base_fields if hasattr(obj, name)}
    form = form_class(request.POST or None, initial=initial, **pages.form_kwargs(request.workspace))
    return _dialog(request, pages, form=form, obj=obj)


def object_archive(request: WorkspaceRequest, pages: Pages[Any], pk: int) -> HttpResponse:
    obj = pages.entity.get(workspace=request.workspace, pk=pk)
    pages.entity.archive_one(obj, actor=request.user)
    messages.success(request, f"{pages.entity.noun.capitalize()} “{_name(obj)}” archived.")
    return redirect(pages.url("list", request))


class CrudViews(NamedTuple):
    list: View
    create: View
    edit: View
    archive: View


def crud_views(pages: Pages[Any]) -> CrudViews:
    """The collection's four views, with their access rules: everyone in the workspace lists,
    ``manage_role`` creates, edits and archives (a lower role gets 403, a stranger 404)."""
    role = pages.entity.manage_role

    @workspace_view()
    def list_view(request: WorkspaceRequest) -> HttpResponse:
        return object_list(request, pages)

    @workspace_view(role=role)
    @require_http_methods(["GET", "POST"])
    def create_view(request: WorkspaceRequest) -> HttpResponse:
        return object_create(request, pages)

    @workspace_view(role=role)
    @require_http_methods(["GET", "POST"])
    def edit_view(request: WorkspaceRequest, pk: int) -> HttpResponse:
        return object_edit(request, pages, pk)

    @workspace_view(role=role)
    @require_POST
    def archive_view(request: WorkspaceRequest, pk: int) -> HttpResponse:
        return object_archive(request, pages, pk)

    return CrudViews(list_view, create_view, edit_view, archive_view)


# ------------------------------------------------------------------------------ the collections
PROVIDER_ACCOUNTS = Entity(
    model=ProviderAccount,
    noun="provider account",
    manage_role=Role.ADMIN,
    object_arg="account",
    select=selectors.provider_account_list,
    create=services.provider_account_create,
    update=services.provider_account_update,
    archive=services.provider_account_archive,
)
RUNTIME_PROFILES = Entity(
    model=RuntimeProfile,
    noun="runtime profile",
    manage_role=Role.MEMBER,
    object_arg="profile",
    select=selectors.runtime_profile_list,
    create=services.runtime_profile_create,
    update=services.runtime_profile_update,
    archive=services.runtime_profile_archive,
)
DEPLOYMENTS = Entity(
    model=AgentDeployment,
    noun="deployment",
    manage_role=Role.MEMBER,
    object_arg="deployment",
    select=selectors.deployment_list,
    create=services.deployment_create,
    update=services.deployment_update,
    archive=services.deployment_archive,
    related=("workspace", "provider_account", "runtime_profile"),
)
TOOL_RESOURCES = Entity(
    model=ToolResource,
    noun="tool resource",
    manage_role=Role.ADMIN,
    object_arg="tool",
    select=selectors.tool_resource_list,
    create=services.tool_resource_create,
    update=services.tool_resource_update,
    archive=services.tool_resource_archive,
)
