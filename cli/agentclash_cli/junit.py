"""``--junit FILE``: JUnit XML, one ``<testcase>`` per case × lane, one ``<testsuite>`` per lane.

A case that passed is a plain test case; one that was scored and failed a ``<failure>``; one whose
run failed before it could be scored an ``<error>``; one never scored (cancelled, not reached) is
``<skipped>``. On a gate (``gate``, ``ci run``) the suites are the baseline and the candidate lane,
and a candidate case that regressed says so in its failure message.

Text the evaluated agent controls (its final output, an error) is never copied: a test report is
read by CI tools and people, and the agent may print anything. Names come from the pack and the
workspace; characters XML 1.0 cannot hold are dropped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentclash_cli.gate import GateOutcome
from agentclash_cli.output import score

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any) -> str:
    return _NOT_XML.sub("", str(value if value is not None else ""))


def _seconds(case: dict[str, Any]) -> float:
    ms = case.get("duration_ms")
    return round(ms / 1000, 3) if isinstance(ms, int | float) and not isinstance(ms, bool) else 0.0


def _outcome(case: dict[str, Any], regressed: bool) -> tuple[str, str] | None:
    """(element, message) for a case that did not pass; None when it passed."""
    passed, status = case.get("passed"), str(case.get("status") or "")
    if passed is True:
        return None
    if passed is False:
        why = f"failed (score {score(case.get('score'))})"
        return "failure", f"regressed: passed in the baseline, {why} in the candidate" if regressed else why
    if status == "failed":
        reason = f": {case['stop_reason']}" if case.get("stop_reason") else ""
        return "error", f"the case run failed before it was scored{reason}"
    return "skipped", f"not scored (case status {status or 'unknown'})"


def suite(
    *, name: str, classname: str, cases: Iterable[dict[str, Any]], regressed: Iterable[str] = (), properties: dict[str, Any] | None = None
) -> ET.Element:
    """One lane's ``<testsuite>``; ``regressed`` names the case keys to mark as regressions."""
    marked = set(regressed)
    element = ET.Element("testsuite", name=_text(name))
    if properties:
        props = ET.SubElement(element, "properties")
        for key, value in properties.items():
            ET.SubElement(props, "property", name=_text(key), value=_text(value))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total = 0.0
    for case in cases:
        key = str(case.get("case_key"))
        trial = case.get("trial") or 1  # repeated trials: one test case per trial, named apart
        title = key if trial == 1 else f"{key} (trial {trial})"
        testcase = ET.SubElement(element, "testcase", classname=_text(classname), name=_text(title), time=f"{_seconds(case):.3f}")
        counts["tests"] += 1
        total += _seconds(case)
        found = _outcome(case, key in marked)
        if found is not None:
            tag, message = found
            ET.SubElement(testcase, tag, message=_text(message), type=tag).text = _text(message)
            counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[tag]] += 1
    for key, value in counts.items():
        element.set(key, str(value))
    element.set("time", f"{total:.3f}")
    return element


def document(name: str, suites: list[ET.Element]) -> str:
    root = ET.Element("testsuites", name=_text(name))
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(sum(int(s.get(key) or 0) for s in suites)))
    root.extend(suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write(path: str | Path, name: str, suites: list[ET.Element]) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(document(name, suites), encoding="utf-8")


def run_suites(run: dict[str, Any], cases: list[dict[str, Any]]) -> list[ET.Element]:
    """A run's lanes (``agentclash run --junit``)."""
    pack = f"{run.get('pack_name')} v{run.get('pack_version_number')}"
    return [
        suite(
            name=f"{pack} · {lane.get('label')}",
            classname=f"{pack}.{lane.get('label')}",
            cases=[c for c in cases if c.get("lane_id") == lane["id"]],
            properties={"run_id": run["id"], "lane_id": lane["id"], "run_status": run.get("status")},
        )
        for lane in run.get("lanes") or []
    ]


def trial_properties(gate: dict[str, Any]) -> dict[str, Any]:
    """The trials behind a gate's verdict as suite properties: trials per case, and per metric the
    paired change with its interval; empty for a gate without trials."""
    statistics = gate.get("statistics") or {}
    if not statistics:
        return {}
    properties: dict[str, Any] = {"trials_per_case": statistics.get("trials_per_case"), "trials_note": statistics.get("note")}
    for one in statistics.get("comparisons") or []:
        interval = one.get("interval")
        if interval and statistics.get("trials_per_case", 0) >= 2:
            metric = one.get("metric")
            properties[f"{metric}_change"] = f"{one.get('difference'):+.4f}"
            properties[f"{metric}_interval"] = f"{interval[0]:+.4f} to {interval[1]:+.4f} ({one.get('confidence'):.1%})"
            properties[f"{metric}_decision"] = one.get("decision")
    if statistics.get("more_trials_per_case") is not None:
        properties["more_trials_per_case"] = statistics["more_trials_per_case"]
    return properties


def gate_suites(outcome: GateOutcome) -> list[ET.Element]:
    """A gate's baseline and candidate lanes (``gate --junit``, ``ci run --junit``)."""
    comparison = outcome.comparison
    suites = []
    for side, run, lane_id, cases in (
        ("baseline", outcome.baseline_run, comparison["baseline_lane_id"], outcome.baseline_cases),
        ("candidate", outcome.candidate_run, comparison["candidate_lane_id"], outcome.candidate_cases),
    ):
        label = next((lane.get("label") for lane in run.get("lanes") or [] if lane.get("id") == lane_id), f"lane {lane_id}")
        pack = f"{run.get('pack_name')} v{run.get('pack_version_number')}"
        suites.append(
            suite(
                name=f"{side}: {pack} · {label}",
                classname=f"{pack}.{side}.{label}",
                cases=cases,
                regressed=outcome.regressed() if side == "candidate" else (),
                properties={
                    "run_id": run.get("id"),
                    "lane_id": lane_id,
                    "verdict": outcome.verdict,
                    "comparison_id": comparison["id"],
                    **trial_properties(outcome.gate),
                },
            )
        )
    return suites
