from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from runs.models import Run, RunStatus


@pytest.mark.django_db
def test_run_pack_prints_the_run_id(workspace, pack_version, deployment, tasks):
    out = io.StringIO()
    call_command("run_pack", "--workspace", "acme", "--pack-version", str(pack_version.pk), "--deployment", "reader", stdout=out)
    run = Run.objects.get()
    assert out.getvalue().strip() == str(run.pk)
    assert tasks.names() == ["runs.run_start"]


@pytest.mark.django_db
def test_run_pack_follow_exits_zero_when_completed(workspace, pack_version, deployment, tasks):
    out = io.StringIO()
    from runs.management.commands import run_pack

    original_sleep = run_pack.time.sleep

    def sleep(seconds):
        tasks.drain()
        original_sleep(0)

    run_pack.time.sleep = sleep
    try:
        call_command(
            "run_pack",
            "--workspace",
            "acme",
            "--pack-version",
            str(pack_version.pk),
            "--deployment",
            "reader",
            "--follow",
            "--poll",
            "0",
            stdout=out,
        )
    finally:
        run_pack.time.sleep = original_sleep
    assert "3/3 cases" in out.getvalue() and Run.objects.get().status == RunStatus.COMPLETED


@pytest.mark.django_db
def test_run_pack_follow_exits_one_when_cancelled(workspace, pack_version, deployment, tasks, member):
    from runs import services
    from runs.management.commands import run_pack

    original_sleep = run_pack.time.sleep

    def sleep(seconds):
        services.run_cancel(run=Run.objects.get(), user=member)

    run_pack.time.sleep = sleep
    try:
        with pytest.raises(SystemExit) as exit_info:
            call_command(
                "run_pack",
                "--workspace",
                "acme",
                "--pack-version",
                str(pack_version.pk),
                "--deployment",
                "reader",
                "--follow",
                stdout=io.StringIO(),
                stderr=io.StringIO(),
            )
    finally:
        run_pack.time.sleep = original_sleep
    assert exit_info.value.code == 1


@pytest.mark.django_db
def test_run_pack_rejects_an_unknown_deployment(workspace, pack_version):
    with pytest.raises(CommandError, match="No deployment named 'ghost'"):
        call_command("run_pack", "--workspace", "acme", "--pack-version", str(pack_version.pk), "--deployment", "ghost")
