"""Regression suites, as far as the CLI needs them (``--suite``, ``ci.yaml`` suites and promotion).

The server's suites API is ``/workspaces/<ws>/regression-suites`` (docs/regression-suites.md).
An older server without it answers 404 there (after the workspace itself answered 200); the CLI
then stops with exit 4 and says so, instead of starting a run that silently leaves the suites
out. The request shapes below are the API's documented contract (docs/ci.md, "Regression
suites").
"""

from __future__ import annotations

from typing import Any

from agentclash_cli.client import ApiError, Client, CliError

UNAVAILABLE = "regression suites are not available on this server yet"


def available(client: Client) -> bool:
    client.get(client.ws())  # the workspace itself: a 404 here is "no such workspace", not "no suites"
    try:
        client.get(client.ws("regression-suites"), limit=1)
    except ApiError as exc:
        if exc.status == 404:
            return False
        raise
    return True


def require(client: Client, why: str) -> None:
    if not available(client):
        raise CliError(f"{UNAVAILABLE} ({why})")


def resolve(client: Client, names: list[str]) -> list[int]:
    """Suite names (or ids) → ids; exit 4 when the server has no suites or a name is unknown."""
    if not names:
        return []
    require(client, "--suite " + " ".join(names))
    suites = list(client.paginate(client.ws("regression-suites")))
    by_name = {str(s.get("name")): s for s in suites} | {str(s.get("id")): s for s in suites}
    missing = [n for n in names if n not in by_name]
    if missing:
        known = ", ".join(sorted(str(s.get("name")) for s in suites)) or "none"
        raise CliError(f"no regression suite {', '.join(repr(m) for m in missing)} (suites: {known})")
    return [int(by_name[n]["id"]) for n in names]


def run_fields(suite_ids: list[int]) -> dict[str, Any]:
    """What a run-create request adds to run a pack together with suites (scope ``full``)."""
    return {"regression_suite_ids": suite_ids, "regression_scope": "full"}


def propose_failures(client: Client, *, run_id: int, lane_id: int, suite_id: int) -> list[dict[str, Any]]:
    """Promote every failed case of the candidate lane as a *proposed* regression case (not the
    regression cases the run included: they already are in a suite)."""
    proposed = []
    seen: set[str] = set()  # with trials, a case fails once per trial: it is proposed once
    for case in client.paginate(client.ws(f"runs/{run_id}/cases"), lane=lane_id):
        if case.get("regression_case_id") or case.get("case_key") in seen:
            continue
        if case.get("passed") is False or case.get("status") == "failed":
            seen.add(str(case.get("case_key")))
            proposed.append(
                client.post(client.ws(f"runs/{run_id}/cases/{case['id']}/promote"), {"suite_id": suite_id, "status": "proposed"})
            )
    return proposed
