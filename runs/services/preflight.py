"""Pre-flight at run creation: what would make every case of the run fail is refused now, with a
400 naming the field and what to do (docs/runs.md, "Pre-flight"), instead of mid-case.

- each workspace secret an ``http_request`` tool sends (``${secrets.KEY}``) exists and may go to
  the host the tool calls (its ``url``, when the host is written literally);
- the sandbox can be provided here: its template exists, its packages are allowed and known to
  apt, its template's paths exist (``infrastructure/sandbox_layers.py``).

Deployment modes that do not fit the pack (hosted agents, Responses API providers) are checked in
``create.py`` beside the rest of deployment resolution.
"""

from __future__ import annotations

from typing import Any

from bundle.validate.tool_secrets import secret_uses
from core.errors import DomainError
from engine.tools import secret_hosts
from infrastructure.sandbox_layers import sandbox_preflight
from runs.services.resolve import RunCreateError
from secrets_app.selectors import secret_allowed_hosts
from workspaces.models import Workspace


def run_preflight(*, workspace: Workspace, manifest: dict[str, Any]) -> None:
    _check_secrets(workspace, manifest)
    try:
        sandbox_preflight(manifest)
    except DomainError as exc:
        raise RunCreateError(exc.message, field=exc.field, code=exc.code, extra=exc.extra) from None


def _check_secrets(workspace: Workspace, manifest: dict[str, Any]) -> None:
    uses = secret_uses(manifest)
    if not uses:
        return
    hosts = secret_allowed_hosts(workspace=workspace)
    for use in uses:
        if use.key not in hosts:
            raise RunCreateError(
                f'Tool "{use.tool}" sends workspace secret {use.key} ({use.path}), which this workspace does not have: add it '
                f"(Secrets, or `agentclash secret set {use.key}`) and allow the host the tool calls, then create the run again.",
                field="pack_version_id",
                code="secret_missing",
                extra={"secret": use.key, "tool": use.tool},
            )
        url = use.url if isinstance(use.url, str) else ""
        if not url or "${" in url.split("//", 1)[-1].split("/", 1)[0]:
            continue  # the host is filled in per call: http_request checks it then
        if not secret_hosts.allowed(hosts[use.key], url):
            dest = secret_hosts.destination(url)
            where = f"{dest[0]}:{dest[1]}" if dest else url
            raise RunCreateError(
                f'Tool "{use.tool}" sends workspace secret {use.key} to {where}, a host the secret may not go to: add it to the '
                "secret's allowed hosts (Secrets), then create the run again.",
                field="pack_version_id",
                code="secret_host_not_allowed",
                extra={"secret": use.key, "tool": use.tool},
            )
