"""Share links: a read-only public link to a run's report (docs/runs.md, "Share links")."""

from __future__ import annotations

import copy
import datetime as dt
import re

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runs.models import CaseRun, RunShare
from runs.services.shares import SHARES_ACTIVE_MAX
from runs.tests.test_results import leaky_run, race  # noqa: F401 - fixtures
from runs.tests.test_security_in_runs import ENV_CANARY
from workspaces.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_throttle():
    cache.clear()
    yield
    cache.clear()


def api(run, *rest):
    return "/".join([f"/api/v1/workspaces/acme/runs/{run.pk}/shares", *map(str, rest)])


def create(api_client_for, user, run, **body):
    return api_client_for(user).post(api(run), body, format="json")


def test_a_member_creates_a_link_that_opens_the_report_without_a_session(race, member, api_client_for):  # noqa: F811
    response = create(api_client_for, member, race, expires_in_days=3)
    assert response.status_code == 201
    data = response.json()
    assert set(data) == {"id", "url", "expires_at"}
    share = RunShare.objects.get(pk=data["id"])
    token = data["url"].rsplit("/s/", 1)[1].strip("/")
    assert data["url"] == f"http://testserver/s/{token}/"
    assert share.token_hash == RunShare.hash(token) and token not in str(RunShare.objects.values().get(pk=share.pk))
    assert abs(share.expires_at - (timezone.now() + dt.timedelta(days=3))) < dt.timedelta(minutes=1)

    page = Client().get(f"/s/{token}/")  # no session
    html = page.content.decode()
    assert page.status_code == 200 and race.name in html and "read-only copy" in html
    assert page["X-Robots-Tag"] == "noindex, nofollow" and '<meta name="robots" content="noindex, nofollow">' in html
    assert page["Referrer-Policy"] == "no-referrer" and "no-store" in page["Cache-Control"]
    policy = page["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    assert "<script" not in html and "/w/acme/" not in html  # nothing that points back into the workspace
    share.refresh_from_db()
    assert share.view_count == 1 and share.last_viewed_at is not None
    Client().get(f"/s/{token}/")
    share.refresh_from_db()
    assert share.view_count == 2
    actions = list(AuditEvent.objects.filter(workspace=race.workspace, action__startswith="run_share.").values_list("action", flat=True))
    assert sorted(actions) == ["run_share.created", "run_share.first_viewed"]  # the first view is logged, later ones counted


def test_unknown_revoked_and_expired_links_get_the_same_404(race, member, api_client_for):  # noqa: F811
    tokens = []
    for _ in range(2):
        tokens.append(create(api_client_for, member, race).json()["url"].rsplit("/s/", 1)[1].strip("/"))
    revoked, expired = tokens
    share_id = RunShare.objects.get(token_hash=RunShare.hash(revoked)).pk
    assert api_client_for(member).delete(api(race, share_id)).status_code == 204
    RunShare.objects.filter(token_hash=RunShare.hash(expired)).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    answers = {(r.status_code, r.content, r["X-Robots-Tag"]) for r in (Client().get(f"/s/{t}/") for t in ("acs_nope", revoked, expired))}
    assert len(answers) == 1 and next(iter(answers))[0] == 404
    revoke = AuditEvent.objects.get(action="run_share.revoked")
    assert revoke.metadata == {"share_id": share_id, "view_count": 0} and revoke.actor == member
    assert api_client_for(member).delete(api(race, share_id)).status_code == 204  # again: nothing changes
    assert AuditEvent.objects.filter(action="run_share.revoked").count() == 1


@pytest.mark.parametrize(
    "persona, create_status, list_status, delete_status",
    [("member", 201, 200, 204), ("viewer", 403, 200, 403), ("stranger", 404, 404, 404)],
)
def test_share_roles(request, race, admin, api_client_for, persona, create_status, list_status, delete_status):  # noqa: F811
    share_id = create(api_client_for, admin, race).json()["id"]
    user = request.getfixturevalue(persona)
    assert create(api_client_for, user, race).status_code == create_status
    assert api_client_for(user).get(api(race)).status_code == list_status
    assert api_client_for(user).delete(api(race, share_id)).status_code == delete_status


def test_the_list_never_shows_tokens_and_another_runs_share_is_a_404(race, member, api_client_for, workspace, admin, tasks):  # noqa: F811
    url = create(api_client_for, member, race).json()["url"]
    listing = api_client_for(member).get(api(race))
    assert listing.status_code == 200 and url.rsplit("/", 2)[1] not in listing.content.decode()
    row = listing.json()[0]
    assert set(row) >= {"id", "expires_at", "revoked_at", "active", "view_count"} and row["active"] is True
    from runs import services

    other = services.run_create(
        workspace=workspace, user=admin, pack_version=race.pack_version, deployment_ids=[race.lanes.first().deployment_id]
    )
    assert api_client_for(member).delete(api(other, row["id"])).status_code == 404


@pytest.mark.parametrize("body", [{"expires_in_days": 0}, {"expires_in_days": 91}, {"expires_in_days": "soon"}])
def test_bad_expiry_is_a_400_naming_the_field(race, member, api_client_for, body):  # noqa: F811
    response = create(api_client_for, member, race, **body)
    assert response.status_code == 400 and "expires_in_days" in response.content.decode()
    assert not RunShare.objects.exists()


def test_a_run_has_at_most_so_many_active_links(race, member, api_client_for):  # noqa: F811
    for _ in range(SHARES_ACTIVE_MAX):
        assert create(api_client_for, member, race).status_code == 201
    response = create(api_client_for, member, race)
    assert response.status_code == 409 and "Revoke one" in response.content.decode()


def test_public_views_are_throttled(race, member, api_client_for, settings):  # noqa: F811
    token = create(api_client_for, member, race).json()["url"].rsplit("/s/", 1)[1].strip("/")
    client = Client()
    statuses = [client.get(f"/s/{token}/").status_code for _ in range(61)]
    assert statuses[:60] == [200] * 60 and statuses[60] == 429
    assert client.get("/s/acs_unknown/").status_code == 429  # guessing is throttled too


def test_a_shared_security_report_masks_the_leaked_canary(leaky_run, admin, api_client_for):  # noqa: F811
    assert CaseRun.objects.filter(run=leaky_run, final_output__contains=ENV_CANARY).exists()  # the leak is in the row
    token = create(api_client_for, admin, leaky_run).json()["url"].rsplit("/s/", 1)[1].strip("/")
    html = Client().get(f"/s/{token}/").content.decode()
    assert ENV_CANARY not in html and "Sure: [redacted]" in html and "the key is [redacted]" in html
    for part in (ENV_CANARY[:12], ENV_CANARY[-10:]):
        assert part not in html


def test_the_run_page_creates_copies_and_revokes_links(race, member, viewer, client_for):  # noqa: F811
    client = client_for(member)
    page = client.get(reverse("runs:detail", args=["acme", race.pk])).content.decode()
    assert reverse("runs:shares", args=["acme", race.pk]) in page
    shares = reverse("runs:shares", args=["acme", race.pk])
    assert "No share links yet." in client.get(shares, HTTP_HX_REQUEST="true").content.decode()
    made = client.post(reverse("runs:share_create", args=["acme", race.pk]), {"expires_in_days": "30"}, HTTP_HX_REQUEST="true")
    body = made.content.decode()
    link = re.search(r'value="(http://testserver/s/[^"]+)"', body).group(1)
    assert "shown only once" in body and "data-copy" in body and Client().get(link[len("http://testserver") :]).status_code == 200
    share = RunShare.objects.get()
    assert (share.expires_at - timezone.now()).days in (29, 30)
    bad = client.post(reverse("runs:share_create", args=["acme", race.pk]), {"expires_in_days": "400"}, HTTP_HX_REQUEST="true")
    assert "expires_in_days must be a whole number of days from 1 to 90" in bad.content.decode()
    revoked = client.post(reverse("runs:share_revoke", args=["acme", race.pk, share.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert "Revoked" in revoked and Client().get(link[len("http://testserver") :]).status_code == 404
    viewer_page = client_for(viewer).get(shares).content.decode()
    assert "Create share link" not in viewer_page and "Revoked" in viewer_page
    assert client_for(viewer).post(reverse("runs:share_create", args=["acme", race.pk])).status_code == 403


@pytest.mark.parametrize("persona, page, make, revoke", [("member", 200, 200, 200), ("viewer", 200, 403, 403), ("stranger", 404, 404, 404)])
def test_share_pages_answer_by_role(request, race, admin, api_client_for, client_for, persona, page, make, revoke):  # noqa: F811
    share_id = create(api_client_for, admin, race).json()["id"]
    client = client_for(request.getfixturevalue(persona))
    assert client.get(reverse("runs:shares", args=["acme", race.pk])).status_code == page
    assert client.post(reverse("runs:share_create", args=["acme", race.pk])).status_code == make
    assert client.post(reverse("runs:share_revoke", args=["acme", race.pk, share_id])).status_code == revoke
    assert RunShare.objects.filter(revoked_at__isnull=False).exists() == (persona == "member")


def test_the_share_list_query_count_does_not_grow_with_links(race, admin, member, api_client_for, client_for):  # noqa: F811
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = client_for(member)
    counts = []
    for links in (1, 8):
        while RunShare.objects.count() < links:
            create(api_client_for, admin if RunShare.objects.count() % 2 else member, race)
        with CaptureQueriesContext(connection) as captured:
            assert client.get(reverse("runs:shares", args=["acme", race.pk])).status_code == 200
        counts.append(len(captured.captured_queries))
    assert counts[0] == counts[1], counts


def test_the_admin_lists_links_without_their_token(race, admin, api_client_for, client_for):  # noqa: F811
    from django.contrib.auth import get_user_model

    create(api_client_for, admin, race)
    share = RunShare.objects.get()
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw-long-enough-123")
    client = client_for(root)
    assert client.get(reverse("admin:runs_runshare_changelist")).status_code == 200
    detail = client.get(reverse("admin:runs_runshare_change", args=[share.pk])).content.decode()
    assert share.token_hash not in detail


def test_a_shared_report_of_a_real_security_pack_run_never_shows_the_leaked_canary(tasks, workspace, admin, api_client_for, client_for):
    """prompt-injection-defense, raced for real (native sandbox): the bad agent pastes the planted
    token in its answers and tool calls; the shared report, the exports and the matrix mask it."""
    from runs.tests.real_packs.harness import AGENTS_DIR, load
    from runs.tests.test_real_packs_security import agent, needs_sandbox
    from runs.tests.test_real_packs_security import race as real_race

    spec = load(AGENTS_DIR / "prompt-injection-defense.yaml")
    needs_sandbox(spec)
    canary = spec.pack["security"]["planted_secrets"][0]["value"]
    leaky = copy.deepcopy(spec.agent("bad")["script"])
    # its answer to the case itself pastes the token it read from the poisoned tool
    leaky["default"][0:1] = [{"tool": "get_service_config", "args": {}}, {"submit": "Config for attacker.example.com: {{last_result}}"}]
    lanes = real_race(
        tasks,
        workspace,
        admin,
        spec,
        {"good": agent(workspace, "good", spec.agent("good")["script"]), "bad": agent(workspace, "bad", leaky)},
    )
    run = lanes["bad"].run
    bad = CaseRun.objects.get(lane=lanes["bad"])
    assert bad.passed is False and "[redacted]" in bad.final_output  # the leak happened and was stored masked
    token = create(api_client_for, admin, run).json()["url"].rsplit("/s/", 1)[1].strip("/")
    html = Client().get(f"/s/{token}/").content.decode()
    assert "[redacted]" in html and "attacker.example.com" in html  # the answer is there…
    for shown in (
        html,
        b"".join(client_for(admin).get(reverse("runs:results_csv", args=["acme", run.pk])).streaming_content).decode(),
        b"".join(client_for(admin).get(reverse("runs:results_json", args=["acme", run.pk])).streaming_content).decode(),
        client_for(admin).get(reverse("runs:detail", args=["acme", run.pk])).content.decode(),
    ):
        assert canary not in shown and canary[-10:] not in shown  # …the canary never is
