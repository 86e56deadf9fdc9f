"""LLM judges for scoring: a real provider per judge model, and the secrets to redact from prompts."""

from __future__ import annotations

import logging
from collections.abc import Callable

from engine.providers import create_provider
from engine.types import Message, ModelRequest, ModelResponse
from infrastructure.models import AgentDeployment, LifecycleStatus
from runs.models import Lane, Run
from secrets_app.services import credential_resolve, secrets_resolve_for_run

logger = logging.getLogger(__name__)

Judge = Callable[[str, list[Message]], ModelResponse]


def judge_for_lane(lane: Lane) -> Judge:
    """``judge(model, messages) -> ModelResponse`` backed by a real provider.

    Uses the workspace deployment whose model equals the judge model (its provider account and
    credential); otherwise the lane's own scripted configuration, so offline demos can judge.
    """

    def judge(model: str, messages: list[Message]) -> ModelResponse:
        deployment = (
            AgentDeployment.objects.select_related("provider_account__workspace")
            .filter(workspace_id=lane.workspace_id, model=model, status=LifecycleStatus.ACTIVE)
            .order_by("id")
            .first()
        )
        if deployment is not None:
            account = deployment.provider_account
            provider = create_provider(
                account.provider_key,
                api_key=credential_resolve(workspace=account.workspace, reference=account.credential_reference),
                base_url=account.base_url or None,
                deployment_config=deployment.deployment_config or {},
            )
        else:
            provider = create_provider("scripted", api_key=None, base_url=None, deployment_config=lane.deployment_config)
        return provider.complete(ModelRequest(model=model, messages=messages, tools=[], metadata={"purpose": "judge"}))

    return judge


def secret_values_for_run(run: Run) -> list[str]:
    """The workspace's secret values, to redact from what judges are shown."""
    try:
        return [v for v in secrets_resolve_for_run(workspace=run.workspace).values() if v]
    except Exception:
        logger.exception("Could not load workspace secrets for judge redaction")
        raise
