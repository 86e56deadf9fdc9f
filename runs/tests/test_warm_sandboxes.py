"""A real worker with ``SANDBOX_WARM_POOL=1``: cases run in pre-started one-use sandboxes, each
sees only its own staged files, and the worker's idle spare is destroyed when it shuts down."""

from __future__ import annotations

import json
import os
import shutil
import signal
import uuid

import pytest

from engine.sandbox.bwrap import bwrap_path
from engine.sandbox.stale import OWNER_FILE
from runs import services
from runs.models import CaseRun, CaseStatus, Run, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.worker import Worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def sandbox_root():
    path = f"/tmp/agentclash-warm-{uuid.uuid4().hex[:10]}"  # traversable by the sandbox uids
    os.makedirs(path, mode=0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _sandboxes(root: str) -> list[str]:
    return [name for name in os.listdir(root) if name.startswith("sbx-")]


@pytest.mark.skipif(bwrap_path() is None and os.environ.get("REQUIRE_SERVICES") != "1", reason="bubblewrap not installed")
def test_a_worker_with_a_warm_pool_runs_cases_in_one_use_sandboxes(workspace, admin, broker_queue, sandbox_root):
    version = publish(workspace, admin, native_pack_yaml(cases=4))
    script = [
        {"tool": "search_files", "args": {"pattern": "*.txt"}},  # runs inside the sandbox (the launcher)
        {"tool": "read_file", "args": {"path": "/workspace/notes.txt"}},
        {"submit": "{{last_result}}"},
    ]
    deployment = make_deployment(workspace, name="warm", script=script, max_in_flight_cases=1)
    deployment.deployment_config["latency_ms"] = 300  # a case lasts ~1 s, like a (fast) model would make it
    deployment.save(update_fields=["deployment_config"])
    lane = deployment.pk
    seen: list[int] = []

    def finished() -> bool:
        seen.append(len(_sandboxes(sandbox_root)))
        return Run.objects.get(pk=run.pk).is_terminal

    worker = Worker(queue=broker_queue, concurrency=1, extra_env={"SANDBOX_WARM_POOL": "1", "SANDBOX_ROOT": sandbox_root}).start()
    try:
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[lane])
        assert wait_for(finished, timeout=120, interval=0.05)
        assert max(seen) == 2, seen  # a running case's sandbox and the spare pre-started beside it
        # Idle between runs, the worker keeps exactly one pre-started spare for the next case.
        assert wait_for(lambda: len(_sandboxes(sandbox_root)) == 1, timeout=20), _sandboxes(sandbox_root)
    finally:
        worker.stop()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    cases = CaseRun.objects.filter(run=run)
    assert set(cases.values_list("status", flat=True)) == {CaseStatus.COMPLETED}
    for case in cases:  # each case read its own staged note: nothing of another case was there
        assert f"note number {case.case_key.split('-')[1]}" in str(case.final_output), case.final_output
    assert _sandboxes(sandbox_root) == []  # the spare was destroyed at worker_process_shutdown


@pytest.mark.skipif(bwrap_path() is None and os.environ.get("REQUIRE_SERVICES") != "1", reason="bubblewrap not installed")
def test_a_killed_pool_process_s_sandboxes_are_reaped_at_once_by_its_replacement(workspace, admin, broker_queue, sandbox_root):
    """Not at the worker's next restart: the pool replaces the killed process, which reaps its leftovers."""
    version = publish(workspace, admin, native_pack_yaml(cases=1))
    script = [{"tool": "search_files", "args": {"pattern": "*.txt"}}, {"submit": "done"}]
    lane = make_deployment(workspace, name="warm", script=script, max_in_flight_cases=1).pk
    worker = Worker(queue=broker_queue, concurrency=1, extra_env={"SANDBOX_WARM_POOL": "1", "SANDBOX_ROOT": sandbox_root}).start()
    try:
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[lane])
        assert wait_for(lambda: Run.objects.get(pk=run.pk).is_terminal, timeout=120)
        assert wait_for(lambda: len(_sandboxes(sandbox_root)) == 1, timeout=20), _sandboxes(sandbox_root)  # the spare
        (spare,) = _sandboxes(sandbox_root)
        with open(os.path.join(sandbox_root, spare, OWNER_FILE)) as fh:
            owner = json.load(fh)["pid"]
        assert owner != worker.pid  # a pool process's, not the worker main process's
        os.kill(owner, signal.SIGKILL)
        assert wait_for(lambda: spare not in _sandboxes(sandbox_root), timeout=20), _sandboxes(sandbox_root)
        assert worker.process is not None and worker.process.poll() is None  # the worker itself never restarted
    finally:
        worker.stop()
