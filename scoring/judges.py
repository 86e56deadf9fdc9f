"""LLM judges for scoring: the deployments frozen on the run at creation, and the secrets to redact.

``run_create`` resolves every judge model the pack names to a deployment and snapshots it on the
run (``Run.judge_snapshot``, see runs/services/resolve.py). Scoring calls exactly those: a model
the run was started without (``allow_missing_judges``) raises ``JudgeNotConfigured`` and its judge
is unavailable with "no judge configured". There is no other fallback — never the lane's own
deployment, never a workspace deployment found at scoring time.

Judge calls obey their provider account's limits like a lane's calls do (docs/provider-limits.md):
each call takes a slot from the shared limiter (:func:`runs.throttle.throttled`) first. Waiting
for it and the call together get ``JUDGE_CALL_SECONDS``; a judge that cannot get a slot in that
time fails with a ``rate_limit`` provider error naming the limit, which the engine records as that
judge call's error (the judge ends ``unavailable``/``error``, scoring goes on).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from engine.providers import create_provider
from engine.scoring.judges import JudgeNotConfigured, JudgeTarget
from engine.types import Message, ModelRequest, ModelResponse, Provider
from runs.models import Run
from runs.throttle import throttled
from secrets_app.services import CredentialUnavailable, credential_resolve, secrets_resolve_for_run

logger = logging.getLogger(__name__)


class JudgeCredentialUnavailable(Exception):
    """The judge deployment's credential could not be resolved; names the provider it was for."""

    def __init__(self, provider_key: str, message: str) -> None:
        super().__init__(message)
        self.provider_key = provider_key


class RunJudge:
    """``judge(model, messages) -> ModelResponse`` backed by the run's judge snapshot."""

    def __init__(self, run: Run) -> None:
        self.run = run
        snapshot = run.judge_snapshot if isinstance(run.judge_snapshot, dict) else {}
        self.snapshot: dict[str, Any] = snapshot
        self._providers: dict[str, Provider] = {}

    def _entry(self, model: str) -> dict[str, Any] | None:
        entry = self.snapshot.get(model)
        return entry if isinstance(entry, dict) else None

    def target(self, model: str) -> JudgeTarget | None:
        entry = self._entry(model)
        if entry is None:
            return None
        deployment, account = entry.get("deployment") or {}, entry.get("provider_account") or {}
        return JudgeTarget(
            provider_key=str(account.get("provider_key") or ""),
            model=str(deployment.get("model") or entry.get("model") or ""),
            deployment=str(deployment.get("name") or ""),
        )

    def _provider(self, model: str, entry: dict[str, Any]) -> Provider:
        if model not in self._providers:
            deployment, account = entry.get("deployment") or {}, entry.get("provider_account") or {}
            provider_key = str(account.get("provider_key") or "")
            try:
                api_key = credential_resolve(workspace=self.run.workspace, reference=account.get("credential_reference") or "")
            except CredentialUnavailable as exc:
                raise JudgeCredentialUnavailable(provider_key, str(exc)) from None
            self._providers[model] = create_provider(
                provider_key,
                api_key=api_key,
                base_url=account.get("base_url") or None,
                deployment_config=deployment.get("deployment_config") or {},
                allow_private_urls=settings.ALLOW_PRIVATE_PROVIDER_URLS,
            )
        return self._providers[model]

    def __call__(self, model: str, messages: list[Message]) -> ModelResponse:
        entry = self._entry(model)
        target = self.target(model)
        if entry is None or target is None:
            raise JudgeNotConfigured(model)
        budget = float(settings.JUDGE_CALL_SECONDS)
        account_id = (entry.get("provider_account") or {}).get("id")
        provider = throttled(
            self._provider(model, entry),
            account_id=account_id,
            emit=lambda name, payload: logger.info("judge %s on run %s: %s %s", model, self.run.pk, name, payload),
            run_timeout_seconds=budget,
            cancel=self._cancelled,
            deadline_name=f"the judge call's time budget ({budget:g}s)",
        )
        request = ModelRequest(model=target.model, messages=messages, tools=[], metadata={"purpose": "judge"}, step_timeout_seconds=budget)
        return provider.complete(request)

    def _cancelled(self) -> bool:
        return Run.objects.filter(pk=self.run.pk, cancelled_at__isnull=False).exists()


def judge_for_run(run: Run) -> RunJudge:
    return RunJudge(run)


def secret_values_for_run(run: Run) -> list[str]:
    """The workspace's secret values, to redact from what judges are shown."""
    try:
        return [v for v in secrets_resolve_for_run(workspace=run.workspace).values() if v]
    except Exception:
        logger.exception("Could not load workspace secrets for judge redaction")
        raise
