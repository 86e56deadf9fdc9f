"""The results matrix of a run page: rows are cases, columns are lanes (presentation only).

Built from the small rows of ``selectors.case_matrix_rows`` (no outputs), so a page of the
matrix costs three queries however many cases the run has: every case run, the output starts of
the page's cells, and — when a validator is chosen — that validator's verdicts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from engine.scoring.documents import ValidatorDetail
from engine.types import JSON
from runs.models import CaseStatus, Lane, ScoreStatus
from runs.selectors import CaseMatrixRow, MatrixTrialCounts
from runs.timeline import cost_text, duration_text

SHOW_ALL, SHOW_FAILURES, SHOW_DISAGREEMENTS = "all", "failures", "disagreements"
SHOW_CHOICES = [
    (SHOW_ALL, "Every case"),
    (SHOW_FAILURES, "Failures only"),
    (SHOW_DISAGREEMENTS, "Lanes disagree"),
]


@dataclasses.dataclass(frozen=True)
class MatrixFilters:
    show: str = SHOW_ALL
    validator: str = ""

    @classmethod
    def from_query(cls, query: Any, validators: Iterable[str]) -> MatrixFilters:
        show = query.get("show") or SHOW_ALL
        validator = query.get("validator") or ""
        return cls(
            show=show if show in dict(SHOW_CHOICES) else SHOW_ALL,
            validator=validator if validator in set(validators) else "",
        )

    @property
    def active(self) -> bool:
        return self.show != SHOW_ALL or bool(self.validator)


@dataclasses.dataclass
class MatrixCell:
    case_run_id: int
    lane_id: int
    tone: str  # pass | fail | error | running | queued | cancelled | pending: the cell's colour
    label: str  # the same in words ("Pass", "Fail", "Running"…): colour is never the only signal
    score: float | None = None
    detail: str = ""  # a stop reason, a validator's reason
    output: str | None = None  # the start of the final output
    verdict: bool | None = None  # pass/fail as compared across lanes (None: no verdict yet)
    latency_ms: int | None = None  # the case's wall time in its lane (None: not finished)
    tokens: int = 0
    cost_usd: float | None = None  # as its score priced it (None: not scored or not priced)
    # Repeated trials (docs/runs.md, "Trials"): the cell stands for every trial of the case in its
    # lane and links to trial 1; ``trials`` counts them, ``passed_trials`` of ``judged_trials`` passed.
    trials: int = 1
    passed_trials: int = 0
    judged_trials: int = 0
    open_trials: int = 0
    scores: list[float] = dataclasses.field(default_factory=list, repr=False)
    trial_latencies: list[int] = dataclasses.field(default_factory=list, repr=False)
    trial_tokens: list[int] = dataclasses.field(default_factory=list, repr=False)

    @property
    def key(self) -> str:
        return f"{self.case_run_id}"

    @property
    def latency_text(self) -> str:
        return duration_text(self.latency_ms) if self.latency_ms is not None else "—"

    @property
    def cost_text(self) -> str:
        """The cell's cost; blank while it is not scored (``timeline.cost_text`` words the rest)."""
        return "" if self.cost_usd is None and self.tone in ("queued", "running") else cost_text(self.cost_usd)


@dataclasses.dataclass
class MatrixRow:
    case_key: str
    cells: list[MatrixCell | None]  # one per lane, None when the lane has no such case
    inputs: JSON = None  # the case's inputs as the agent was given them (runs.selectors.case_inputs_shown)

    @property
    def inputs_text(self) -> str:
        return inputs_text(self.inputs)

    @property
    def verdicts(self) -> list[bool]:
        return [c.verdict for c in self.cells if c is not None and c.verdict is not None]

    @property
    def failed(self) -> bool:
        return any(c is not None and c.tone in ("fail", "error") for c in self.cells)

    @property
    def disagreement(self) -> bool:
        verdicts = self.verdicts
        return len(verdicts) > 1 and len(set(verdicts)) > 1


def _cell(row: CaseMatrixRow, validator: ValidatorDetail | None, validator_key: str) -> MatrixCell:
    cell = MatrixCell(case_run_id=row["pk"], lane_id=row["lane_id"], tone="pending", label="Scoring…", score=row["score"])
    cell.latency_ms, cell.tokens = row["duration_ms"], row["total_tokens"] or 0
    status = row["status"]
    if status == CaseStatus.QUEUED:
        cell.tone, cell.label = "queued", "Queued"
    elif status == CaseStatus.RUNNING:
        cell.tone, cell.label = "running", "Running" + (f" (attempt {row['attempt']})" if row["attempt"] > 1 else "")
    elif status == CaseStatus.CANCELLED:
        cell.tone, cell.label = "cancelled", "Cancelled"
    elif validator_key:
        _validator_cell(cell, validator, row)
    elif row["score_status"] == ScoreStatus.ERRORED:
        cell.tone, cell.label = "error", "Scoring error"
    elif row["passed"] is not None:
        cell.verdict = bool(row["passed"])
        cell.tone, cell.label = ("pass", "Pass") if row["passed"] else ("fail", "Fail")
    elif row["score_status"] == ScoreStatus.SCORED:
        cell.tone, cell.label = "pending", "Unscored"  # the evidence did not decide it (docs/scoring.md)
    if status == CaseStatus.FAILED:  # the agent did not finish (timeout, step limit…): say why next to any verdict
        cell.detail = row["stop_reason"] or "failed"
        if cell.verdict is None:
            cell.tone, cell.label = "error", f"Failed: {cell.detail}"
    return cell


def _validator_cell(cell: MatrixCell, validator: ValidatorDetail | None, row: CaseMatrixRow) -> None:
    if validator is None:
        cell.tone, cell.label = ("pending", "Scoring…") if row["score_status"] == ScoreStatus.PENDING else ("pending", "Not checked")
        cell.score = None
        return
    verdict, state = validator.get("verdict"), validator.get("state")
    cell.score = validator.get("normalized_score")
    cell.detail = str(validator.get("reason") or "")[:200]
    if state != "available":
        cell.tone, cell.label = "error", "Unavailable" if state == "unavailable" else "Error"
        cell.verdict = False
    else:
        cell.verdict = verdict == "pass"
        cell.tone, cell.label = ("pass", "Pass") if cell.verdict else ("fail", "Fail")


def _add_trial(cell: MatrixCell, trial: MatrixCell) -> None:
    """Fold one more trial of the case into its lane's cell (the cell shows ``k/n passed``)."""
    if cell.trials == 1:  # the first trial's own counts, before its label is replaced
        _count_trial(cell, cell)
    cell.trials += 1
    _count_trial(cell, trial)
    cell.score = sum(cell.scores) / len(cell.scores) if cell.scores else None
    # A cell of several trials shows their means: latency over the finished ones, tokens over all.
    cell.latency_ms = round(sum(cell.trial_latencies) / len(cell.trial_latencies)) if cell.trial_latencies else None
    cell.tokens = round(sum(cell.trial_tokens) / len(cell.trial_tokens)) if cell.trial_tokens else 0
    _trials_label(cell, running="running" in (trial.tone, cell.tone))


def _apply_counts(cell: MatrixCell, counts: MatrixTrialCounts) -> None:
    """The trial counts of ``selectors.case_matrix_trial_counts`` on trial 1's cell (the same words as folding)."""
    cell.trials, cell.open_trials = counts["trials"], counts["open"]
    cell.passed_trials, cell.judged_trials = counts["passed"], counts["judged"]
    cell.score = counts["score_mean"]
    cell.latency_ms = round(counts["latency_mean"]) if counts["latency_mean"] is not None else None
    cell.tokens = round(counts["tokens_mean"] or 0)
    _trials_label(cell, running=counts["running"] > 0)


def _trials_label(cell: MatrixCell, *, running: bool) -> None:
    done = cell.trials - cell.open_trials
    if not done:
        cell.tone, cell.label = ("running", "Running") if running else ("queued", "Queued")
        cell.label += f" ({cell.trials} trials)"
        cell.verdict = None
        return
    k, n = cell.passed_trials, cell.judged_trials
    cell.label = f"{k}/{n} passed" if n else f"0/{done} judged"
    cell.tone = "pending" if not n else "pass" if k == n else "fail" if k == 0 else "mixed"
    cell.verdict = (2 * k > n) if n else None  # across lanes, a cell's verdict is its trials' majority
    extra = [f"{cell.open_trials} not finished"] if cell.open_trials else []
    if n < done:
        extra.append(f"{done - n} without a verdict")
    cell.detail = ", ".join(extra) if extra else ""


def _count_trial(cell: MatrixCell, trial: MatrixCell) -> None:
    if trial.tone in ("queued", "running"):
        cell.open_trials += 1
    elif trial.verdict is not None:
        cell.judged_trials += 1
        cell.passed_trials += int(trial.verdict)
    if trial.score is not None and trial.tone not in ("queued", "running"):
        cell.scores.append(float(trial.score))
    if trial.latency_ms is not None and trial.tone not in ("queued", "running"):
        cell.trial_latencies.append(trial.latency_ms)
    cell.trial_tokens.append(trial.tokens)


def matrix_rows(
    rows: list[CaseMatrixRow],
    lanes: list[Lane],
    *,
    validator_key: str = "",
    validator_verdicts: dict[int, ValidatorDetail] | None = None,
    trial_counts: dict[tuple[int, str], MatrixTrialCounts] | None = None,
) -> list[MatrixRow]:
    """Case runs grouped by case (in the run's case order), one cell per lane (every trial of the case in it).

    ``rows`` are every case run, their trials folded into one cell; or, with ``trial_counts``
    (``selectors.case_matrix_trial_counts``), trial 1 of each case and the counts of all its
    trials, so the page reads as many rows at 10 trials as at one."""
    column = {lane.pk: index for index, lane in enumerate(lanes)}
    by_case: dict[str, MatrixRow] = {}
    verdicts = validator_verdicts or {}
    for row in rows:
        matrix_row = by_case.get(row["case_key"])
        if matrix_row is None:
            matrix_row = by_case[row["case_key"]] = MatrixRow(case_key=row["case_key"], cells=[None] * len(lanes))
        if row["lane_id"] in column:
            index = column[row["lane_id"]]
            cell = _cell(row, verdicts.get(row["pk"]), validator_key)
            first = matrix_row.cells[index]
            if first is None:
                matrix_row.cells[index] = cell
                counts = trial_counts.get((row["lane_id"], row["case_key"])) if trial_counts else None
                if counts is not None and counts["trials"] > 1:
                    _apply_counts(cell, counts)
            else:
                _add_trial(first, cell)
    return list(by_case.values())


def trial_cells(
    rows: list[CaseMatrixRow], *, validator_key: str = "", validator_verdicts: dict[int, ValidatorDetail] | None = None
) -> dict[int, MatrixCell]:
    """Each case run's own cell (the list view: one row per trial), by case run id."""
    verdicts = validator_verdicts or {}
    return {row["pk"]: _cell(row, verdicts.get(row["pk"]), validator_key) for row in rows}


def matrix_filter(rows: list[MatrixRow], filters: MatrixFilters) -> list[MatrixRow]:
    if filters.show == SHOW_FAILURES:
        return [r for r in rows if r.failed]
    if filters.show == SHOW_DISAGREEMENTS:
        return [r for r in rows if r.disagreement]
    return rows


def matrix_attach_outputs(rows: Iterable[MatrixRow], outputs: dict[int, str | None]) -> None:
    for row in rows:
        for cell in row.cells:
            if cell is not None:
                cell.output = outputs.get(cell.case_run_id)


def matrix_search(rows: list[MatrixRow], keys: set[str]) -> list[MatrixRow]:
    return [r for r in rows if r.case_key in keys]


def matrix_attach_details(
    rows: Iterable[MatrixRow],
    *,
    costs: dict[int, float | None],
    inputs: dict[str, JSON],
    cost_means: dict[tuple[int, str], float | None] | None = None,
) -> None:
    """A page's costs per cell and inputs per row; a cell of several trials gets their mean cost
    (``cost_means``, ``selectors.case_cost_means``)."""
    for row in rows:
        row.inputs = inputs.get(row.case_key)
        for cell in row.cells:
            if cell is not None:
                cell.cost_usd = costs.get(cell.case_run_id)
                if cell.trials > 1 and cost_means is not None:
                    cell.cost_usd = cost_means.get((cell.lane_id, row.case_key))


def inputs_text(inputs: JSON) -> str:
    """A case's inputs in plain text: one ``key: value`` line per declared input."""
    if inputs is None or inputs == [] or inputs == {}:
        return ""
    if isinstance(inputs, dict):
        items: list[tuple[str, JSON]] = list(inputs.items())
    elif isinstance(inputs, list):
        items = [
            (str(item.get("key") or item.get("name") or index), item.get("value")) if isinstance(item, dict) else (str(index), item)
            for index, item in enumerate(inputs)
        ]
    else:
        return _value_text(inputs)
    return "\n".join(f"{key}: {_value_text(value)}" for key, value in items)


def _value_text(value: JSON) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def matrix_digest(rows: Iterable[MatrixRow], *extra: Any) -> str:
    """A short fingerprint of what a matrix page shows: an unchanged page is not sent again."""
    digest = hashlib.blake2b(digest_size=8)
    for row in rows:
        for cell in row.cells:
            digest.update(repr(dataclasses.astuple(cell) if cell else None).encode())
    digest.update(repr(extra).encode())
    return digest.hexdigest()
