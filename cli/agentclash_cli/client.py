"""The API client: configuration from the environment, one error type, pagination, polling."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx

from agentclash_cli import __version__, retry

DEFAULT_TIMEOUT = 60.0
USAGE = 4  # every command's usage or setup error (docs/ci.md, "Commands and exit codes")


class CliError(Exception):
    """Something the user must fix or know about; ``exit_code`` is what the command exits with."""

    def __init__(self, message: str, exit_code: int = USAGE):
        self.message = message
        self.exit_code = exit_code
        super().__init__(message)


class ApiError(CliError):
    """The server answered with an error envelope (``{"error": {"code", "message"}}``)."""

    def __init__(self, status: int, code: str, message: str, body: Any = None):
        self.status = status
        self.code = code
        self.body = body
        super().__init__(f"{message} (HTTP {status}, {code})")
        self.detail = message


@dataclasses.dataclass(frozen=True)
class Config:
    url: str
    token: str
    workspace: str
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_env(cls, *, url: str | None = None, token: str | None = None, workspace: str | None = None) -> Config:
        """Flags win over ``AGENTCLASH_URL``, ``AGENTCLASH_TOKEN`` and ``AGENTCLASH_WORKSPACE``."""
        return cls(
            url=(url or os.environ.get("AGENTCLASH_URL") or "").rstrip("/"),
            token=token or os.environ.get("AGENTCLASH_TOKEN") or "",
            workspace=workspace or os.environ.get("AGENTCLASH_WORKSPACE") or "",
        )

    def require(self, *, workspace: bool = True) -> None:
        missing = [name for name, value in (("AGENTCLASH_URL", self.url), ("AGENTCLASH_TOKEN", self.token)) if not value]
        if workspace and not self.workspace:
            missing.append("AGENTCLASH_WORKSPACE (or --workspace)")
        if missing:
            raise CliError(f"set {', '.join(missing)}")
        if not self.url.startswith(("http://", "https://")):
            raise CliError(f"AGENTCLASH_URL must start with http:// or https:// (got {self.url!r})")


# A web server restarting (a deploy, a crash) refuses connections or drops them for a few seconds:
# the CLI waits it out, 0.5 s then doubling up to 8 s between tries, at most 60 s in all per request,
# then fails as before (docs/ci.md "Commands and exit codes": exit codes unchanged).
RECONNECT_FIRST_WAIT = 0.5
RECONNECT_MAX_WAIT = 8.0
RECONNECT_TOTAL_WAIT = 60.0
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def reconnectable(exc: httpx.HTTPError, method: str) -> bool:
    """A connection that could not be opened never carried the request: any method is tried again.
    One that broke after the request went out (the server died answering it) is tried again only
    for a method that changes nothing (a ``POST`` may have been done)."""
    if isinstance(exc, httpx.ConnectError):
        return True
    return method.upper() in _SAFE_METHODS and isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError))


def stderr_note(message: str) -> None:
    sys.stderr.write(f"agentclash: {message}\n")
    sys.stderr.flush()


class Client:
    def __init__(
        self,
        config: Config,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        retry_policy: retry.RetryPolicy | None = None,
        note: Callable[[str], None] = stderr_note,
        reconnect_wait: float = RECONNECT_TOTAL_WAIT,
    ):
        self.config = config
        self.sleep = sleep
        self.retry_policy = retry_policy or retry.RetryPolicy()
        self.reconnect_wait = reconnect_wait
        self.note = note
        # One Idempotency-Key per invocation (AGENTCLASH_IDEMPOTENCY_KEY to share it across CI job
        # attempts), numbered per write: a retried POST is answered with the first one's result.
        self.idempotency_base = os.environ.get("AGENTCLASH_IDEMPOTENCY_KEY") or uuid.uuid4().hex
        self._idempotent_writes = 0
        self._http = httpx.Client(
            base_url=config.url,
            headers={
                "Authorization": f"Bearer {config.token}",
                "User-Agent": f"agentclash-cli/{__version__}",
                "Accept": "application/json",
            },
            timeout=config.timeout,
            transport=transport,
            follow_redirects=False,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    # -- paths ------------------------------------------------------------------------
    def ws(self, path: str = "") -> str:
        base = f"/api/v1/workspaces/{quote(self.config.workspace, safe='')}"
        return f"{base}/{path}" if path else base

    def web_url(self, path: str) -> str:
        return f"{self.config.url}/w/{quote(self.config.workspace, safe='')}/{path}"

    # -- requests ---------------------------------------------------------------------
    def request(self, method: str, path: str, *, ok: tuple[int, ...] = (200, 201), **kwargs: Any) -> httpx.Response:
        """One API call; 429 and 503 are retried as ``retry.py`` says, other statuses not in ``ok`` raise ApiError."""

        def once() -> httpx.Response:
            waited, delay = 0.0, RECONNECT_FIRST_WAIT
            while True:
                try:
                    return self._http.request(method, path, **kwargs)
                except httpx.TimeoutException:
                    raise CliError(f"{self.config.url} did not answer within {self.config.timeout:.0f}s ({method} {path})") from None
                except httpx.HTTPError as exc:
                    if not reconnectable(exc, method) or waited + delay > self.reconnect_wait:
                        raise CliError(f"cannot reach {self.config.url}: {exc}") from None
                    self.note(f"cannot reach {self.config.url} ({type(exc).__name__}); retrying {method} {path} in {delay:g}s")
                    self.sleep(delay)
                    waited += delay
                    delay = min(delay * 2, RECONNECT_MAX_WAIT)

        response, gave_up = retry.send(once, policy=self.retry_policy, sleep=self.sleep, note=self.note, what=f"{method} {path}")
        if response.status_code not in ok:
            error = api_error(response)
            if gave_up:
                error.message = f"{error.message}; {gave_up}"
            raise error
        return response

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None}).json()

    def post(self, path: str, body: Any = None, *, ok: tuple[int, ...] = (200, 201), idempotent: bool = False) -> Any:
        headers = self.idempotency_headers() if idempotent else None
        return self.request("POST", path, json=body, ok=ok, headers=headers).json()

    def idempotency_headers(self) -> dict[str, str]:
        """``Idempotency-Key`` for the next write that must not happen twice (runs, publish):
        the server replays the first answer to every retry that carries it (docs/ci.md)."""
        self._idempotent_writes += 1
        return {"Idempotency-Key": f"{self.idempotency_base}-{self._idempotent_writes}"[:255]}

    def patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, json=body).json()

    def put(self, path: str, body: Any) -> httpx.Response:
        return self.request("PUT", path, json=body)

    def delete(self, path: str) -> None:
        self.request("DELETE", path, ok=(204,))

    def paginate(self, path: str, *, page_size: int = 200, **params: Any) -> Iterator[dict[str, Any]]:
        offset = 0
        while True:
            page = self.get(path, limit=page_size, offset=offset, **params)
            results = page.get("results") if isinstance(page, dict) else page
            yield from results or []
            if not isinstance(page, dict) or not page.get("next") or not results:
                return
            offset += len(results)

    def poll(self, path: str, *, until: Callable[[httpx.Response], bool], timeout: float, interval: float = 1.0) -> httpx.Response:
        """GET ``path`` until ``until(response)``; CliError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            response = self.request("GET", path, ok=(200, 202, 409))
            if until(response):
                return response
            if time.monotonic() >= deadline:
                raise CliError(f"gave up waiting for {path} after {timeout:.0f}s")
            self.sleep(interval)


def api_error(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return ApiError(response.status_code, str(error.get("code") or "error"), str(error.get("message") or ""), body)
    if response.status_code == 401:
        return ApiError(401, "unauthenticated", "the token was refused (check AGENTCLASH_TOKEN)", body)
    return ApiError(response.status_code, "error", response.text[:200] or response.reason_phrase, body)
