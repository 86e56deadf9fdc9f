"""Writes for workspace infrastructure, one module per record: provider accounts, runtime
profiles, deployments, tool resources, model prices; ``owned`` holds the steps they share.

Callers import from here (``from infrastructure import services``; ``services.deployment_create``).
"""

from __future__ import annotations

from infrastructure.services.deployments import (
    DEPLOYMENT_FIELDS,
    deployment_archive,
    deployment_create,
    deployment_update,
    endpoint_url_error,
)
from infrastructure.services.model_prices import MODEL_PRICE_FIELDS, model_price_create, model_price_update
from infrastructure.services.provider_accounts import (
    provider_account_archive,
    provider_account_create,
    provider_account_test_connection,
    provider_account_update,
)
from infrastructure.services.runtime_profiles import (
    RUNTIME_PROFILE_FIELDS,
    runtime_profile_archive,
    runtime_profile_create,
    runtime_profile_update,
)
from infrastructure.services.sandbox_templates import SANDBOX_TEMPLATE_FIELDS, sandbox_template_create, sandbox_template_update
from infrastructure.services.tool_resources import (
    TOOL_RESOURCE_FIELDS,
    tool_definition_errors,
    tool_resource_archive,
    tool_resource_create,
    tool_resource_update,
)

__all__ = [
    "SANDBOX_TEMPLATE_FIELDS",
    "sandbox_template_create",
    "sandbox_template_update",
    "DEPLOYMENT_FIELDS",
    "MODEL_PRICE_FIELDS",
    "RUNTIME_PROFILE_FIELDS",
    "TOOL_RESOURCE_FIELDS",
    "deployment_archive",
    "deployment_create",
    "deployment_update",
    "endpoint_url_error",
    "model_price_create",
    "model_price_update",
    "provider_account_archive",
    "provider_account_create",
    "provider_account_test_connection",
    "provider_account_update",
    "runtime_profile_archive",
    "runtime_profile_create",
    "runtime_profile_update",
    "tool_definition_errors",
    "tool_resource_archive",
    "tool_resource_create",
    "tool_resource_update",
]
