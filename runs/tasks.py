"""Celery tasks for runs: ids in, a service out (docs/style.md §19).

Each task only advances a persistent state machine (every claim and transition is a
compare-and-set), so a redelivered message is a no-op; that is what makes ``acks_late`` and
``reject_on_worker_lost`` safe here. Case retries are explicit (``retry_of``), bounded to three
attempts and only for the retryable classes of spec runtime.md §4.3.
"""

from __future__ import annotations

import logging
import time

from celery import shared_task
from celery.signals import worker_process_init, worker_process_shutdown, worker_ready
from django.conf import settings
from django.db import connections

from engine.sandbox import SandboxSettings, close_warm_sandboxes, native, reap_stale_sandboxes
from runs import pipeline, queue, services
from runs.jobs import CaseRunDeadline, CaseRunExecute, CaseRunFinalize, RunReap, RunRedispatch, RunRoundAdvance, RunStart
from runs.pipeline.hosted.finish import hosted_case_deadline

IDEMPOTENT = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}
log = logging.getLogger(__name__)
CHAIN_SECONDS = 0.5  # a chain of cases (RUNS_CASE_CHAIN) starts no new case after this long: other lanes wait at most this


def db_fresh() -> None:
    """Drop a connection that broke or outlived ``CONN_MAX_AGE`` before a task uses it.

    Workers keep connections across tasks (``CELERY_DB_REUSE_MAX``) instead of reconnecting for
    every task; this is the per-task check Django does per request. Connections without a max
    age (SQLite) are left alone: reopening them every task is what reuse avoids.
    """
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None and conn.settings_dict.get("CONN_MAX_AGE"):
            conn.close_if_unusable_or_obsolete()


@shared_task(name=RunStart.task_name, **IDEMPOTENT)
def run_start(run_id: int) -> None:
    db_fresh()
    services.run_start(run_id=run_id)


@shared_task(name=CaseRunExecute.task_name, **IDEMPOTENT)
def case_run_execute(case_run_id: int, retry_of: int | None = None, stale_seconds: float | None = None) -> None:
    """Run the case, then, in the same task, the lane's next ones (``RUNS_CASE_CHAIN``).

    Scored here, not in a second task: one broker round trip and one read of the case less
    (``runs.case_run_finalize`` stays for the non-inline path and the reaper). The case its finish
    dispatches next is kept for this process (``queue.keep_next_case``) and run here, up to
    ``RUNS_CASE_CHAIN`` cases and while the task is younger than ``CHAIN_SECONDS``: no publish, no
    receive and ack by the worker's main process, no task set-up per case (docs/performance.md,
    "Chained cases"). Whatever is kept when the chain stops — or when a case raises — is sent
    through the broker as before. A kept case lost with its process (killed) stays dispatched and
    unclaimed until the reaper re-dispatches it (``LOST_DISPATCH_AFTER``), like a lost message.
    """
    db_fresh()
    deadline = time.monotonic() + CHAIN_SECONDS
    left: list[int] = []
    try:
        with queue.keep_next_case() as kept:
            try:
                pipeline.case_run_execute(case_run_id=case_run_id, retry_of=retry_of, stale_seconds=stale_seconds, score_inline=True)
                for _ in range(max(1, settings.RUNS_CASE_CHAIN) - 1):
                    if not kept or time.monotonic() > deadline or queue.waiting_ahead():
                        break  # (fair scheduling: another workspace's earlier-priority message waits)
                    next_id = kept.pop()
                    try:
                        pipeline.case_run_execute(case_run_id=next_id, score_inline=True)
                    except BaseException:
                        kept.append(next_id)  # not known to have run: sent again (its claim makes a rerun a no-op)
                        raise
            finally:
                left = list(kept)
    finally:
        for next_id in left:  # at the priority its dispatch gave it: not ahead of other workspaces' cases
            queue.enqueue(CaseRunExecute(case_run_id=next_id), priority=queue.kept_priority())


@shared_task(name=CaseRunFinalize.task_name, **IDEMPOTENT)
def case_run_finalize(case_run_id: int) -> None:
    db_fresh()
    pipeline.case_run_finalize(case_run_id=case_run_id)


@shared_task(name=CaseRunDeadline.task_name, **IDEMPOTENT)
def case_run_deadline(case_run_id: int, attempt: int) -> None:
    """A hosted case's deadline (runs/pipeline/hosted/finish.py)."""
    db_fresh()
    hosted_case_deadline(case_run_id=case_run_id, attempt=attempt)


@shared_task(name=RunRoundAdvance.task_name, **IDEMPOTENT)
def run_round_advance(run_id: int) -> None:
    """An adaptive run's round (runs/pipeline/rounds.py): a redelivery finds the round settled and does nothing."""
    db_fresh()
    pipeline.run_round_advance(run_id=run_id)


@shared_task(name=RunReap.task_name, **IDEMPOTENT)
def run_reap() -> None:
    db_fresh()
    services.run_reap()


@shared_task(name=RunRedispatch.task_name, **IDEMPOTENT)
def run_redispatch() -> None:
    db_fresh()
    services.run_redispatch()


@worker_ready.connect
def sandboxes_reap_stale(**_: object) -> None:
    """A starting worker removes the sandboxes (workspace, mounts, cgroups) of dead workers on this host."""
    reap_stale_sandboxes(str(settings.SANDBOX_ROOT), cgroup_parent=SandboxSettings.from_settings(settings).cgroup_parent)


@worker_process_init.connect
def sandboxes_reap_dead_sibling(**_: object) -> None:
    """A pool process that starts removes the sandboxes of dead processes on this host at once:
    the pool replaces a process that was killed (out of memory, a time limit, ``kill -9``) right
    away, so the killed one's workspaces, tmpfs mounts and cgroups go within a second, not at the
    worker's next restart (docs/operations.md "Nothing lost, nothing stuck"). A live sibling's
    sandboxes are left alone (their owner record names a live process)."""
    try:
        reap_stale_sandboxes(str(settings.SANDBOX_ROOT), cgroup_parent=SandboxSettings.from_settings(settings).cgroup_parent)
    except Exception:  # a sibling reaping the same leftovers at the same moment: theirs to finish
        log.warning("reaping dead pool processes' sandboxes failed", exc_info=True)


@worker_ready.connect
def sandbox_launcher_check(**_: object) -> None:
    """A starting worker says at once when no sandbox can start here (no trusted native launcher,
    docs/engine-safety.md "The native launcher"); it keeps running: its other tasks need none."""
    try:
        native.require_binary(str(settings.SANDBOX_LAUNCHER_DIR))  # builds a missing one, as first use would
    except native.LauncherUnavailable as exc:
        log.error(
            "native sandbox launcher unavailable (%s): cases with sandboxed tools will fail on this worker; "
            "install a C compiler (e.g. apt-get install gcc libc6-dev) and run make setup (SANDBOX_LAUNCHER_DIR=%s)",
            exc,
            settings.SANDBOX_LAUNCHER_DIR,
        )


@worker_process_shutdown.connect
def sandboxes_close_warm(**_: object) -> None:
    """A worker process destroys its idle pre-started sandboxes (``SANDBOX_WARM_POOL``) on its way out."""
    close_warm_sandboxes()
