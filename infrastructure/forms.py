"""Forms for the infrastructure dialogs. They clean input; services validate and save."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.forms.models import fields_for_model

from core.forms import model_choice
from infrastructure.models import LifecycleStatus, ProviderAccount, ProviderKey, RuntimeProfile, ToolResource
from infrastructure.services import RUNTIME_PROFILE_FIELDS
from workspaces.models import Workspace


class PrettyJSONField(forms.JSONField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 10, "spellcheck": "false"}))
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> str:
        if value is None:
            return ""  # an empty optional field stays empty (it showed "null" after an error elsewhere)
        if isinstance(value, str):
            return value  # invalid input being shown back
        return json.dumps(value, indent=2, ensure_ascii=False)

    def to_python(self, value: Any) -> Any:
        """As Django's, but an invalid document says what is wrong and where (issue 25)."""
        if isinstance(value, str) and value.strip() and not self.disabled:
            try:
                json.loads(value, cls=self.decoder)
            except json.JSONDecodeError as exc:
                raise forms.ValidationError(
                    "Not valid JSON: %(problem)s at line %(line)s, column %(column)s.",
                    code="invalid",
                    params={"problem": exc.msg.lower(), "line": exc.lineno, "column": exc.colno},
                ) from None
        return super().to_python(value)


LIMIT_MAX = 2_147_483_647  # the limit columns are 32-bit


class ProviderAccountForm(forms.Form):
    name = forms.CharField(max_length=200)
    provider_key = forms.ChoiceField(label="Provider", choices=ProviderKey.choices)
    credential_reference = forms.CharField(
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"placeholder": "workspace-secret://OPENAI_API_KEY"}),
        help_text="A workspace secret holding the API key, as workspace-secret://KEY.",
    )
    api_key = forms.CharField(
        label="…or paste an API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored as a new encrypted workspace secret; the reference is filled in for you.",
    )
    base_url = forms.CharField(
        label="Base URL",
        required=False,
        max_length=500,
        widget=forms.TextInput(attrs={"placeholder": "https://api.openai.com/v1"}),
        help_text=(
            "Required for “Custom”: its OpenAI-compatible server (vLLM, Ollama, LiteLLM…). Otherwise leave empty for the "
            "provider's own address, or set a proxy. https, public address."
        ),
    )
    # The account's limits, shared by every worker (docs/provider-limits.md); blank = no limit.
    max_concurrent_calls = forms.IntegerField(
        label="Max concurrent calls",
        required=False,
        min_value=1,
        max_value=LIMIT_MAX,
        help_text="Model calls in flight at once. Blank = no limit.",
    )
    requests_per_minute = forms.IntegerField(
        label="Requests per minute", required=False, min_value=1, max_value=LIMIT_MAX, help_text="Blank = no limit."
    )
    tokens_per_minute = forms.IntegerField(
        label="Tokens per minute", required=False, min_value=1, max_value=LIMIT_MAX, help_text="Input + output tokens. Blank = no limit."
    )


class ProviderAccountEditForm(ProviderAccountForm):
    status = forms.ChoiceField(
        choices=[(value, label) for value, label in ProviderAccount.Status.choices if value != ProviderAccount.Status.ARCHIVED]
    )


class RuntimeProfileForm(forms.Form):
    pass


# The profile's limits are plain model fields; reuse their types, bounds and help texts.
RuntimeProfileForm.base_fields = fields_for_model(RuntimeProfile, fields=RUNTIME_PROFILE_FIELDS)
# A blank sandbox override means "the pack decides" (the help text says so); Django's default says "Unknown".
for _override in ("allow_shell", "allow_network"):
    if _override in RuntimeProfileForm.base_fields:
        RuntimeProfileForm.base_fields[_override].widget.choices = [("unknown", "Pack decides"), ("true", "Yes"), ("false", "No")]


class DeploymentForm(forms.Form):
    name = forms.CharField(max_length=200)
    provider_account = forms.ModelChoiceField(queryset=ProviderAccount.objects.none())
    model = forms.CharField(max_length=200, help_text="The provider's model id, e.g. gpt-4.1-mini. Any text for scripted accounts.")
    runtime_profile = forms.ModelChoiceField(queryset=RuntimeProfile.objects.none())
    endpoint_url = forms.CharField(
        max_length=500,
        required=False,
        label="Endpoint URL",
        help_text="Hosted external runtime profiles only: the team's HTTPS endpoint that receives each case.",
    )
    system_prompt = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 4}))
    deployment_config = PrettyJSONField(
        required=False,
        initial=dict,
        help_text='JSON. Scripted accounts need {"script": {"default": [STEP…], "cases": {"<case key>": [STEP…]}}}.',
    )
    output_schema = PrettyJSONField(required=False, help_text="Optional JSON Schema for the final answer.")
    is_default_judge = forms.BooleanField(
        required=False,
        label="Default judge",
        help_text="New runs offer this deployment for an LLM judge model that no deployment matches exactly.",
    )

    def __init__(self, *args: Any, workspace: Workspace, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model_choice(self, "provider_account").queryset = ProviderAccount.objects.filter(workspace=workspace).exclude(
            status=ProviderAccount.Status.ARCHIVED
        )
        model_choice(self, "runtime_profile").queryset = RuntimeProfile.objects.filter(workspace=workspace).exclude(
            status=LifecycleStatus.ARCHIVED
        )


class ToolResourceForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=100, required=False, help_text="Leave blank to derive it from the name.")
    tool_kind = forms.ChoiceField(choices=ToolResource.ToolKind.choices)
    capability_key = forms.CharField(max_length=100, help_text="What the tool does, e.g. files.read or crm.lookup.")
    definition = PrettyJSONField(
        required=False,
        initial=dict,
        help_text="Composed tools: the same shape as a pack's tools.custom[] entry (name, description, parameters, implementation).",
    )
    lifecycle_status = forms.ChoiceField(label="Status", choices=ToolResource.Lifecycle.choices, initial=ToolResource.Lifecycle.ACTIVE)
