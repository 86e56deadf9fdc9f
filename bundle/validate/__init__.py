"""Bundle validation (spec §3–§4) in the spec's order (§1.4); all errors in one pass."""

from __future__ import annotations

from typing import Any

from bundle.validate.assets import validate_version_assets, version_asset_keys
from bundle.validate.cases import validate_input_sets
from bundle.validate.challenges import validate_challenges
from bundle.validate.common import Report
from bundle.validate.composed_tools import validate_tools
from bundle.validate.deployment_defaults import validate_deployment_defaults
from bundle.validate.evaluation_spec import validate_evaluation_spec
from bundle.validate.modality import validate_modality
from bundle.validate.pack import (
    validate_challenges_present,
    validate_execution_mode,
    validate_mode_compatibility,
    validate_pack,
    validate_version_number,
)
from bundle.validate.sandbox import validate_sandbox
from bundle.validate.security import validate_security, validate_security_required
from bundle.validate.templating import validate_code_execution_templates
from bundle.validate.tool_policy import validate_tool_policy
from bundle.validate.tool_secrets import validate_tool_secrets
from bundle.validate.user_simulator import validate_user_simulators


def validate_bundle(bundle: dict[str, Any]) -> list[tuple[str, str]]:
    report = Report()
    version_keys = version_asset_keys(bundle)
    validate_pack(bundle, report)
    validate_version_number(bundle, report)
    validate_modality(bundle, report)
    validate_execution_mode(bundle, report)
    validate_mode_compatibility(bundle, report)
    validate_challenges_present(bundle, report)
    validate_security_required(bundle, report)
    validate_security(bundle, report)
    validate_challenges(bundle, version_keys, report)
    validate_input_sets(bundle, version_keys, report)
    validate_tools(bundle, report)
    validate_tool_secrets(bundle, report)
    validate_tool_policy(bundle, report)
    validate_sandbox(bundle, report)
    validate_deployment_defaults(bundle, report)
    validate_evaluation_spec(bundle, report)
    validate_code_execution_templates(bundle, report)
    validate_user_simulators(bundle, version_keys, report)
    validate_version_assets(bundle, report)
    return report.items
