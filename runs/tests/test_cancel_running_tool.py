"""Cancelling a run stops a tool call that is running in the sandbox (issue 14).

The engine checks its cancel callback only between steps; the case's cancel watch aborts the
sandbox from another thread, so a 30 s command ends within about a second of the cancel.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from engine.tests.tools.support import requires_bwrap
from runs import services
from runs.models import CaseRun, CaseStatus, Run, RunStatus
from runs.tests.factories import make_deployment, native_pack_yaml, publish

SLEEPER = [{"tool": "exec", "args": {"command": ["sleep", "30"]}}, {"submit": "done"}]


@requires_bwrap
@pytest.mark.django_db(transaction=True)  # the cancelling thread must see the run
def test_cancel_stops_a_running_sandbox_command(workspace, admin, tasks):
    source = native_pack_yaml(cases=1).replace("allowed_tool_kinds: [file]", "allowed_tool_kinds: [file]\n    allow_shell: true")
    version = publish(workspace, admin, source)
    deployment = make_deployment(workspace, script=SLEEPER)
    run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[deployment.pk])

    def cancel_soon() -> None:
        time.sleep(2.0)
        try:
            Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
        finally:
            connection.close()

    canceller = threading.Thread(target=cancel_soon, daemon=True)
    canceller.start()
    start = time.monotonic()
    tasks.drain()
    elapsed = time.monotonic() - start
    canceller.join(5)
    case = CaseRun.objects.get(run=run)
    assert case.status == CaseStatus.CANCELLED
    assert elapsed < 2.0 + 4.0  # not the 30 s of the command
