"""``ci run --pr-comment``'s sticky comment against a fake GitHub REST API on loopback."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from agentclash_cli import github

from .fake_http import Reply, fake_server

REPO = "acme/agent"


class FakeGitHub:
    """Issue comments of pull request 7 of acme/agent; ``GET /user`` refused as for GITHUB_TOKEN."""

    def __init__(self, comments: list[dict[str, Any]] | None = None, *, fail: list[Reply] | None = None) -> None:
        self.comments = comments or []
        self.fail = list(fail or [])
        self.next_id = 1000

    def route(self, method: str, path: str, body: Any, headers: dict[str, str]) -> Reply:
        if headers.get("authorization") != "Bearer ghs_test":
            return 401, {}, {"message": "Bad credentials"}
        if self.fail:
            return self.fail.pop(0)
        if path == "/user":
            return 403, {}, {"message": "Resource not accessible by integration"}
        listing = re.fullmatch(rf"/repos/{REPO}/issues/7/comments\?per_page=100&page=(\d+)", path)
        if method == "GET" and listing:
            page = int(listing.group(1))
            return 200, {}, self.comments[(page - 1) * 100 : page * 100]
        if method == "POST" and path == f"/repos/{REPO}/issues/7/comments":
            self.next_id += 1
            comment = {
                "id": self.next_id,
                "body": body["body"],
                "user": {"login": "github-actions[bot]"},
                "html_url": f"https://gh/c/{self.next_id}",
            }
            self.comments.append(comment)
            return 201, {}, comment
        edit = re.fullmatch(rf"/repos/{REPO}/issues/comments/(\d+)", path)
        if method == "PATCH" and edit:
            comment = next(c for c in self.comments if c["id"] == int(edit.group(1)))
            comment["body"] = body["body"]
            return 200, {}, comment
        return 404, {}, {"message": "Not Found"}


def env(url: str, **extra: str) -> dict[str, str]:
    return {"GITHUB_TOKEN": "ghs_test", "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": url, **extra}


def test_the_pull_request_comes_from_the_flag_the_event_or_the_ref(tmp_path):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 12}}))
    base = {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": REPO}
    assert github.pull_request({**base, "GITHUB_EVENT_PATH": str(event)})[0].number == 12
    assert github.pull_request({**base, "GITHUB_REF": "refs/pull/34/merge"})[0].number == 34
    assert github.pull_request({**base, "GITHUB_REF": "refs/pull/34/merge"}, 56)[0].number == 56
    pr, _ = github.pull_request({**base, "GITHUB_REF": "refs/pull/34/merge"})
    assert pr.api_url == "https://api.github.com"
    none, why = github.pull_request({"GITHUB_REPOSITORY": REPO, "GITHUB_REF": "refs/heads/main"})
    assert none is None
    assert why.startswith("no GITHUB_TOKEN, the pull request number")
    bad, why = github.pull_request({**base, "GITHUB_REPOSITORY": "acme/agent/../x"}, 1)
    assert bad is None and "OWNER/NAME" in why
    clear, why = github.pull_request({**base, "GITHUB_API_URL": "http://github.example.com"}, 1)
    assert clear is None and "plain http only to this machine" in why
    assert github.pull_request({**base, "GITHUB_API_URL": "http://127.0.0.1:8080/"}, 1)[0].api_url == "http://127.0.0.1:8080"
    assert github.pull_request({**base, "GITHUB_API_URL": "http://127.0.0.1.evil.example/"}, 1)[0] is None


def test_the_first_comment_is_created_and_later_ones_update_it():
    fake = FakeGitHub([{"id": 1, "body": "LGTM", "user": {"login": "amy"}}])
    with fake_server(fake.route) as (url, seen):
        pr, _ = github.pull_request(env(url), 7)
        assert github.post_sticky_comment(pr, "## verdict: fail\n") == ("created", "https://gh/c/1001")
        assert github.post_sticky_comment(pr, "## verdict: pass\n") == ("updated", "https://gh/c/1001")
    assert [c["id"] for c in fake.comments] == [1, 1001]
    assert fake.comments[1]["body"] == f"{github.MARKER}\n## verdict: pass\n"
    assert fake.comments[0]["body"] == "LGTM"
    methods = [(m, p.split("?")[0]) for m, p, _, _ in seen]
    assert methods.count(("POST", f"/repos/{REPO}/issues/7/comments")) == 1
    assert methods.count(("PATCH", f"/repos/{REPO}/issues/comments/1001")) == 1
    assert all(h["x-github-api-version"] == "2022-11-28" for _, _, _, h in seen)


def test_a_marker_planted_by_someone_else_is_never_edited():
    planted: dict[str, Any] = {"id": 5, "body": f"{github.MARKER}\n## ✅ pass (fake)", "user": {"login": "mallory"}}
    fake = FakeGitHub([planted])
    with fake_server(fake.route) as (url, _):
        pr, _ = github.pull_request(env(url), 7)
        action, _ = github.post_sticky_comment(pr, "## ❌ fail\n")
    assert action == "created"
    assert planted["body"].endswith("(fake)")
    assert fake.comments[-1]["user"]["login"] == "github-actions[bot]"


def test_the_sticky_comment_is_found_on_a_later_page():
    others = [{"id": i, "body": f"comment {i}", "user": {"login": "amy"}} for i in range(1, 151)]
    ours: dict[str, Any] = {"id": 999, "body": f"{github.MARKER}\nold", "user": {"login": "github-actions[bot]"}}
    fake = FakeGitHub([*others, ours])
    with fake_server(fake.route) as (url, seen):
        pr, _ = github.pull_request(env(url), 7)
        assert github.post_sticky_comment(pr, "new")[0] == "updated"
    assert ours["body"] == f"{github.MARKER}\nnew"
    assert len(fake.comments) == 151
    assert sum(1 for m, p, _, _ in seen if m == "GET" and "page=" in p) == 2


def test_github_rate_limits_are_waited_out_and_errors_raised():
    fake = FakeGitHub(fail=[(429, {"Retry-After": "0"}, {"message": "rate limited"})])
    with fake_server(fake.route) as (url, _):
        pr, _ = github.pull_request(env(url), 7)
        assert github.post_sticky_comment(pr, "x")[0] == "created"
    broken = FakeGitHub(fail=[(403, {}, {"message": "rate limited"}), (500, {}, {"message": "oops"})])
    with fake_server(broken.route) as (url, _):
        pr, _ = github.pull_request(env(url), 7)
        with pytest.raises(github.GitHubError, match=r"GitHub answered HTTP 500 to GET /repos/acme/agent/issues/7/comments: oops"):
            github.post_sticky_comment(pr, "x")
    assert broken.comments == []


def test_a_long_report_is_cut_to_what_github_accepts():
    fake = FakeGitHub()
    with fake_server(fake.route) as (url, _):
        pr, _ = github.pull_request(env(url), 7)
        github.post_sticky_comment(pr, "x" * 100_000)
    assert len(fake.comments[0]["body"]) <= github.MAX_BODY
    assert fake.comments[0]["body"].startswith(github.MARKER)
