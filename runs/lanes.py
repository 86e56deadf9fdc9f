"""The lane row's one writer: every statement that locks a lane's row (``runs_runagent``) is here.

A lane's row serialises its writers: whoever writes events for the lane, finishes one of its
cases or dispatches its next ones takes the row's lock first, for the rest of its transaction.
Three statements take it, each reading what its caller needs in the same round trip:

- :meth:`LaneRow.reserve`: the next ``count`` event sequence numbers (``next_sequence``), and
  optionally the lane's dispatch state (a case's finish: its last events, then the refill);
- :meth:`LaneRow.state`: the dispatch state alone (a dispatch outside a finish);
- :meth:`LaneRow.lock`: nothing (the hosted callback: one writer per lane while it checks the
  case is still open and records the agent's events).

SQLite has no row locks and refuses to upgrade a read transaction to a write one while another
connection writes, so every statement is a write there (a no-op ``UPDATE`` where nothing
changes); PostgreSQL takes ``SELECT … FOR UPDATE`` where a no-op write would leave a dead row
version behind on the lane's hot row.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db import connection

from runs.adapters.statements import prepared_cursor
from runs.models import Lane

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


class LaneRow:
    """The lane ``lane_id``'s row: lock it, reserve event sequence numbers, read its dispatch state."""

    __slots__ = ("lane_id",)

    def __init__(self, lane_id: int) -> None:
        self.lane_id = lane_id

    @staticmethod
    def _state_columns() -> str:
        limit = _LIMIT_SQL.get(connection.vendor)
        return "status, (SELECT status FROM runs_run WHERE runs_run.id = runs_runagent.run_id)" + (f", {limit}" if limit else "")

    def _state(self, row: tuple[Any, ...]) -> LaneState:
        if len(row) < 3:  # another database: read the snapshot
            lane = Lane.objects.only("snapshot").filter(pk=self.lane_id).first()
            value = lane.runtime_profile_snapshot.get("max_in_flight_cases") if lane else None
        else:
            value = row[2]
        try:
            limit = int(value or DEFAULT_MAX_IN_FLIGHT)
        except (TypeError, ValueError):
            limit = DEFAULT_MAX_IN_FLIGHT
        return LaneState(lane_status=row[0], run_status=row[1], max_in_flight=limit)

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
