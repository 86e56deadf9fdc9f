"""Persisting engine events: redaction, oversized payloads, per-lane sequence numbers, dedup.

The store (:func:`run_events_append`), the engine's sink for one case attempt
(:class:`RunEventSink`), and the lane row whose ``next_sequence`` numbers every event
(:class:`LaneRow`, the one writer of that row).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.utils import timezone

from engine.redact import Redactor, StreamRedactor
from engine.types import EVENT_SCHEMA_VERSION, Event
from runs.adapters.statements import prepared_cursor
from runs.models import Lane, RunEvent

logger = logging.getLogger(__name__)

REF_KEYS = frozenset({"$ref", "bytes", "type"})
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


# -- the lane row ----------------------------------------------------------------------------
#
# The lane row's one writer: every statement that locks a lane's row (``runs_runagent``) is here.
#
# A lane's row serialises its writers: whoever writes events for the lane, finishes one of its
# cases or dispatches its next ones takes the row's lock first, for the rest of its transaction.
# Three statements take it, each reading what its caller needs in the same round trip:
#
# - :meth:`LaneRow.reserve`: the next ``count`` event sequence numbers (``next_sequence``), and
#   optionally the lane's dispatch state (a case's finish: its last events, then the refill);
# - :meth:`LaneRow.state`: the dispatch state alone (a dispatch outside a finish);
# - :meth:`LaneRow.lock`: nothing (the hosted callback: one writer per lane while it checks the
#   case is still open and records the agent's events).
#
# SQLite has no row locks and refuses to upgrade a read transaction to a write one while another
# connection writes, so every statement is a write there (a no-op ``UPDATE`` where nothing
# changes); PostgreSQL takes ``SELECT … FOR UPDATE`` where a no-op write would leave a dead row
# version behind on the lane's hot row.

DEFAULT_MAX_IN_FLIGHT = 8

# The in-flight limit from the lane's snapshot, read by the locking statement itself.
_LIMIT_SQL = {
    "postgresql": "snapshot -> 'runtime_profile' ->> 'max_in_flight_cases'",
    "sqlite": "json_extract(snapshot, '$.runtime_profile.max_in_flight_cases')",
}


@dataclasses.dataclass(frozen=True, slots=True)
class LaneState:
    """What dispatch needs to know about a lane, read under its lock."""

    lane_status: str
    run_status: str
    max_in_flight: int
    workspace_id: int = 0


class LaneRow:
    """The lane ``lane_id``'s row: lock it, reserve event sequence numbers, read its dispatch state."""

    __slots__ = ("lane_id",)

    def __init__(self, lane_id: int) -> None:
        self.lane_id = lane_id

    @staticmethod
    def _state_columns() -> str:
        limit = _LIMIT_SQL.get(connection.vendor)
        return (
            "status, (SELECT status FROM runs_run WHERE runs_run.id = runs_runagent.run_id), "
            "(SELECT workspace_id FROM runs_run WHERE runs_run.id = runs_runagent.run_id)" + (f", {limit}" if limit else "")
        )

    def _state(self, row: tuple[Any, ...]) -> LaneState:
        if len(row) < 4:  # another database: read the snapshot
            lane = Lane.objects.only("snapshot").filter(pk=self.lane_id).first()
            value = lane.runtime_profile_snapshot.get("max_in_flight_cases") if lane else None
        else:
            value = row[3]
        try:
            limit = int(value or DEFAULT_MAX_IN_FLIGHT)
        except (TypeError, ValueError):
            limit = DEFAULT_MAX_IN_FLIGHT
        return LaneState(lane_status=row[0], run_status=row[1], max_in_flight=limit, workspace_id=int(row[2] or 0))

    def lock(self) -> None:
        """Lock the row for the rest of the transaction (a no-op write)."""
        with connection.cursor() as cursor:
            cursor.execute("UPDATE runs_runagent SET next_sequence = next_sequence WHERE id = %s", [self.lane_id])

    def state(self) -> LaneState | None:
        """Lock the row and read the lane's dispatch state (None when the lane is gone)."""
        columns = self._state_columns()
        if connection.vendor == "postgresql":
            sql = f"SELECT {columns} FROM runs_runagent WHERE id = %s FOR UPDATE OF runs_runagent"
        else:
            sql = f"UPDATE runs_runagent SET next_sequence = next_sequence WHERE id = %s RETURNING {columns}"
        with connection.cursor() as cursor:
            cursor.execute(sql, [self.lane_id])
            row = cursor.fetchone()
        return None if row is None else self._state(tuple(row))

    def reserve(self, count: int, *, with_state: bool = False) -> tuple[int, LaneState | None]:
        """Reserve ``count`` sequence numbers in one statement, which locks the row; returns the
        first and (``with_state``) the lane's dispatch state read by the same statement.

        SQLite serialises every write transaction anyway (``BEGIN IMMEDIATE``).
        """
        returning = f", {self._state_columns()}" if with_state else ""
        with prepared_cursor() as cursor:
            cursor.execute(
                f"UPDATE runs_runagent SET next_sequence = next_sequence + %s WHERE id = %s RETURNING next_sequence{returning}",
                [count, self.lane_id],
            )
            row = cursor.fetchone()
        if row is None:
            raise LookupError(f"lane {self.lane_id} is gone")
        return int(row[0]) - count, self._state(tuple(row[1:])) if with_state else None

    def release(self, count: int) -> None:
        """Give back the last ``count`` numbers of a reservation (the row is still locked by it)."""
        with connection.cursor() as cursor:
            cursor.execute("UPDATE runs_runagent SET next_sequence = next_sequence - %s WHERE id = %s", [count, self.lane_id])


# -- the store ---------------------------------------------------------------------------------


def _occurred_at(value: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return timezone.now()


def payload_store(*, lane_id: int, event_id: str, event_type: str, payload: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Inline payload, or a ``{"$ref", "bytes", "type"}`` stub and the storage key (spec §4.5)."""
    stored, ref, _ = _payload_split(lane_id=lane_id, event_id=event_id, event_type=event_type, payload=payload)
    return stored, ref


def _with_schema_version(text: str, payload: dict[str, Any]) -> str:
    """The emitter's encoding of ``payload`` (see ``Event.payload_json``) with ``schema_version``
    appended as ``setdefault`` appends it; "" when there is none to reuse."""
    if not text or "schema_version" in payload:
        return text
    version = json.dumps(EVENT_SCHEMA_VERSION)
    return f'{text[:-1]},"schema_version":{version}}}' if payload else f'{{"schema_version":{version}}}'


def _payload_split(
    *, lane_id: int, event_id: str, event_type: str, payload: dict[str, Any], text: str = ""
) -> tuple[dict[str, Any], str, str]:
    """:func:`payload_store` plus the JSON text of what is stored inline (encoded once: ``text``
    when the caller has it already)."""
    text = text or json.dumps(payload, separators=(",", ":"), default=str)
    raw = text.encode()
    if len(raw) <= settings.RUN_EVENT_INLINE_MAX_BYTES:
        return payload, "", text
    key = f"run-events/{lane_id}/{_UNSAFE.sub('_', event_id)}.json"
    if not default_storage.exists(key):  # a redelivered flush writes the same bytes once
        key = default_storage.save(key, ContentFile(raw))
    stub = {"$ref": key, "bytes": len(raw), "type": event_type}
    return stub, key, json.dumps(stub, separators=(",", ":"))


def payload_hydrate(payload: Any) -> Any:
    """The full payload of an event whose payload may be a stored-file stub."""
    if not (isinstance(payload, dict) and set(payload) == REF_KEYS and isinstance(payload.get("$ref"), str)):
        return payload
    try:
        with default_storage.open(payload["$ref"], "rb") as handle:
            return json.loads(handle.read().decode())
    except (OSError, ValueError):
        logger.warning("Event payload %s is missing from storage", payload["$ref"])
        return payload


@dataclasses.dataclass(frozen=True, slots=True)
class PreparedEvent:
    """An event ready to insert: redacted, its payload inline or moved to a file, encoded once."""

    event_id: str
    event_type: str
    source: str
    occurred_at: dt.datetime
    case_key: str
    payload: dict[str, Any]  # what is stored inline: the payload, or the stub of a stored file
    payload_ref: str
    text: str  # ``payload`` as JSON: what PostgreSQL's COPY writes

    def as_stored(self, sequence_number: int | None) -> dict[str, Any]:
        """The event as a read returns it (``payload`` not re-parsed: the emitter made it JSON-safe)."""
        return {
            "event_id": self.event_id,
            "event_type": self.event_type,
            "sequence_number": sequence_number,
            "occurred_at": self.occurred_at.isoformat(),
            "payload": self.payload,
        }


def events_prepare(*, lane_id: int, events: list[Event], redactor: Redactor | None = None) -> list[PreparedEvent]:
    """Redact each payload (when given a redactor), split off an oversized one, encode it once."""
    prepared = []
    for event in events:
        payload = dict(event.payload or {})
        encoded = "" if redactor else _with_schema_version(event.payload_json, payload)
        payload.setdefault("schema_version", EVENT_SCHEMA_VERSION)
        if redactor:
            payload = redactor.json(payload)
        inline, ref, text = _payload_split(
            lane_id=lane_id, event_id=event.event_id, event_type=event.event_type, payload=payload, text=encoded
        )
        prepared.append(
            PreparedEvent(
                event.event_id, event.event_type, event.source, _occurred_at(event.occurred_at), event.case_key, inline, ref, text
            )
        )
    return prepared


def run_events_append(
    *,
    run_id: int,
    lane_id: int,
    case_run_id: int | None,
    attempt: int,
    events: list[Event],
    redactor: Redactor | None = None,
    stored: list[dict[str, Any]] | None = None,
) -> int:
    """Insert the events not stored yet, in order, with gap-free per-lane sequence numbers.

    Numbers are reserved first (one ``UPDATE … RETURNING``, which also locks the lane row), then
    event ids already present (a redelivered flush) are skipped and their numbers handed back
    while the lock is still held, so a retry neither duplicates an event nor leaves a hole in the
    sequence. Returns how many were inserted. ``stored``, when given, receives each inserted event
    as it reads back (``event_id``, ``event_type``, ``sequence_number``, ``occurred_at``,
    ``payload``), so a caller can score the case without reading back what was just written.
    """
    if not events:
        return 0
    prepared = events_prepare(lane_id=lane_id, events=events, redactor=redactor)
    return run_events_insert(run_id=run_id, lane_id=lane_id, case_run_id=case_run_id, attempt=attempt, events=prepared, stored=stored)


@transaction.atomic
def run_events_insert(
    *,
    run_id: int,
    lane_id: int,
    case_run_id: int | None,
    attempt: int,
    events: list[PreparedEvent],
    stored: list[dict[str, Any]] | None = None,
    fresh: bool = False,
) -> int:
    """:func:`run_events_append` for events already prepared (:func:`events_prepare`)."""
    return _events_insert(
        run_id=run_id, lane_id=lane_id, case_run_id=case_run_id, attempt=attempt, events=events, stored=stored, fresh=fresh
    )


def _events_insert(
    *,
    run_id: int,
    lane_id: int,
    case_run_id: int | None,
    attempt: int,
    events: list[PreparedEvent],
    stored: list[dict[str, Any]] | None = None,
    fresh: bool = False,
    lane_state: list[LaneState | None] | None = None,
) -> int:
    """:func:`run_events_insert` in the caller's transaction.

    ``fresh``: the caller knows no event of the batch can be stored already (a case attempt's
    sink whose flushes all succeeded: runs/events.py ``RunEventSink``), which spares
    the check of their ids (the unique index on ``event_id`` still refuses a duplicate).
    ``lane_state``: given, the lane's dispatch state is read with the reservation (which locks the
    row) and appended to it (nothing is read, and the row is not locked, for no events).
    """
    if not events:
        return 0
    unique: dict[str, PreparedEvent] = {}
    for event in events:
        unique.setdefault(event.event_id, event)
    # locks the lane row: the dedup check below can't race
    row = LaneRow(lane_id)
    first, state = row.reserve(len(unique), with_state=lane_state is not None)
    if lane_state is not None:
        lane_state.append(state)
    existing = set() if fresh else set(RunEvent.objects.filter(event_id__in=list(unique)).order_by().values_list("event_id", flat=True))
    fresh_events = [e for e in unique.values() if e.event_id not in existing]
    if len(fresh_events) < len(unique):
        row.release(len(unique) - len(fresh_events))
    if not fresh_events:
        return 0
    now = timezone.now()
    rows = [
        (run_id, lane_id, case_run_id, e.event_id, first + offset, e.event_type, e.source, e.occurred_at, e.case_key, attempt)
        + (e.payload, e.payload_ref, now, e.text)
        for offset, e in enumerate(fresh_events)
    ]
    _insert(rows)
    if stored is not None:  # exactly what a read would return (a stub for a stored file)
        stored.extend(e.as_stored(first + offset) for offset, e in enumerate(fresh_events))
    return len(rows)


_COLUMNS = (
    "run_id",
    "lane_id",
    "case_run_id",
    "event_id",
    "sequence_number",
    "event_type",
    "source",
    "occurred_at",
    "case_key",
    "attempt",
    "payload",
    "payload_ref",
    "created_at",
)

_SQLITE_INSERT = 'INSERT INTO "runs_runevent" ({}) VALUES ({})'.format(
    ", ".join(f'"{c}"' for c in _COLUMNS), ", ".join(["%s"] * len(_COLUMNS))
)


def _insert(rows: list[tuple[Any, ...]]) -> None:
    """Insert new events (``_COLUMNS`` + the payload's JSON text) without reading anything back.

    On PostgreSQL one ``COPY`` of the already-encoded payloads (several times cheaper than
    ``bulk_create`` for a case's worth of events, on both sides of the connection); on SQLite (the
    embedded default) one ``executemany`` of them, the datetimes adapted as Django stores them
    (``bulk_create`` spent ~3 ms of a case's CPU re-encoding every field); elsewhere ``bulk_create``.
    """
    if connection.vendor == "sqlite":
        adapt = connection.ops.adapt_datetimefield_value
        with connection.cursor() as cursor:
            cursor.executemany(
                _SQLITE_INSERT, [(*row[:7], adapt(row[7]), row[8], row[9], row[13], row[11], adapt(row[12])) for row in rows]
            )
        return
    if connection.vendor != "postgresql":
        RunEvent.objects.bulk_create([RunEvent(**dict(zip(_COLUMNS, row[:-1], strict=True))) for row in rows], batch_size=500)
        return
    sql = f"COPY runs_runevent ({', '.join(_COLUMNS)}) FROM STDIN"
    started = time.monotonic()
    with connection.cursor() as cursor:  # Django's cursor: the same connection and transaction
        with cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row((*row[:10], row[13], *row[11:13]))
    if connection.queries_logged:  # count it like any other statement (query-count tests, debug toolbar)
        connection.queries_log.append({"sql": f"{sql} -- {len(rows)} rows", "time": f"{time.monotonic() - started:.3f}"})


def as_evidence(event: Event, position: int) -> dict[str, Any]:
    """``event`` (redacted) as the scorer reads a stored event (scoring/services/cases.py): its
    payload whole, never a stored file's stub, and with the ``schema_version`` it is stored with;
    numbered by ``position``, its place in the attempt. The scorer only orders by the number, and
    an attempt's events are stored in the order they arrive."""
    payload = dict(event.payload or {})
    payload.setdefault("schema_version", EVENT_SCHEMA_VERSION)
    return {
        "event_id": event.event_id,
        "event_type": event.event_type,
        "sequence_number": position,
        "occurred_at": _occurred_at(event.occurred_at).isoformat(),
        "payload": payload,
    }


# Event types a native case attempt still stores once its byte budget is spent: the harness's own
# (its stop, the case's finish and scores, a security finding: flooding must not hide a leak),
# never the agent's model or tool events.
QUOTA_KEPT_PREFIXES = ("system.", "scoring.", "security.finding")
# How often a native case attempt re-sums its run's and its workspace's other cases (RunEventSink._account).
QUOTA_OTHERS_SECONDS = 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class EventQuota:
    """The byte budgets of a native case attempt's stored events (docs/operations.md, Quotas):
    the attempt's, its run's and its workspace's running runs' (0: no limit)."""

    case: int
    run: int
    workspace: int

    @classmethod
    def from_settings(cls) -> EventQuota:
        return cls(int(settings.EVENT_BYTES_PER_CASE), int(settings.EVENT_BYTES_PER_RUN), int(settings.EVENT_BYTES_PER_WORKSPACE))


def stored_size(events: list[PreparedEvent]) -> int:
    """The bytes ``events`` store: each one's JSON text as encoded for the insert (ASCII: the
    encoder escapes the rest, so its length is its size) plus a stored file's size."""
    return sum(len(e.text) + (int(e.payload.get("bytes") or 0) if e.payload_ref else 0) for e in events)


class RunEventSink:
    """The engine's event sink for one case attempt: redacts, prepares, then flushes in batches.

    Each event is redacted as it arrives, in order, by a :class:`StreamRedactor` (which also masks
    a secret split across consecutive events), prepared for the insert at once (encoded, an
    oversized payload moved to a file; :attr:`pending_bytes` counts what waits) and written with
    this attempt's number. Flushes when ``max_buffer`` events are waiting or ``interval`` seconds
    passed since the last flush, and always at the end of the case (:meth:`flush`). The attempt's pulse also flushes every
    ``interval`` seconds from the ticker thread (:meth:`flush_due`), so what the engine emitted
    before a long tool or model call is stored while the call runs and survives the worker being
    killed.

    ``keep``: the sink also keeps every event as the scorer reads it (:attr:`evidence`), for the
    worker that scores the case with its finish: nothing is read back from the database or from
    storage to score it.
    """

    def __init__(
        self,
        *,
        run_id: int,
        lane_id: int,
        case_run_id: int,
        attempt: int,
        redactor: Redactor | None,
        interval: float = 0.5,
        max_buffer: int = 200,
        clock: Callable[[], float] = time.monotonic,
        keep: bool = False,
        quota: EventQuota | None = None,
    ) -> None:
        self.run_id, self.lane_id, self.case_run_id, self.attempt = run_id, lane_id, case_run_id, attempt
        self.redactor = redactor
        self.stream = StreamRedactor(redactor) if redactor else None
        self.interval = interval
        self.max_buffer = max_buffer
        self.clock = clock
        self.prepared: list[PreparedEvent] = []  # not written yet
        # Their stored size: the finish records ``stored_bytes + pending_bytes`` as the attempt's
        # count, since its last batch (``write_final``) is written without ``_account``. Without it
        # a case whose events all fit that batch stored them uncounted (issue 22's review).
        self.pending_bytes = 0
        self.last_flush = clock()
        self.count = 0
        # ``keep``: every event of the attempt as the scorer reads it (see :func:`as_evidence`).
        self.evidence: list[dict[str, Any]] | None = [] if keep else None
        self._lock = threading.RLock()  # one flush at a time, in order (sequence numbers follow it)
        self.clean = True  # no flush failed yet (see :meth:`flush`)
        # ``quota``: the attempt's stored bytes are counted (``CaseRun.hosted_bytes``) and checked
        # against the budgets with each batch; once one is spent, ``quota_stop`` says which (the
        # worker's cancel check stops the case) and only the harness's events are stored after it.
        self.quota = quota
        self.stored_bytes = 0
        self.quota_stop = ""
        self.dropped = 0  # the agent's events not stored because the budget was spent
        self._others = (0, 0)  # the run's and the workspace's other cases' bytes, as last summed
        self._others_at = -math.inf  # when (``clock``)

    def __call__(self, event: Event) -> None:
        if self.stream is not None:
            event = dataclasses.replace(event, payload=self.stream.payload(event.event_type, event.payload), payload_json="")
        with self._lock:
            if self.quota_stop and not event.event_type.startswith(QUOTA_KEPT_PREFIXES):
                self.dropped += 1  # the budget is spent: the agent's events are not stored
                return
            prepared = events_prepare(lane_id=self.lane_id, events=[event])
            self.prepared += prepared
            self.pending_bytes += stored_size(prepared)
            if self.evidence is not None:
                self.evidence.append(as_evidence(event, self.count))
            self.count += 1
            if len(self.prepared) >= self.max_buffer or self.clock() - self.last_flush >= self.interval:
                self.flush()

    def flush(self) -> None:
        """Write what is waiting, in a transaction of its own.

        The events were redacted on arrival (:meth:`__call__`, in order). The ids of a case
        attempt's events are its own (the attempt number is in them, and one claim holds an
        attempt), and the case's ``scoring.*`` events are written only with its finish, which happens
        once (a compare-and-set). So until a write fails (its outcome unknown: its events may be stored) nothing
        this sink writes can be stored already, and the check for ids already stored is skipped;
        after a failure every write checks.
        """
        with self._lock:
            self.last_flush = self.clock()
            if self.prepared:
                self._write(self._insert_batch)

    def _insert_batch(self, batch: list[PreparedEvent], where: dict[str, Any]) -> None:
        if self.quota is None:
            run_events_insert(**where, events=batch, fresh=self.clean)
            return
        with transaction.atomic():
            _events_insert(**where, events=batch, fresh=self.clean)
            self._account(batch)

    def write_final(self, extra: list[Event] | None = None) -> LaneState | None:
        """The attempt's last batch, with ``extra`` (the case's ``scoring.*`` events), in the caller's
        transaction: the case's finish (runs/pipeline/execute.py). The sequence reservation locks the
        lane row for the rest of that transaction and reads the lane's dispatch state, returned
        (None when nothing was written: the row is then not locked)."""
        if not connection.in_atomic_block:
            raise RuntimeError("write_final belongs inside the finish's transaction")
        with self._lock:
            self.last_flush = self.clock()
            state: list[LaneState | None] = []
            self._write(
                lambda batch, where: _events_insert(**where, events=batch, fresh=self.clean, lane_state=state),
                extra=extra,
            )
            return state[0] if state else None

    def _account(self, batch: list[PreparedEvent]) -> None:
        """Count ``batch`` in the attempt's stored bytes (one statement, in the insert's
        transaction) and compare the attempt's, its run's and its workspace's usage with the
        budgets. A batch is stored whole: a case overshoots by at most one batch
        (``max_buffer`` events or ``interval`` seconds of them). The run's and the workspace's other
        cases are summed by the same statement at most every ``QUOTA_OTHERS_SECONDS`` (their sums
        cost a row per case): in between, this case's own new bytes are checked against the last
        sums, so a run or a workspace overshoots by what its other cases store in that time."""
        quota = self.quota
        assert quota is not None
        used = self.stored_bytes + stored_size(batch)
        columns, params = [], []
        now = self.clock()
        resum = now - self._others_at >= QUOTA_OTHERS_SECONDS  # else the last sums are recent enough
        if resum and quota.run:  # the run's other cases (this one's new total is ``used``)
            columns.append("(SELECT COALESCE(SUM(hosted_bytes), 0) FROM runs_caserun WHERE run_id = %s AND id <> %s)")
            params += [self.run_id, self.case_run_id]
        if resum and quota.workspace:  # the other cases of the workspace's running runs
            columns.append(
                "(SELECT COALESCE(SUM(c.hosted_bytes), 0) FROM runs_caserun c JOIN runs_run r ON r.id = c.run_id"
                " WHERE r.workspace_id = (SELECT workspace_id FROM runs_run WHERE id = %s) AND r.status = 'running'"
                " AND c.id <> %s)"
            )
            params += [self.run_id, self.case_run_id]
        # This attempt's row only: a superseded attempt still running (its claim was taken over)
        # must not overwrite the count of the attempt that holds the case now.
        sql = "UPDATE runs_caserun SET hosted_bytes = %s WHERE id = %s AND attempt = %s"
        with connection.cursor() as cursor:
            cursor.execute(sql + (f" RETURNING {', '.join(columns)}" if columns else ""), [used, self.case_run_id, self.attempt, *params])
            row = cursor.fetchone() if columns else None
            if row is not None:  # None: the claim is lost; the last sums stay
                sums = [int(value or 0) for value in row]
                self._others = (sums.pop(0) if quota.run else 0, sums.pop(0) if quota.workspace else 0)
                self._others_at = now
        self.stored_bytes = used
        if self.quota_stop:
            return
        budgets = [("case attempt", quota.case, "EVENT_BYTES_PER_CASE", used)]
        if quota.run:
            budgets.append(("run", quota.run, "EVENT_BYTES_PER_RUN", used + self._others[0]))
        if quota.workspace:
            budgets.append(("workspace", quota.workspace, "EVENT_BYTES_PER_WORKSPACE", used + self._others[1]))
        for scope, limit, setting, total in budgets:
            if limit and total > limit:
                self.quota_stop = (
                    f"the {scope} budget of stored event bytes is spent: {total} bytes used of {limit} ({setting}); "
                    f"the agent's further events are not stored (the operator can raise {setting})"
                )
                logger.warning("case run %s stopped: %s", self.case_run_id, self.quota_stop)
                return

    def _write(self, insert: Callable[[list[PreparedEvent], dict[str, Any]], object], *, extra: list[Event] | None = None) -> None:
        batch, self.prepared, pending = self.prepared, [], self.pending_bytes
        self.pending_bytes = 0
        if extra:
            batch += events_prepare(lane_id=self.lane_id, events=extra)
        if not batch:
            return
        try:
            insert(batch, {"run_id": self.run_id, "lane_id": self.lane_id, "case_run_id": self.case_run_id, "attempt": self.attempt})
        except BaseException:
            self.clean = False
            self.prepared[:0] = batch  # written by the next flush (event ids make it idempotent)
            self.pending_bytes += pending
            raise

    def flush_due(self) -> None:
        """Flush if events have waited ``interval`` seconds (the background thread's tick)."""
        with self._lock:
            if self.prepared and self.clock() - self.last_flush >= self.interval:
                self.flush()
