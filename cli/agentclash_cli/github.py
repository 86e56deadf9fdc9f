"""``ci run --pr-comment``: one sticky pull-request comment with the gate's report.

Through the GitHub REST API at ``$GITHUB_API_URL`` (GitHub Actions sets it; default
``https://api.github.com``): the comments of the pull request are listed
(``GET /repos/{owner}/{repo}/issues/{n}/comments``), the one that starts with :data:`MARKER` and was
written by the token's own account is updated (``PATCH /repos/{owner}/{repo}/issues/comments/{id}``),
else one is created (``POST …/issues/{n}/comments``). A comment someone else wrote with the marker
in it is never touched. The pull request is ``--pr-number``, else the event's
(``$GITHUB_EVENT_PATH``), else ``refs/pull/N/…`` in ``$GITHUB_REF``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from agentclash_cli import __version__, retry

MARKER = "<!-- agentclash-ci:sticky-comment -->"
DEFAULT_API_URL = "https://api.github.com"
ACTIONS_BOT = "github-actions[bot]"  # who GITHUB_TOKEN writes as (it cannot read GET /user)
MAX_BODY = 65_000  # GitHub refuses comment bodies over 65,536 characters
MAX_PAGES = 50
REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
# The token never crosses the network in clear text: plain http only to this machine (tests, a proxy).
LOOPBACK_HTTP = re.compile(r"^http://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(/|$)")


class GitHubError(Exception):
    """The comment could not be written; the gate's exit code does not change for it."""


@dataclasses.dataclass(frozen=True)
class PullRequest:
    api_url: str
    token: str
    repository: str
    number: int


def _event_number(env: Mapping[str, str]) -> int | None:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return None
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(event, dict):
        return None
    for key in ("pull_request", "issue"):  # an issue_comment event on a pull request names it "issue"
        number = (event.get(key) or {}).get("number") if isinstance(event.get(key), dict) else None
        if isinstance(number, int) and not isinstance(number, bool) and number > 0:
            return number
    return None


def _ref_number(env: Mapping[str, str]) -> int | None:
    found = re.fullmatch(r"refs/pull/(\d+)/(?:merge|head)", env.get("GITHUB_REF") or "")
    return int(found.group(1)) if found else None


def pull_request(env: Mapping[str, str], number: int | None = None) -> tuple[PullRequest | None, str]:
    """The pull request to comment on, or None and what is missing."""
    number = number or _event_number(env) or _ref_number(env)
    missing = [
        name
        for name, value in (("GITHUB_TOKEN", env.get("GITHUB_TOKEN")), ("GITHUB_REPOSITORY", env.get("GITHUB_REPOSITORY")))
        if not value
    ]
    if number is None:
        missing.append("the pull request number (--pr-number, a pull_request event, or GITHUB_REF refs/pull/N/merge)")
    if missing:
        return None, f"no {', '.join(missing)}"
    repository = str(env.get("GITHUB_REPOSITORY"))
    if not REPOSITORY.match(repository):
        return None, f"GITHUB_REPOSITORY must be OWNER/NAME (got {repository!r})"
    api_url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    if not (api_url.startswith("https://") or LOOPBACK_HTTP.match(api_url)):
        return None, f"GITHUB_API_URL must start with https:// (plain http only to this machine; got {api_url!r})"
    assert number is not None
    return PullRequest(api_url=api_url, token=str(env.get("GITHUB_TOKEN")), repository=repository, number=number), ""


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    return str(body.get("message")) if isinstance(body, dict) and body.get("message") else response.reason_phrase


class _GitHub:
    def __init__(
        self, pr: PullRequest, *, transport: httpx.BaseTransport | None, sleep: Callable[[float], None], note: Callable[[str], None]
    ):
        self.pr, self.sleep, self.note = pr, sleep, note
        self.http = httpx.Client(
            base_url=pr.api_url,
            headers={
                "Authorization": f"Bearer {pr.token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": f"agentclash-cli/{__version__}",
            },
            timeout=30.0,
            transport=transport,
            follow_redirects=False,
        )

    def call(self, method: str, path: str, *, ok: tuple[int, ...] = (200, 201), **kwargs: Any) -> httpx.Response:
        def once() -> httpx.Response:
            try:
                return self.http.request(method, path, **kwargs)
            except httpx.HTTPError as exc:
                raise GitHubError(f"cannot reach {self.pr.api_url}: {exc}") from None

        response, gave_up = retry.send(once, policy=retry.RetryPolicy(), sleep=self.sleep, note=self.note, what=f"GitHub {method} {path}")
        if response.status_code not in ok:
            detail = _message(response)
            raise GitHubError(
                f"GitHub answered HTTP {response.status_code} to {method} {path}: {detail}{f'; {gave_up}' if gave_up else ''}"
            )
        return response

    def login(self) -> str:
        """The token's own account; GITHUB_TOKEN cannot ask (403), and writes as the Actions bot."""
        response = self.call("GET", "/user", ok=(200, 401, 403, 404))
        login = response.json().get("login") if response.status_code == 200 else None
        return str(login) if login else ACTIONS_BOT

    def sticky(self, login: str) -> dict[str, Any] | None:
        base = f"/repos/{self.pr.repository}/issues/{self.pr.number}/comments"
        for page in range(1, MAX_PAGES + 1):
            comments = self.call("GET", base, params={"per_page": 100, "page": page}).json()
            for comment in comments if isinstance(comments, list) else []:
                author = (comment.get("user") or {}).get("login")
                if str(comment.get("body") or "").startswith(MARKER) and author == login:
                    return dict(comment)
            if not isinstance(comments, list) or len(comments) < 100:
                return None
        return None


def post_sticky_comment(
    pr: PullRequest,
    markdown: str,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
    note: Callable[[str], None] = lambda message: None,
) -> tuple[str, str]:
    """Create or update the sticky comment: ("created" | "updated", its URL). Raises GitHubError."""
    body = f"{MARKER}\n{markdown}"
    if len(body) > MAX_BODY:
        body = body[: MAX_BODY - 40] + "\n\n… (cut: see the step summary)\n"
    github = _GitHub(pr, transport=transport, sleep=sleep, note=note)
    try:
        existing = github.sticky(github.login())
        if existing is not None:
            comment = github.call("PATCH", f"/repos/{pr.repository}/issues/comments/{existing['id']}", json={"body": body}).json()
            return "updated", str(comment.get("html_url") or "")
        comment = github.call("POST", f"/repos/{pr.repository}/issues/{pr.number}/comments", json={"body": body}).json()
        return "created", str(comment.get("html_url") or "")
    finally:
        github.http.close()
