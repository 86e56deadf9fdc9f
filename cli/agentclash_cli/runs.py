"""``agentclash run``: names → ids, start the run, follow it with a progress line, end with a
per-lane table (passed/total, score, winner).

Exit codes: 0 the run was started (or, with ``--follow``, completed), 1 it ended failed or
cancelled, 4 usage error (unknown pack, version, input set, deployment, judge or suite; a
deployment whose runtime profile does not run the pack's execution mode; no access).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from agentclash_cli import judges, suites
from agentclash_cli.client import ApiError, Client, CliError
from agentclash_cli.output import score, table

TERMINAL = frozenset({"completed", "failed", "cancelled"})
DONE_STATUSES = ("completed", "failed", "cancelled")
# Which runtime profiles race in which packs, as the New-run page offers them (runs/forms.py):
# a profile's own mode, and a hosted agent in any single-shot pack (docs/hosted-agents.md).
HOSTED = "hosted_external"
HOSTED_PACK_MODES = frozenset({"native", "prompt_eval"})


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


def active_deployments(client: Client) -> dict[str, dict[str, Any]]:
    """The workspace's active deployments by name, as the API shows them."""
    return {d["name"]: d for d in client.paginate(client.ws("deployments"))}


def resolve_deployments(client: Client, names: list[str], deployments: dict[str, dict[str, Any]] | None = None) -> list[int]:
    deployments = active_deployments(client) if deployments is None else deployments
    missing = [name for name in names if name not in deployments]
    if missing:
        known = ", ".join(sorted(deployments)) or "none"
        raise CliError(f"no deployment named {', '.join(repr(m) for m in missing)} in {client.config.workspace!r} (deployments: {known})")
    return [int(deployments[name]["id"]) for name in names]


def pack_mode(version: dict[str, Any]) -> str:
    return str(version.get("execution_mode") or "native").strip() or "native"


def fits(deployment: dict[str, Any], mode: str) -> bool:
    target = deployment.get("execution_target") or "native"
    return target == mode or (target == HOSTED and mode in HOSTED_PACK_MODES)


def check_fit(version: dict[str, Any], names: list[str], deployments: dict[str, dict[str, Any]], *, pack: str) -> None:
    """Refuse deployments whose runtime profile does not run the pack's execution mode before asking
    the server (which refuses them too, ``deployment_mode_mismatch``), listing the ones that fit."""
    mode = pack_mode(version)
    unfit = [name for name in names if not fits(deployments[name], mode)]
    if unfit:
        targets = ", ".join(f"{name!r} runs {deployments[name].get('execution_target')}" for name in unfit)
        fitting = ", ".join(sorted(name for name, d in deployments.items() if fits(d, mode))) or "none"
        raise CliError(
            f"pack {pack} is a {mode} pack and {targets}: choose a deployment whose runtime profile runs {mode} (fitting: {fitting})"
        )


def judge_request(
    client: Client,
    version: dict[str, Any],
    choices: list[str],
    *,
    allow_missing: bool,
    deployments: dict[str, dict[str, Any]],
    words: judges.Words,
    pack: str,
) -> dict[str, Any]:
    """The judge fields of a run-create request (the version's manifest is read only when judges are chosen)."""
    if not choices:
        return {"allow_missing_judges": True} if allow_missing else {}
    manifest = client.get(client.ws(f"pack-versions/{version['id']}")).get("manifest") or {}
    chosen = judges.choices_map(choices, judges.pack_judge_models(manifest), set(deployments), words=words, pack=pack)
    return judges.run_fields(chosen, deployments, allow_missing=allow_missing, words=words, workspace=client.config.workspace)


def create_run(client: Client, body: dict[str, Any], words: judges.Words) -> dict[str, Any]:
    """POST the run; a refusal about judges is said with the command's words."""
    try:
        created: dict[str, Any] = client.post(client.ws("runs"), body, idempotent=True)
    except ApiError as exc:
        raise (judges.refusal(exc, words) or exc) from None
    return created


def start_run(
    client: Client,
    *,
    pack: str,
    deployments: list[str],
    input_set: str | None = None,
    suite_names: list[str] | None = None,
    name: str = "",
    judge_choices: list[str] | None = None,
    allow_missing_judges: bool = False,
    repeats: int | str = 1,
    max_repeats: int | None = None,
    max_regression: float | None = None,
    confidence: float | None = None,
) -> dict[str, Any]:
    """Resolve every name and check the deployments fit the pack, then POST the run; the created run."""
    suite_ids = suites.resolve(client, suite_names or [])  # first: fails fast on servers without suites
    ref = PackRef.parse(pack)
    version = resolve_pack_version(client, ref)
    known = active_deployments(client)
    body: dict[str, Any] = {
        "pack_version_id": version["id"],
        "input_set_id": resolve_input_set(client, version, input_set),
        "deployment_ids": resolve_deployments(client, deployments, known),
    }
    where = f"{ref.slug} v{version['number']}"
    check_fit(version, deployments, known, pack=where)
    body.update(
        judge_request(
            client, version, judge_choices or [], allow_missing=allow_missing_judges, deployments=known, words=judges.RUN_WORDS, pack=where
        )
    )
    if name:
        body["name"] = name
    if suite_ids:
        body.update(suites.run_fields(suite_ids))
    if repeats != 1:  # a server without trials never sees the field for a one-trial run
        body["repeats"] = repeats
    if max_repeats is not None:
        body["max_repeats"] = max_repeats
    if max_regression is not None:  # the server checks the range and names the field
        body["max_regression"] = max_regression
    if confidence is not None:
        body["confidence"] = confidence
    return create_run(client, body, judges.RUN_WORDS)


def progress_line(run: dict[str, Any], width: int = 30) -> str:
    counts = run.get("case_counts") or {}
    total = int(counts.get("total") or 0)
    done = sum(int(counts.get(s) or 0) for s in DONE_STATUSES)
    filled = int(width * done / total) if total else 0
    failed = f" · {counts.get('failed')} failed" if counts.get("failed") else ""
    noun = "case runs" if run.get("repeats", 1) != 1 else "cases"  # trials: each case runs several times
    rounds = f" · round {run['rounds']}" if run.get("repeats") == "auto" and run.get("rounds") else ""
    return f"run {run['id']} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {noun}{failed}{rounds} · {run['status']}"


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


def case_rows(client: Client, run_id: int, *, lane: int | None = None) -> list[dict[str, Any]]:
    """The run's case runs (one lane's with ``lane``), as ``…/runs/<id>/cases`` lists them."""
    return list(client.paginate(client.ws(f"runs/{run_id}/cases"), lane=lane))


def lane_results(client: Client, run: dict[str, Any], cases: list[dict[str, Any]], *, scorecard_timeout: float = 120) -> dict[str, Any]:
    """Per lane: passed/total (from the case runs), overall score and rank (from the run's scorecard), the winner."""
    card: dict[str, Any] | None = None
    scoring = "scored"
    try:
        card = wait_for_scorecard(client, run["id"], timeout=scorecard_timeout)
        if card is None:
            scoring = "failed"
        elif not card.get("lanes"):
            scoring = "skipped"  # a run that failed or was cancelled before every lane finished gets no scorecard
    except CliError:
        scoring = "pending"
    ranked = {int(row["lane_id"]): row for row in (card or {}).get("lanes") or []}
    winner_id = (card or {}).get("winner_lane_id")
    lanes = []
    for lane in run.get("lanes") or []:
        mine = [c for c in cases if c.get("lane_id") == lane["id"]]
        row = ranked.get(int(lane["id"]), {})
        lanes.append(
            {
                "lane_id": lane["id"],
                "label": lane.get("label") or lane.get("deployment_name"),
                "status": lane.get("status"),
                "passed": sum(1 for c in mine if c.get("passed") is True),
                "total": len(mine),
                "score": row.get("overall_score"),
                "rank": row.get("rank"),
                "winner": winner_id is not None and int(winner_id) == int(lane["id"]),
                # The server words the interval: "62 % (48–74 %, 95 % CI, 10 trials)" or "… (1 trial: no uncertainty estimate)".
                "pass_rate_text": row.get("pass_rate_text"),
                "statistics": row.get("statistics"),
            }
        )
    winner = next((lane["label"] for lane in lanes if lane["winner"]), None)
    return {"scoring": scoring, "winner": winner, "winner_reason": (card or {}).get("winner_reason"), "lanes": lanes}


def lanes_table(results: dict[str, Any]) -> str:
    """The table ``run --follow`` ends with."""
    rows = [
        [
            lane["label"],
            f"{lane['passed']}/{lane['total']}",
            score(lane["score"]),
            str(lane["rank"] or "—"),
            "winner" if lane["winner"] else "",
        ]
        for lane in results["lanes"]
    ]
    text = table(["lane", "passed", "score", "rank", ""], rows, right=(1, 2, 3))
    reason = f" ({results['winner_reason']})" if results.get("winner_reason") else ""
    if results["scoring"] != "scored":
        return text + f"no scores: scoring {results['scoring']}\n"
    return text + f"winner: {results['winner'] or 'none'}{reason}\n" + "".join(_pass_rate_line(lane) for lane in results["lanes"])


def _pass_rate_line(lane: dict[str, Any]) -> str:
    """``Good: pass rate 62 % (48–74 %, 95 % CI, 10 trials) · flaky: c1, c4`` (servers without statistics: nothing)."""
    text = lane.get("pass_rate_text")
    if not text or text == "—":
        return ""
    flaky = list((lane.get("statistics") or {}).get("flaky_cases") or [])
    shown = ", ".join(flaky[:5]) + (f" and {len(flaky) - 5} more" if len(flaky) > 5 else "")
    return f"{lane['label']}: pass rate {text}" + (f" · flaky: {shown}" if shown else "") + "\n"
