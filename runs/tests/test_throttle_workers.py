"""Two real Celery workers sharing one provider account never exceed its concurrency limit."""

from __future__ import annotations

import pytest
import redis

from conftest import require_or_skip
from engine.events import MODEL_CALL_COMPLETED, PROVIDER_THROTTLE_WAITING, PROVIDER_THROTTLED
from infrastructure.models import AgentDeployment, ProviderAccount, ProviderCallLease
from runs import services
from runs.events import payload_hydrate
from runs.models import CaseRun, CaseStatus, Run, RunEvent, RunStatus
from runs.tests.factories import READ_AND_SUBMIT, make_deployment, native_pack_yaml, publish
from runs.tests.worker import Worker, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CALL_SECONDS = 0.3
REDIS_URL = "redis://127.0.0.1:6379/13"  # a private database number


def _shared_account_lanes(workspace, *, limit: int) -> tuple[ProviderAccount, list[int]]:
    """Two lanes whose deployments use one provider account; every model call takes ~0.3 s."""
    deployments = [make_deployment(workspace, name=name, max_in_flight_cases=4) for name in ("a", "b")]
    account = ProviderAccount.objects.create(workspace=workspace, name="shared", provider_key="scripted", max_concurrent_calls=limit)
    config = {"script": {"default": READ_AND_SUBMIT}, "latency_ms": int(CALL_SECONDS * 1000)}
    AgentDeployment.objects.filter(pk__in=[d.pk for d in deployments]).update(provider_account=account, deployment_config=config)
    return account, [d.pk for d in deployments]


def _call_intervals(run: Run) -> list[tuple[float, float]]:
    """When each model call really ran, as the scripted provider recorded it (Unix seconds)."""
    intervals = []
    for event in RunEvent.objects.filter(run=run, event_type=MODEL_CALL_COMPLETED):
        raw = payload_hydrate(event.payload)["raw_response"]
        intervals.append((raw["called_at"], raw["answered_at"]))
    return sorted(intervals)


def _peak(intervals: list[tuple[float, float]]) -> int:
    """The most calls that ran at the same moment (an end and a start at one instant don't overlap)."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals], key=lambda e: (e[0], e[1]))
    peak = running = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def _backend_env(backend: str) -> dict[str, str]:
    """The workers' limiter: the database (the embedded default) or a private Redis database."""
    if backend == "database":
        return {"PROVIDER_LIMITS_REDIS_URL": ""}
    try:
        available = bool(redis.Redis.from_url(REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        available = False
    require_or_skip(available, "Redis at 127.0.0.1:6379")
    return {"PROVIDER_LIMITS_REDIS_URL": REDIS_URL}


# With a limit of 2 the calls do overlap (so the workers really compete), but never 3 at once.
@pytest.mark.parametrize(("limit", "backend"), [(1, "database"), (2, "database"), (1, "redis")])
def test_two_workers_sharing_an_account_never_run_more_calls_at_once_than_its_limit(workspace, admin, broker_queue, limit, backend):
    env = _backend_env(backend)
    version = publish(workspace, admin, native_pack_yaml(cases=6))
    account, lanes = _shared_account_lanes(workspace, limit=limit)
    if backend == "redis":  # a previous session's account of the same id must not leave leases behind
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(f"agentclash:throttle:{{{account.pk}}}:*"):
            client.delete(key)
    workers = [Worker(queue=broker_queue, concurrency=2, extra_env=env).start() for _ in range(2)]
    try:
        run = services.run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=lanes)
        assert wait_for(lambda: Run.objects.get(pk=run.pk).is_terminal, timeout=180), Run.objects.get(pk=run.pk).status
    finally:
        for worker in workers:
            worker.stop()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.failure_reason
    assert set(CaseRun.objects.filter(run=run).values_list("status", flat=True)) == {CaseStatus.COMPLETED}
    intervals = _call_intervals(run)
    assert len(intervals) == 24  # 2 lanes × 6 cases × 2 model calls
    assert _peak(intervals) == limit
    # Four cases at a time competed for the one slot: some calls waited, and said so.
    waits = list(RunEvent.objects.filter(run=run, event_type=PROVIDER_THROTTLED).values_list("payload", flat=True))
    assert waits and all(w["limit"] == "max_concurrent_calls" and w["acquired"] for w in waits)
    assert RunEvent.objects.filter(run=run, event_type=PROVIDER_THROTTLE_WAITING).count() == len(waits)
    if backend == "database":  # every slot released
        assert not ProviderCallLease.objects.filter(account=account, lease_expires_at__isnull=False).exists()
    else:
        assert redis.Redis.from_url(REDIS_URL).zcard(f"agentclash:throttle:{{{account.pk}}}:calls") == 0
        assert not ProviderCallLease.objects.exists()  # the database was not used
