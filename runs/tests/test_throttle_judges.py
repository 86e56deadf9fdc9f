"""LLM judges obey their provider account's limits (scoring/judges.py + runs/throttle/)."""

from __future__ import annotations

import time

import pytest

from infrastructure.models import ProviderCallLease
from runs.models import CaseRun, Run
from runs.services import run_create
from runs.tests.factories import make_deployment, publish
from runs.tests.worker import wait_for
from runs.throttle import DatabaseLimiter, Limits, limiter, limits_cache_clear
from scoring.judges import RunJudge
from scoring.tests.test_scoring_judges import JUDGED_PACK, _judge

pytestmark = pytest.mark.django_db

# one rubric judge on one model (the consensus judge of JUDGED_PACK is dropped)
ONE_JUDGE_PACK = JUDGED_PACK.replace(
    """      - key: is_french_capital
        mode: assertion
        models: [gpt-judge-a, gpt-judge-b, gpt-judge-c]
        samples: 1
        assertion: The answer names the capital of France.
        context_from: [final_output]
        consensus:
          aggregation: majority_vote
""",
    "",
)


@pytest.fixture(autouse=True)
def _fresh_limits(settings):
    # These tests read the database backend's lease rows: pin it even where the broker is Redis.
    settings.PROVIDER_LIMITS_REDIS_URL = ""
    limiter.cache_clear()
    limits_cache_clear()
    yield
    limits_cache_clear()
    limiter.cache_clear()


@pytest.fixture
def judged(workspace, admin):
    version = publish(workspace, admin, ONE_JUDGE_PACK)
    agent = make_deployment(workspace, name="answerer", script=[{"text": "Paris."}])
    agent.runtime_profile.execution_target = "prompt_eval"
    agent.runtime_profile.save(update_fields=["execution_target"])
    judge = _judge(workspace, "gpt-judge-a", '{"score": 4, "pass": true, "confidence": "high", "reasoning": "good"}')
    account = judge.provider_account
    account.max_concurrent_calls = 1
    account.save(update_fields=["max_concurrent_calls"])
    return version, agent, account


def _helpfulness(run: Run) -> dict:
    case_run = CaseRun.objects.select_related("case_score").get(run=run)
    return {j["judge_key"]: j for j in case_run.case_score.document["llm_judge_details"]}["helpfulness"]


def test_a_judge_call_takes_and_releases_a_slot_of_its_accounts_limits(workspace, admin, judged, tasks):
    version, agent, account = judged
    run = run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[agent.pk], name="judged")
    tasks.drain()

    assert _helpfulness(run)["normalized_score"] == pytest.approx(0.75)
    leases = list(ProviderCallLease.objects.filter(account=account))
    assert len(leases) == 1  # the judge's one call was counted against the judge's account…
    assert leases[0].lease_expires_at is None  # …and its slot given back when it answered


def test_a_judge_that_cannot_get_a_slot_in_its_budget_ends_with_a_clear_error_not_a_hang(workspace, admin, judged, tasks, settings):
    settings.JUDGE_CALL_SECONDS = 0.6
    version, agent, account = judged
    # another worker holds the account's only concurrency slot for the whole test
    held = DatabaseLimiter().try_acquire(account_id=account.pk, limits=Limits(max_concurrent_calls=1), lease_seconds=300)
    assert held.token is not None

    run = run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[agent.pk], name="judged")
    started = time.monotonic()
    tasks.drain()
    assert time.monotonic() - started < 30

    judge = _helpfulness(run)
    assert judge["state"] in ("unavailable", "error") and judge["normalized_score"] is None
    [call] = judge["payload"]["calls"]
    assert "rate_limit" in call["error"] and "max_concurrent_calls limit (1)" in call["error"]
    assert "the judge call's time budget (0.6s) came first" in call["error"]
    run.refresh_from_db()
    assert run.status == "completed"  # scoring went on: the validators still scored the case
    assert ProviderCallLease.objects.filter(account=account).count() == 1  # only the held slot


def test_an_account_without_limits_is_called_directly(workspace, admin, judged, tasks):
    version, agent, account = judged
    account.max_concurrent_calls = None
    account.save(update_fields=["max_concurrent_calls"])
    run = run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[agent.pk], name="judged")
    tasks.drain()
    assert _helpfulness(run)["normalized_score"] == pytest.approx(0.75)
    assert not ProviderCallLease.objects.filter(account=account).exists()


def test_a_judges_wait_sees_its_run_cancelled(workspace, admin, judged):
    version, agent, account = judged
    run = run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[agent.pk], name="judged")
    Run.objects.filter(pk=run.pk).update(cancelled_at=run.created_at)
    assert RunJudge(run)._cancelled() is True


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_judge_gives_up_on_a_held_slot_within_its_budget(workspace, admin, judged, worker):
    version, agent, account = judged
    held = DatabaseLimiter().try_acquire(account_id=account.pk, limits=Limits(max_concurrent_calls=1), lease_seconds=300)
    assert held.token is not None  # "another worker" holds the judge account's only slot
    worker.extra_env.update({"JUDGE_CALL_SECONDS": "1", "PROVIDER_LIMITS_REDIS_URL": ""})
    worker.start()
    run = run_create(workspace=workspace, user=admin, pack_version=version, deployment_ids=[agent.pk], name="judged")

    def over() -> bool:
        run.refresh_from_db()
        return run.is_terminal

    assert wait_for(over, timeout=60)
    [call] = _helpfulness(run)["payload"]["calls"]
    assert "max_concurrent_calls limit (1)" in call["error"] and "time budget (1s) came first" in call["error"]
    assert run.status == "completed"
