from __future__ import annotations

from django import forms
from django.utils.text import slugify

from workspaces.models import Role, Workspace


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


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class ApiTokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100)
    expires_in_days = forms.IntegerField(min_value=1, max_value=3650, required=False, help_text="Leave blank for no expiry.")
