"""A run's results outside its page: ``results.csv``, ``results.json`` and the self-contained
``report.html`` (presentation only; docs/runs.md, "Exports and the offline report").

The exports are streamed: rows are read in chunks (``selectors.results_rows``) and written as
they come, so a run of many thousand case runs never sits in memory as one document. Outputs are
masked like the pages: stored masked (secrets and planted values), and the security pack's
planted values masked once more on the way out (``selectors.run_masker``).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
from base64 import b64encode
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from engine.redact import Redactor
from runs.matrix import MatrixCell, MatrixRow, inputs_text, matrix_attach_details, matrix_attach_outputs, matrix_rows
from runs.models import Run
from runs.selectors import case_cost_means, case_costs, case_inputs_shown, case_matrix_rows, case_outputs, results_rows, run_masker
from scoring.presenters import run_scorecard_rows

CSV_COLUMNS = (
    "case_key", "lane", "lane_index", "trial", "status", "passed", "score", "latency_ms",
    "input_tokens", "output_tokens", "total_tokens", "cost_usd", "stop_reason", "output",
)  # fmt: skip
# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection, OWASP).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# The report holds whole outputs; one beyond this is cut, and says so.
REPORT_OUTPUT_MAX_CHARS = 200_000


def neutralise(value: Any) -> Any:
    """A text cell that a spreadsheet would read as a formula gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _cost(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def result_record(row: dict[str, Any], masker: Redactor) -> dict[str, Any]:
    """One case × lane of the run, as both exports write it."""
    output = row["final_output"]
    return {
        "case_key": row["case_key"],
        "lane": row["lane__label"],
        "lane_index": row["lane__lane_index"],
        "trial": row["trial"],  # 1, 2, …: repeats of the case in its lane (docs/runs.md, "Trials")
        "case_run_id": row["pk"],
        "status": row["status"],
        "passed": row["passed"],
        "score": row["score"],
        "score_status": row["score_status"],
        "latency_ms": row["duration_ms"],
        "input_tokens": row["input_tokens"],
        "output_tokens": row["output_tokens"],
        "total_tokens": row["total_tokens"],
        "cost_usd": _cost(row["case_score__document__cost_usd"]),
        "stop_reason": row["stop_reason"],
        "output": masker.text(output) if output is not None else None,
    }


def csv_lines(run: Run) -> Iterator[str]:
    """``results.csv``: a header, then one line per case × lane × trial."""
    masker = run_masker(run=run)
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate(0)
        return text

    writer.writerow(CSV_COLUMNS)
    yield flush()
    for row in results_rows(run=run):
        record = result_record(row, masker)
        writer.writerow([_csv_cell(record[column]) for column in CSV_COLUMNS])
        yield flush()


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return neutralise(value)


def json_chunks(run: Run) -> Iterator[str]:
    """``results.json``: ``{"run": {…}, "results": [{…}, …]}``, written a row at a time."""
    masker = run_masker(run=run)
    head = {
        "id": run.pk,
        "name": run.name,
        "status": run.status,
        "pack": run.pack_version.pack.name,
        "pack_version": run.pack_version.number,
        "created_at": run.created_at.isoformat(),
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
    }
    yield '{"run": ' + json.dumps(head, ensure_ascii=False) + ', "results": ['
    first = True
    for row in results_rows(run=run):
        yield ("" if first else ",") + "\n" + json.dumps(result_record(row, masker), ensure_ascii=False)
        first = False
    yield "\n]}\n"


# -- the offline report -------------------------------------------------------------------------


@dataclasses.dataclass
class ReportCell:
    cell: MatrixCell
    output: str | None
    cut: int  # characters left out of a very long output (0: whole)


@dataclasses.dataclass
class ReportRow:
    case_key: str
    inputs: str
    cells: list[ReportCell | None]
    disagreement: bool


def report_context(run: Run, *, shared: bool = False) -> dict[str, Any]:
    """Everything ``runs/report.html`` shows: the summary, the lanes' scorecard, every case with
    its inputs and every lane's whole output (masked)."""
    masker = run_masker(run=run)
    lanes = list(run.lanes.order_by("lane_index"))
    rows = matrix_rows(case_matrix_rows(run=run), lanes)  # a case's trials folded in its cell: k/n passed, means
    ids = [c.case_run_id for r in rows for c in r.cells if c is not None]
    means = case_cost_means(run=run, case_keys=[r.case_key for r in rows]) if run.repeats > 1 or run.is_adaptive else None
    matrix_attach_details(rows, costs=case_costs(case_run_ids=ids), inputs=case_inputs_shown(run=run, masker=masker), cost_means=means)
    matrix_attach_outputs(rows, case_outputs(case_run_ids=ids))
    return {
        "run": run,
        "lanes": lanes,
        "scorecard": run_scorecard_rows(run),
        "rows": [_report_row(row, masker) for row in rows],
        "generated_at": timezone.now(),
        "shared": shared,
        "style": report_style(),
    }


def _report_row(row: MatrixRow, masker: Redactor) -> ReportRow:
    cells: list[ReportCell | None] = []
    for cell in row.cells:
        if cell is None:
            cells.append(None)
            continue
        output = masker.text(cell.output) if cell.output is not None else None
        cell.detail = masker.text(cell.detail) if cell.detail else cell.detail
        cut = max(0, len(output) - REPORT_OUTPUT_MAX_CHARS) if output is not None else 0
        cells.append(ReportCell(cell=cell, output=output[:REPORT_OUTPUT_MAX_CHARS] if output is not None else None, cut=cut))
    return ReportRow(case_key=row.case_key, inputs=inputs_text(row.inputs), cells=cells, disagreement=row.disagreement)


_STYLE_PATH = Path(settings.BASE_DIR) / "static" / "css" / "report.css"


def report_css() -> str:
    return _STYLE_PATH.read_text(encoding="utf-8")


def report_style() -> SafeString:
    """The report's one inline ``<style>`` element (the file must open offline, with no server)."""
    css = report_css().replace("</", "<\\/")
    return mark_safe(f"<style>{css}</style>")  # noqa: S308 - our own stylesheet, read from the repository


def report_csp() -> str:
    """The strict policy the report is served under: nothing loads, only its inline style (by hash)."""
    css = report_css().replace("</", "<\\/")
    digest = b64encode(hashlib.sha256(css.encode()).digest()).decode()
    return f"default-src 'none'; style-src 'sha256-{digest}'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"


def encode_lines(chunks: Iterable[str]) -> Iterator[bytes]:
    for chunk in chunks:
        yield chunk.encode()


EXPORTS = {  # name in the URL → (the rows, content type)
    "csv": (csv_lines, "text/csv; charset=utf-8"),
    "json": (json_chunks, "application/json"),
}


def export_response(run: Run, kind: str) -> StreamingHttpResponse:
    """``results.csv`` or ``results.json`` of ``run`` as a streamed download (the run page's links
    and the API's ``…/runs/<id>/results.csv|json`` answer the same bytes)."""
    rows, content_type = EXPORTS[kind]
    response = StreamingHttpResponse(encode_lines(rows(run)), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-results.{kind}"'
    response["Cache-Control"] = "private, no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response
