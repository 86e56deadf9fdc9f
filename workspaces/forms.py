from __future__ import annotations

from typing import Any

from django import forms
from django.utils.text import slugify

from workspaces.models import Role, TokenScope, Workspace


class WorkspaceCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=64, required=False, help_text="Used in URLs. Leave blank to derive it from the name.")

    def clean(self) -> dict:
        super().clean()
        data = self.cleaned_data
        slug = (data.get("slug") or slugify(data.get("name") or ""))[:64]
        if not slug:
            self.add_error("slug", "Enter a slug made of letters, numbers, hyphens or underscores.")
        elif Workspace.objects.filter(slug=slug).exists():
            self.add_error("slug", f"The slug “{slug}” is taken. Choose another.")
        data["slug"] = slug
        return data


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150, help_text="The user name of someone who already has an account.")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class InvitationForm(forms.Form):
    email = forms.EmailField(help_text="They join by opening the link, signed in with this email.")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)
    days = forms.IntegerField(min_value=1, max_value=30, initial=7, help_text="Days before the invitation expires.")


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class ApiTokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100)
    scope = forms.ChoiceField(
        choices=TokenScope.choices,
        initial=TokenScope.ADMIN,
        required=False,
        help_text="Read only; read and run (start runs, gate); or full (blank: full).",
    )
    workspace = forms.ChoiceField(required=False, help_text="Limit the token to one workspace (blank: every workspace of yours).")
    expires_in_days = forms.IntegerField(min_value=1, max_value=3650, required=False, help_text="Leave blank for no expiry.")

    def __init__(self, *args: Any, workspaces: list[tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["workspace"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "Every workspace"), *(workspaces or [])]
