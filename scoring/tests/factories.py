"""Rows for scoring, comparison and gate tests, built directly (no run execution needed).

``make_pack_version`` publishes a tiny two-case pack straight into the tables; ``make_run``
creates a finished run whose lanes answered each case with the given outputs, plus the events
the native engine would have written; ``score_run`` runs the scoring services over it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from django.utils import timezone

from engine.events import MODEL_CALL_COMPLETED, SYSTEM_RUN_COMPLETED, SYSTEM_RUN_STARTED
from packs.models import Case, InputSet, Pack, PackVersion
from runs.models import CaseRun, Lane, Run, RunEvent, RunStatus
from scoring import services as scoring
from workspaces.models import Workspace

_counter = itertools.count(1)

SPEC: dict[str, Any] = {
    "name": "arithmetic",
    "version_number": 1,
    "judge_mode": "deterministic",
    "validators": [
        {"key": "answer", "type": "exact_match", "target": "final_output", "expected_from": "case.expectations.answer"},
    ],
    "metrics": [
        {"key": "completed", "type": "boolean", "collector": "run_completed_successfully"},
        {"key": "failures", "type": "numeric", "collector": "run_failure_count"},
        {"key": "latency", "type": "numeric", "collector": "run_total_latency_ms", "unit": "ms"},
    ],
    "pricing": {
        "models": [
            {
                "provider_key": "scripted",
                "provider_model_id": "scripted-1",
                "input_cost_per_million_tokens": 1.0,
                "output_cost_per_million_tokens": 2.0,
            }
        ]
    },
    "scorecard": {
        "dimensions": [
            {"key": "correctness", "source": "validators", "gate": True, "pass_threshold": 1.0},
            "reliability",
            "latency",
            "cost",
        ],
        "normalization": {"latency": {"target_ms": 1000, "max_ms": 10000}, "cost": {"target_usd": 0.001, "max_usd": 1.0}},
    },
}
ANSWERS = {"two-plus-two": "4", "three-squared": "9"}


def make_pack_version(workspace: Workspace, *, spec: dict[str, Any] | None = None, answers: dict[str, str] | None = None) -> PackVersion:
    answers = answers or ANSWERS
    n = next(_counter)
    pack = Pack.objects.create(workspace=workspace, slug=f"arith-{n}", name=f"Arithmetic {n}")
    manifest = {"pack": {"slug": pack.slug, "name": pack.name}, "version": {"number": 1}, "evaluation_spec": spec or SPEC}
    version = PackVersion.objects.create(
        pack=pack, workspace=workspace, number=1, execution_mode="native", manifest=manifest, manifest_checksum=f"{n:064d}", raw_yaml=""
    )
    input_set = InputSet.objects.create(pack_version=version, key="default", name="Default")
    for position, (case_key, answer) in enumerate(answers.items()):
        Case.objects.create(
            input_set=input_set,
            pack_version=version,
            challenge_key="arith",
            case_key=case_key,
            position=position,
            payload={
                "schema_version": 1,
                "case_key": case_key,
                "payload": {"question": case_key},
                "inputs": [{"key": "question", "value": case_key}],
                "expectations": [{"key": "answer", "value": answer}],
            },
        )
    return version


def make_run(
    workspace: Workspace,
    *,
    pack_version: PackVersion | None = None,
    lanes: Sequence[Mapping[str, str | list[str]]] | None = None,
    name: str = "",
    status: str = RunStatus.COMPLETED,
    score: bool = True,
) -> Run:
    """``lanes`` = one ``{case_key: final_output}`` per lane (default: one lane, every answer right);
    a list of outputs plays the case that many times, one trial per output (``CaseRun.trial`` 1, 2, …)."""
    pack_version = pack_version or make_pack_version(workspace)
    input_set = pack_version.input_sets.get()
    cases = list(input_set.cases.order_by("position"))
    lanes = lanes if lanes is not None else [{c.case_key: ANSWERS.get(c.case_key, "") for c in cases}]
    run = Run.objects.create(
        workspace=workspace, pack_version=pack_version, input_set=input_set, name=name or f"Run {next(_counter)}", status=status
    )
    start = timezone.now() - timedelta(minutes=5)
    for index, outputs in enumerate(lanes):
        lane = Lane.objects.create(
            run=run,
            workspace=workspace,
            lane_index=index,
            label=f"lane-{index}",
            status="completed",
            snapshot={
                "deployment": {"name": f"deployment-{index}", "model": "scripted-1"},
                "provider_account": {"provider_key": "scripted"},
            },
        )
        sequence = 1
        for position, case, trial, output in _trials(cases, outputs):
            case_run = CaseRun.objects.create(
                run=run,
                lane=lane,
                case=case,
                case_key=case.case_key,
                position=position,
                trial=trial,
                status="completed",
                final_output=output,
                input_tokens=100,
                output_tokens=20,
                total_tokens=120,
                duration_ms=2000,
                step_count=1,
            )
            for offset, (etype, payload) in enumerate(
                [
                    (SYSTEM_RUN_STARTED, {}),
                    (
                        MODEL_CALL_COMPLETED,
                        {
                            "provider_key": "scripted",
                            "provider_model_id": "scripted-1",
                            "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120},
                        },
                    ),
                    (
                        SYSTEM_RUN_COMPLETED,
                        {"final_output": output, "input_tokens": 100, "output_tokens": 20, "total_tokens": 120, "tool_call_count": 0},
                    ),
                ]
            ):
                RunEvent.objects.create(
                    run=run,
                    lane=lane,
                    case_run=case_run,
                    event_id=f"native:{lane.pk}:{case.case_key}:{etype}" + (f":{trial}" if trial > 1 else ""),
                    sequence_number=sequence,
                    event_type=etype,
                    source="native_engine",
                    occurred_at=start + timedelta(seconds=position * 10 + offset),
                    case_key=case.case_key,
                    payload=payload,
                )
                sequence += 1
        most = max((trial for _, _, trial, _ in _trials(cases, outputs)), default=1)
        Lane.objects.filter(pk=lane.pk).update(next_sequence=sequence, trials=most)
    if score:
        score_run(run)
    return run


def _trials(cases: list[Case], outputs: Mapping[str, str | list[str]]) -> list[tuple[int, Case, int, str]]:
    """(position, case, trial, output) for every trial of every case, in play order."""
    out = []
    for position, case in enumerate(cases):
        answer = outputs.get(case.case_key, "")
        for trial, output in enumerate(answer if isinstance(answer, list) else [answer], start=1):
            out.append((position, case, trial, str(output)))
    return out


def score_run(run: Run) -> None:
    for case_run_id in CaseRun.objects.filter(run=run).values_list("pk", flat=True):
        scoring.case_run_score(case_run_id=case_run_id)
    for lane_id in Lane.objects.filter(run=run).values_list("pk", flat=True):
        scoring.lane_score(lane_id=lane_id)
    scoring.run_score(run_id=run.pk)
    run.refresh_from_db()
