"""http_request (kind ``network``): the only primitive that may receive secrets."""

from __future__ import annotations

from typing import Any

import httpx

from engine.net import guard
from engine.net.proxy import EgressAttempt
from engine.sandbox.base import WorkspaceFullError, WorkspacePathError
from engine.tools import args as A
from engine.tools import secret_hosts
from engine.tools.composed import SecretArgs
from engine.tools.context import ToolContext
from engine.tools.envelope import wrap
from engine.tools.registry import Executor, PrimitiveSpec, register
from engine.tools.results import NO_SANDBOX, denied, error, ok
from engine.types import ToolResult


def create(ctx: ToolContext) -> Executor:
    def execute(args: dict[str, Any]) -> ToolResult:
        if not ctx.network_allowed:
            return denied()
        method = A.string(args, "method").strip().upper()
        url = A.string(args, "url").strip()
        headers = A.string_map(args, "headers")
        body = A.string(args, "body")
        timeout = A.integer(args, "timeout_seconds", 0)
        output_path = A.string(args, "output_path").strip()
        if not method:
            return error("method is required")
        if not url:
            return error("url is required")
        data = body.encode("utf-8")
        if len(data) > guard.MAX_REQUEST_BODY_BYTES:
            return error("request body exceeds size limit")
        if output_path and ctx.sandbox is None:
            return error(NO_SANDBOX)
        if any(c in k or c in v for k, v in headers.items() for c in "\r\n\x00"):
            return error("header names and values must not contain line breaks")
        carries_secret = isinstance(args, SecretArgs)
        if isinstance(args, SecretArgs):
            refusal = _secret_refusal(ctx, args, url)
            if refusal:
                return error(refusal, "policy")
        try:
            response = guard.send(
                method,
                url,
                headers=headers,
                body=data,
                timeout=guard.clamp_timeout(timeout),
                allowlist=ctx.allowlist,
                resolver=ctx.resolver,
                secret_headers=args.secret_headers if isinstance(args, SecretArgs) else (),
                carries_secret=carries_secret,
                on_hop=_hop_reporter(ctx, method),
            )
        except guard.NetworkPolicyError as exc:
            return error(str(exc))
        payload: dict[str, Any] = {
            "status_code": response.status_code,
            "headers": guard.redact_headers(response.headers),
            "url": response.url,
        }
        if output_path:
            try:
                ctx.sandbox.write_file(output_path, response.body)  # type: ignore[union-attr]
            except WorkspacePathError as exc:
                return error(str(exc))
            except WorkspaceFullError:
                return error("workspace size limit exceeded")
            except (IsADirectoryError, NotADirectoryError):
                return error(f'path "{output_path}" is not a writable file')
            payload.update(output_path=output_path, bytes_downloaded=len(response.body))
        else:
            payload.update(body=_decode(response), body_bytes=len(response.body))
        return ok(wrap(ctx, "http_request", payload))

    return execute


def _secret_refusal(ctx: ToolContext, args: SecretArgs, url: str) -> str | None:
    """Why the secrets substituted into ``args`` must not go to ``url`` (names them, never values).

    A secret goes only to a destination that matches its allowed hosts (set by a workspace admin)
    *and* passes the pack's network policy; checked before any connection is made.
    """
    for key in sorted(args.secret_keys):
        patterns = ctx.secret_hosts.get(key, ())
        if not patterns:
            return f'secret "{key}" was not sent: it has no allowed hosts yet; a workspace admin must set them on the Secrets page'
        if not secret_hosts.allowed(patterns, url):
            dest = secret_hosts.destination(url)
            where = ctx.redactor.text(f" ({dest[0]}:{dest[1]})") if dest else ""
            return f'secret "{key}" was not sent: the destination{where} is not one of its allowed hosts'
    try:
        guard.check_target(url, ctx.allowlist, ctx.resolver)
    except guard.NetworkPolicyError as exc:
        names = ", ".join(f'"{key}"' for key in sorted(args.secret_keys))
        return f"secret {names} was not sent: the pack's network policy refuses the destination ({exc})"
    return None


def _hop_reporter(ctx: ToolContext, method: str) -> guard.HopCallback | None:
    """Each hop as an egress attempt ``via`` http_request, for the case's egress watch."""
    hook = ctx.egress_hook
    if hook is None:
        return None

    def report(url: str, address: guard.IPAddress | None, refusal: str) -> None:
        parsed = httpx.URL(url)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        attempt = EgressAttempt(parsed.host, port, method, not refusal, refusal or "allowed", str(address or ""), via="http_request")
        hook(attempt)

    return report


def _decode(response: guard.Response) -> str:
    charset = "utf-8"
    content_type = next((v for k, v in response.headers.items() if k.lower() == "content-type"), "")
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip('"')
    try:
        return response.body.decode(charset, "replace")
    except LookupError:
        return response.body.decode("utf-8", "replace")


register(
    PrimitiveSpec(
        name="http_request",
        kind="network",
        description="Send an HTTP(S) request to an allowed host and return status, headers and body.",
        parameters={
            "type": "object",
            "properties": {
                "method": {"type": "string", "description": "GET, POST, PUT, PATCH, DELETE, HEAD…"},
                "url": {"type": "string", "description": "Absolute http:// or https:// URL."},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Request headers."},
                "body": {"type": "string", "description": "Request body text (max 1 MiB)."},
                "timeout_seconds": {"type": "integer", "minimum": 1, "description": "Default 30, max 60."},
                "output_path": {"type": "string", "description": "Save the response body to this workspace file."},
            },
            "required": ["method", "url"],
            "additionalProperties": False,
        },
        examples=(
            {"method": "GET", "url": "https://api.example.com/v1/items?limit=5"},
            {
                "method": "POST",
                "url": "https://api.example.com/v1/items",
                "headers": {"Content-Type": "application/json"},
                "body": '{"name": "x"}',
            },
        ),
        accepts_secrets=True,
        create=create,
    )
)
