"""``agentclash run``: names → ids, start the run, follow it with a progress line.

Exit codes: 0 the run was started (or, with ``--follow``, completed), 1 it ended failed or
cancelled, 4 usage error (unknown pack, version, input set, deployment or suite; no access).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from agentclash_cli import suites
from agentclash_cli.client import Client, CliError

TERMINAL = frozenset({"completed", "failed", "cancelled"})
DONE_STATUSES = ("completed", "failed", "cancelled")


@dataclasses.dataclass(frozen=True)
class PackRef:
    slug: str
    number: int | None

    @classmethod
    def parse(cls, text: str) -> PackRef:
        slug, _, version = text.partition("@")
        if not slug.strip():
            raise CliError(f"--pack must be SLUG or SLUG@VERSION (got {text!r})")
        if not version:
            return cls(slug.strip(), None)
        try:
            number = int(version.lstrip("v"))
        except ValueError:
            raise CliError(f"--pack version must be a number, as in {slug}@2 (got {version!r})") from None
        return cls(slug.strip(), number)


def resolve_pack_version(client: Client, ref: PackRef) -> dict[str, Any]:
    """The pack version for ``SLUG[@N]``; without a number, the newest runnable version."""
    pack = next((p for p in client.paginate(client.ws("packs")) if p["slug"] == ref.slug), None)
    if pack is None:
        raise CliError(f"no pack {ref.slug!r} in workspace {client.config.workspace!r}")
    versions = list(client.paginate(client.ws(f"packs/{pack['id']}/versions")))
    if ref.number is not None:
        version = next((v for v in versions if v["number"] == ref.number), None)
        if version is None:
            known = ", ".join(str(v["number"]) for v in sorted(versions, key=lambda v: v["number"])) or "none"
            raise CliError(f"pack {ref.slug!r} has no version {ref.number} (versions: {known})")
        return version
    runnable = [v for v in versions if v.get("lifecycle_status") == "runnable"]
    if not runnable:
        raise CliError(f"pack {ref.slug!r} has no runnable version")
    return max(runnable, key=lambda v: v["number"])


def resolve_input_set(client: Client, version: dict[str, Any], key: str | None) -> int | None:
    if not key:
        return None
    input_sets = list(client.paginate(client.ws(f"pack-versions/{version['id']}/input-sets")))
    found = next((s for s in input_sets if s["key"] == key), None)
    if found is None:
        known = ", ".join(sorted(s["key"] for s in input_sets)) or "none"
        raise CliError(f"pack version {version['id']} has no input set {key!r} (input sets: {known})")
    return int(found["id"])


def resolve_deployments(client: Client, names: list[str]) -> list[int]:
    deployments = {d["name"]: d for d in client.paginate(client.ws("deployments"))}
    missing = [name for name in names if name not in deployments]
    if missing:
        known = ", ".join(sorted(deployments)) or "none"
        raise CliError(f"no deployment named {', '.join(repr(m) for m in missing)} in {client.config.workspace!r} (deployments: {known})")
    return [int(deployments[name]["id"]) for name in names]


def start_run(
    client: Client,
    *,
    pack: str,
    deployments: list[str],
    input_set: str | None = None,
    suite_names: list[str] | None = None,
    name: str = "",
) -> dict[str, Any]:
    """Resolve every name, then POST the run; the created run."""
    suite_ids = suites.resolve(client, suite_names or [])  # first: fails fast on servers without suites
    version = resolve_pack_version(client, PackRef.parse(pack))
    body: dict[str, Any] = {
        "pack_version_id": version["id"],
        "input_set_id": resolve_input_set(client, version, input_set),
        "deployment_ids": resolve_deployments(client, deployments),
    }
    if name:
        body["name"] = name
    if suite_ids:
        body.update(suites.run_fields(suite_ids))
    return client.post(client.ws("runs"), body)


def progress_line(run: dict[str, Any], width: int = 30) -> str:
    counts = run.get("case_counts") or {}
    total = int(counts.get("total") or 0)
    done = sum(int(counts.get(s) or 0) for s in DONE_STATUSES)
    filled = int(width * done / total) if total else 0
    failed = f" · {counts.get('failed')} failed" if counts.get("failed") else ""
    return f"run {run['id']} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} cases{failed} · {run['status']}"


def follow(
    client: Client,
    run_id: int,
    *,
    out: TextIO | None = None,
    interval: float = 1.0,
    timeout: float = 6 * 3600,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Poll the run until it is terminal, drawing one progress line (redrawn on a terminal,
    printed when it changes otherwise, so CI logs stay short)."""
    out = out or sys.stderr
    interactive = out.isatty()
    deadline = clock() + timeout
    last = ""
    while True:
        run = client.get(client.ws(f"runs/{run_id}"))
        line = progress_line(run)
        if interactive:
            out.write(f"\r{line}   ")
        elif line != last:
            out.write(line + "\n")
        out.flush()
        last = line
        if run["status"] in TERMINAL:
            if interactive:
                out.write("\n")
            if run.get("failure_reason"):
                out.write(f"{run['failure_reason']}\n")
            return run
        if clock() >= deadline:
            raise CliError(f"run {run_id} did not finish within {timeout:.0f}s")
        client.sleep(interval)


def wait_for_scorecard(client: Client, run_id: int, *, timeout: float = 600, interval: float = 1.0) -> dict[str, Any] | None:
    """The run's scorecard once scoring is done; None if scoring failed or was skipped."""
    response = client.poll(client.ws(f"runs/{run_id}/scorecard"), until=lambda r: r.status_code != 202, timeout=timeout, interval=interval)
    return response.json() if response.status_code == 200 else None
