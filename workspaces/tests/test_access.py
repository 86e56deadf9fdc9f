"""Three personas on every foundation page and endpoint: right role, lower role, stranger."""

from __future__ import annotations

import pytest
from django.urls import reverse

from workspaces.models import Role, WorkspaceMembership

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url_name", ["workspaces:dashboard", "workspaces:members"])
def test_it_shows_workspace_pages_to_viewers(client_for, viewer, workspace, url_name):
    response = client_for(viewer).get(reverse(url_name, args=[workspace.slug]))
    assert response.status_code == 200
    assert workspace.name.encode() in response.content


@pytest.mark.parametrize("url_name", ["workspaces:dashboard", "workspaces:members"])
def test_it_hides_workspace_pages_from_strangers(client_for, stranger, workspace, url_name):
    response = client_for(stranger).get(reverse(url_name, args=[workspace.slug]))
    assert response.status_code == 404


def test_it_sends_anonymous_users_to_login(client, workspace):
    response = client.get(reverse("workspaces:dashboard", args=[workspace.slug]))
    assert response.status_code == 302
    assert reverse("login") in response["Location"]


def test_it_returns_404_for_unknown_workspace(client_for, admin):
    assert client_for(admin).get("/w/does-not-exist/").status_code == 404


def test_it_lets_admins_add_members(client_for, admin, workspace, django_user_model):
    user = django_user_model.objects.create_user("newbie")
    response = client_for(admin).post(reverse("workspaces:member_add", args=[workspace.slug]), {"username": "newbie", "role": "viewer"})
    assert response.status_code == 302
    assert WorkspaceMembership.objects.get(workspace=workspace, user=user).role == Role.VIEWER


def test_it_forbids_members_from_adding_members(client_for, member, workspace, django_user_model):
    newbie = django_user_model.objects.create_user("newbie")
    response = client_for(member).post(reverse("workspaces:member_add", args=[workspace.slug]), {"username": "newbie", "role": "admin"})
    assert response.status_code == 403
    assert not WorkspaceMembership.objects.filter(workspace=workspace, user=newbie).exists()


def test_it_hides_member_management_from_strangers(client_for, stranger, admin, workspace):
    membership = WorkspaceMembership.objects.get(user=admin, workspace=workspace)
    response = client_for(stranger).post(reverse("workspaces:member_remove", args=[workspace.slug, membership.pk]))
    assert response.status_code == 404
    assert WorkspaceMembership.objects.filter(pk=membership.pk).exists()


def test_it_refuses_to_remove_the_last_admin(client_for, admin, workspace):
    membership = WorkspaceMembership.objects.get(user=admin, workspace=workspace)
    client_for(admin).post(reverse("workspaces:member_remove", args=[workspace.slug, membership.pk]))
    assert WorkspaceMembership.objects.filter(pk=membership.pk).exists()


def test_it_refuses_to_demote_the_last_admin(client_for, admin, workspace):
    membership = WorkspaceMembership.objects.get(user=admin, workspace=workspace)
    client_for(admin).post(reverse("workspaces:member_update", args=[workspace.slug, membership.pk]), {"role": "viewer"})
    membership.refresh_from_db()
    assert membership.role == Role.ADMIN


def test_it_changes_roles(client_for, admin, member, workspace):
    membership = WorkspaceMembership.objects.get(user=member, workspace=workspace)
    client_for(admin).post(reverse("workspaces:member_update", args=[workspace.slug, membership.pk]), {"role": "viewer"})
    membership.refresh_from_db()
    assert membership.role == Role.VIEWER


def test_it_cannot_touch_another_workspaces_membership_by_id(client_for, admin, stranger, other_workspace, workspace):
    foreign = WorkspaceMembership.objects.get(user=stranger, workspace=other_workspace)
    response = client_for(admin).post(reverse("workspaces:member_remove", args=[workspace.slug, foreign.pk]))
    assert response.status_code == 404
    assert WorkspaceMembership.objects.filter(pk=foreign.pk).exists()


def test_the_members_list_runs_a_fixed_number_of_queries(client_for, admin, workspace, django_assert_max_num_queries):
    from workspaces.tests.factories import add_member, make_user

    for _ in range(15):
        add_member(workspace, make_user())
    client = client_for(admin)
    with django_assert_max_num_queries(12):
        response = client.get(reverse("workspaces:members", args=[workspace.slug]))
    assert response.status_code == 200
