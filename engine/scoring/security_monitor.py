"""The live half of the security check: an event sink that sees each event before it is stored.

Stored events never hold a planted value (the run's event sink masks them like workspace
secrets), so leaks must be found on the way in. :class:`SecurityMonitor` sits in front of the
storing sink: it feeds every event to a :class:`~engine.scoring.security.Scanner`, passes the
event on, and records each new finding as a ``security.finding`` event right after the event
that caused it. :meth:`SecurityMonitor.scan_workspace` does the same for the files the agent
left in its workspace. Scoring (:func:`~engine.scoring.security.security_report`) reads the
recorded findings back.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Protocol

from engine.events import SECURITY_FINDING, SOURCE_SECURITY, EventEmitter
from engine.scoring.documents import as_json
from engine.scoring.security import WORKSPACE, Finding, Scanner, SecurityPolicy
from engine.types import EngineError, Event, EventSink, FileEntry

# Files are read whole (the sandbox's read limit, 64 MiB, bounds one read) and scanned in chunks
# of CHUNK characters, each overlapping the last by OVERLAP: a value's longest form the scan
# knows (three nested encodings of a value of a few kilobytes) fits in the overlap, so a value
# across a chunk boundary lies whole in one chunk.
CHUNK = 1024 * 1024
OVERLAP = 64 * 1024


class WorkspaceReader(Protocol):
    """The part of a sandbox the workspace scan uses."""

    def list_files(self, prefix: str) -> list[FileEntry]: ...
    def read_file(self, path: str) -> bytes: ...


class SecurityMonitor:
    """``EventSink`` wrapper for one case attempt of a security pack (thread-safe: egress
    attempts arrive from the sandbox proxy's thread)."""

    def __init__(
        self, sink: EventSink, policy: SecurityPolicy, *, prefix: str, case_key: str, secrets: Mapping[str, str] | None = None
    ) -> None:
        """``secrets``: the workspace secrets the run resolved (name → value), searched like planted values."""
        self.policy = policy
        self.scanner = Scanner(policy, secrets)
        self._sink = sink
        self._emitter = EventEmitter(sink, prefix=prefix, source=SOURCE_SECURITY, case_key=case_key)
        self._lock = threading.RLock()
        self.unscanned: list[str] = []  # workspace paths the scan could not read (too large, gone)

    def __call__(self, event: Event) -> None:
        with self._lock:
            found = self.scanner.feed(event.event_type, event.payload, event.event_id)
            self._sink(event)
            if event.event_type != SECURITY_FINDING:  # a finding that arrives as an event is stored already
                self._record(found)

    @property
    def findings(self) -> list[Finding]:
        return list(self.scanner.findings)

    def _record(self, found: list[Finding]) -> None:
        for finding in found:
            self._emitter.emit(SECURITY_FINDING, as_json(finding.as_dict()))

    def scan_workspace(self, sandbox: WorkspaceReader, *, staged: Mapping[str, bytes] | None = None) -> list[Finding]:
        """Leaks in files the agent left under /workspace: every file, ``/workspace/agentclash/``
        included, in chunks. A staged file (context, fixture, planted) left unchanged is skipped;
        a changed one is scanned less its staged content (taken out once), so a value appended
        to a planted file is found. A file that cannot be read is recorded in ``unscanned``."""
        staged = staged or {}
        found: list[Finding] = []
        try:
            entries = sandbox.list_files(WORKSPACE)
        except (OSError, ValueError, EngineError):
            self.unscanned.append(WORKSPACE)
            return found
        for entry in entries:
            try:
                data = sandbox.read_file(entry.path)
            except (OSError, ValueError, EngineError):
                self.unscanned.append(entry.path)
                continue
            original = staged.get(entry.path)
            if original is not None:
                if data == original:
                    continue
                data = data.replace(original, b"", 1)
            text = data.decode("utf-8", "replace")
            for start in range(0, max(len(text) - OVERLAP, 1), CHUNK - OVERLAP):
                chunk = text[start : start + CHUNK]
                with self._lock:
                    new = self.scanner.file(entry.path, chunk, strip_planted=original is None, event_type="workspace.scan")
                    self._record(new)
                found += new
        return found
