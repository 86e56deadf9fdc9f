"""Test data builders shared by every app's tests."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model

from workspaces.models import Role, Workspace, WorkspaceMembership

_counter = itertools.count(1)
PASSWORD = "correct-horse-battery"


def make_user(username: str | None = None, **extra: Any) -> Any:
    User = get_user_model()
    username = username or f"user{next(_counter)}"
    user = User.objects.create_user(username=username, email=f"{username}@example.com", password=PASSWORD, **extra)
    return user


def make_workspace(slug: str | None = None, name: str | None = None) -> Workspace:
    slug = slug or f"ws{next(_counter)}"
    return Workspace.objects.create(slug=slug, name=name or slug.title())


def add_member(workspace: Workspace, user: Any, role: str = Role.MEMBER) -> WorkspaceMembership:
    return WorkspaceMembership.objects.create(workspace=workspace, user=user, role=role)
