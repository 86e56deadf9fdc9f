"""When an attempt stops: the cancel check the engine reads, and the per-case wall-clock deadline
enforced from outside the engine (docs/runs.md, Limits).

The engine stops itself at its run deadline, but it looks at the clock only between steps and
tool calls. A case that hangs inside one — a provider that ignores its timeout, a tool process
the sandbox did not stop, a verification command — would run on until Celery's time limit
kills the whole worker process. :class:`CaseDeadline` bounds it from the process's ticker thread
(runs/ticker.py: no thread started per case):

1. when the deadline passes, the cancel check it hands the engine says stop, with the stop
   reason ``deadline_exceeded`` (the engine's cancel path, so the case ends the normal way),
   and the sandbox's running process is aborted;
2. if the case has still not come back ``hard_grace`` seconds later, the watchdog raises
   :class:`CaseDeadlineExceeded` in the thread running the case. It arrives at that thread's
   next Python instruction (a thread blocked inside one C call gets it when the call returns),
   so only a hang inside native code is left to Celery's time limit.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections.abc import Callable

from engine.modes.case import STOP_DEADLINE_EXCEEDED, CaseRequest, Limits
from engine.scoring.spec import EvaluationSpec
from engine.types import CancelCheck as EngineCancelCheck
from runs.models import CaseRun, RunStatus
from runs.ticker import TICKER, Job

logger = logging.getLogger(__name__)

# The engine's own run deadline comes first; the watchdog allows this much more (provider
# retries, sandbox teardown of the last tool call) before it steps in.
DEADLINE_GRACE_SECONDS = 30.0
# A case with no run deadline at all still ends: below Celery's soft time limit (25 min).
NO_DEADLINE_SECONDS = 20 * 60.0
# How long the cooperative stop may take before the watchdog interrupts the case's thread.
HARD_STOP_GRACE_SECONDS = 10.0
# How often a running case is checked for a cancel or a re-claim (to abort its sandbox's process).
WATCH_SECONDS = 0.5
CODE_EXECUTION_TIMEOUT_MS = 30_000  # the validator's default (runtime.md §5.4)


class CancelCheck:
    """True once the run stopped running or another worker re-claimed this case (≤ 1 query / 0.5 s)."""

    def __init__(self, case_run_id: int, attempt: int, every: float = 0.5) -> None:
        self.case_run_id, self.attempt, self.every = case_run_id, attempt, every
        self.checked_at = time.monotonic()
        self.cancelled = False

    def __call__(self) -> bool:
        if self.cancelled or time.monotonic() - self.checked_at < self.every:
            return self.cancelled
        self.checked_at = time.monotonic()
        row = CaseRun.objects.filter(pk=self.case_run_id).values_list("attempt", "run__status").first()
        self.cancelled = row is None or row[0] != self.attempt or row[1] != RunStatus.RUNNING
        return self.cancelled

    def watch(self) -> bool:
        """From the ticker thread: whether the case was visibly cancelled or re-claimed (a row this
        thread's connection cannot see yet is not a cancel)."""
        row = CaseRun.objects.filter(pk=self.case_run_id).values_list("attempt", "run__status").first()
        return row is not None and (row[0] != self.attempt or row[1] != RunStatus.RUNNING)


class CaseDeadlineExceeded(BaseException):
    """Raised in the case's thread when it ignored the cooperative stop. A BaseException, so the
    engine's "never raise" handlers (which catch Exception) do not swallow it."""


def _timeout_ms(config: object) -> float | None:
    value = config.get("timeout_ms") if isinstance(config, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def case_deadline_seconds(request: CaseRequest, evaluation_spec: EvaluationSpec) -> float:
    """The engine's run deadline plus the post-execution verification's timeouts plus a grace."""
    run_timeout = Limits.from_request(request).run_timeout_seconds or NO_DEADLINE_SECONDS
    verification_ms = sum(
        float(_timeout_ms(v.get("config")) or CODE_EXECUTION_TIMEOUT_MS)
        for v in evaluation_spec.get("validators") or []
        if isinstance(v, dict) and v.get("type") == "code_execution"
    )
    return run_timeout + verification_ms / 1000 + DEADLINE_GRACE_SECONDS


class CaseDeadline:
    """A cancel check for the engine that also says stop once ``seconds`` have passed.

    Use as a context manager around the engine call, in the thread that makes it::

        with CaseDeadline(seconds, cancel=cancel, abort=sandbox.abort) as check:
            run_case(..., cancel_check=check)
    """

    def __init__(
        self,
        seconds: float,
        *,
        cancel: EngineCancelCheck,
        abort: Callable[[], None] | None = None,
        hard_grace: float | None = None,
        watch: Callable[[], bool] | None = None,
    ) -> None:
        self.seconds, self.cancel, self.abort, self.watch = seconds, cancel, abort, watch
        self.hard_grace = HARD_STOP_GRACE_SECONDS if hard_grace is None else hard_grace
        self.fired = threading.Event()
        self._lock = threading.Lock()
        self._exited = False
        self._interrupted = False
        self._aborted = False
        self._target: int | None = None
        self._started = 0.0
        self._fired_at = 0.0
        self._job: Job | None = None

    @classmethod
    def for_attempt(
        cls, request: CaseRequest, spec: EvaluationSpec, *, case_run_id: int, attempt: int, abort: Callable[[], None] | None
    ) -> CaseDeadline:
        """A native attempt's deadline (:func:`case_deadline_seconds`), with its cancel check and,
        when there is a sandbox to abort, the watch that aborts its running process within ~0.5 s
        of a cancel or a re-claim (the engine checks ``cancel`` only between steps and tool calls)."""
        cancel = CancelCheck(case_run_id, attempt)
        return cls(case_deadline_seconds(request, spec), cancel=cancel, abort=abort, watch=cancel.watch if abort else None)

    # -- the cancel check the engine reads (engine.modes.case.cancel_stop) -----------------------

    def __call__(self) -> bool:
        return self.fired.is_set() or self.cancel()

    @property
    def stop_reason(self) -> str:
        return STOP_DEADLINE_EXCEEDED if self.fired.is_set() else ""

    @property
    def stop_message(self) -> str:
        return f"the case exceeded its wall-clock deadline of {self.seconds:g}s (stopped by the worker)"

    # -- the watchdog ------------------------------------------------------------------------

    def __enter__(self) -> CaseDeadline:
        self._target = threading.get_ident()
        self._started = time.monotonic()
        # One job on the process's ticker for the deadline, the hard stop and the cancel watch.
        period = min(WATCH_SECONDS, self.seconds, self.hard_grace)
        self._job = TICKER.add(self._tick, period, name=f"case-deadline-{self._target}")
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._exited = True
        if self._job is not None:  # waits for a tick in progress, as joining the watchdog did
            TICKER.remove(self._job)
            self._job = None

    def _tick(self) -> None:
        now = time.monotonic()
        if not self.fired.is_set() and now - self._started >= self.seconds:
            self._fire(now)
        elif self.fired.is_set() and now - self._fired_at >= self.hard_grace:
            self._interrupt()
        elif self.watch is not None and not self._aborted and not self.fired.is_set() and self.watch():
            self._aborted = True
            self._abort()

    def _fire(self, now: float) -> None:
        """The deadline passed: say stop, and abort the sandbox's running process."""
        with self._lock:
            if self._exited or self.fired.is_set():
                return
            self._fired_at = now
            self.fired.set()
        logger.warning("case deadline of %gs passed; stopping the case", self.seconds)
        self._abort()

    def _abort(self) -> None:
        if self.abort is not None:
            try:
                self.abort()
            except Exception:
                logger.exception("aborting the sandbox of a case failed")

    def _interrupt(self) -> None:
        with self._lock:
            # Under the lock: once __exit__ has marked the block left, nothing is raised any more.
            if not self._exited and not self._interrupted and self._target is not None:
                self._interrupted = True  # once (the ticker calls again every period)
                logger.error("case did not stop %gs after its deadline; interrupting its thread", self.hard_grace)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._target), ctypes.py_object(CaseDeadlineExceeded))
