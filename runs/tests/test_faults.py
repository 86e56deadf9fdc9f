"""Fault tests with real processes (docs/operations.md "Nothing lost, nothing stuck"): a run whose
start was never published (the web process died between its commit and the publish) and a broker
restart in the middle of a run both end, within seconds of the fault, with every case run once.

The beat's job (``runs.run_redispatch``) is called by the test itself with a short threshold, the
way runs/tests/test_worker.py calls the reaper's."""

from __future__ import annotations

import datetime as dt
import shutil
import socket
import subprocess
import time
from collections import Counter

import pytest
from celery import current_app

from conftest import require_or_skip
from runs import queue, services
from runs.models import CaseRun, CaseStatus, Run, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish
from runs.tests.worker import Worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SLOW = [{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}] * 6 + [{"submit": "{{last_result}}"}]


def _finished_with_redispatch(run_id: int, timeout: float, worker: Worker | None = None) -> bool:
    def finished() -> bool:
        if worker is not None:
            worker.supervise()
        if Run.objects.get(pk=run_id).is_terminal:
            return True
        services.run_redispatch(after=dt.timedelta(seconds=2))
        return False

    return wait_for(finished, timeout=timeout, interval=0.5)


def test_a_run_whose_start_was_never_published_starts_within_seconds(workspace, admin, broker_queue):
    version = publish(workspace, admin, native_pack_yaml(cases=3))
    lost: list = []
    queue.capture(lost)  # the web process dies after the commit, before the publish
    try:
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[make_deployment(workspace).pk])
    finally:
        queue.capture(None)
    assert [name for name, _, _ in lost] == ["runs.run_start"]
    worker = Worker(queue=broker_queue).start()
    try:
        started = time.monotonic()
        assert _finished_with_redispatch(run.pk, timeout=90), Run.objects.get(pk=run.pk).status
        took = time.monotonic() - started
    finally:
        worker.stop()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    assert took < 60  # seconds, not the reaper's minutes


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OwnRedis:
    """A redis-server of this test's own, without persistence: a restart loses every queued message."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.process: subprocess.Popen | None = None

    def start(self) -> OwnRedis:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        assert wait_for(lambda: _pings(client), timeout=10, interval=0.1), "redis-server did not start"
        return self

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def _pings(client) -> bool:
    try:
        return bool(client.ping())
    except Exception:
        return False


@pytest.fixture
def own_redis_broker(settings, monkeypatch):
    require_or_skip(shutil.which("redis-server") is not None, "redis-server")
    server = OwnRedis(_free_port()).start()
    url = f"redis://127.0.0.1:{server.port}/0"
    old = current_app.conf.broker_url

    def point_at(broker_url: str) -> None:  # the test process publishes there too
        current_app.conf.broker_url = broker_url
        current_app._pool = None
        current_app.amqp._producer_pool = None

    monkeypatch.setenv("CELERY_BROKER_URL", url)  # Celery reads it before its own setting
    point_at(url)
    settings.CELERY_BROKER_URL = url
    try:
        yield server
    finally:
        monkeypatch.undo()
        point_at(old)
        server.kill()


def test_a_broker_restart_mid_run_loses_no_case(workspace, admin, broker_queue, own_redis_broker):
    version = publish(workspace, admin, native_pack_yaml(cases=16))
    lanes = [
        make_deployment(workspace, name="a", script=SLOW, max_in_flight_cases=4).pk,
        make_deployment(workspace, name="b", script=SLOW, max_in_flight_cases=4).pk,
    ]
    worker = Worker(queue=broker_queue, extra_env={"RUNS_CASE_CHAIN": "1"}).start()
    try:
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=lanes)
        assert wait_for(lambda: CaseRun.objects.filter(run=run, status=CaseStatus.COMPLETED).count() >= 3, timeout=90)
        own_redis_broker.kill()  # every queued case message is gone with it
        time.sleep(0.5)
        own_redis_broker.start()
        restarted = time.monotonic()
        assert _finished_with_redispatch(run.pk, timeout=120, worker=worker), Counter(
            CaseRun.objects.filter(run=run).values_list("status", flat=True)
        )
        took = time.monotonic() - restarted
    finally:
        worker.stop()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    assert CaseRun.objects.filter(run=run, status=CaseStatus.COMPLETED).count() == 32
    assert took < 90
