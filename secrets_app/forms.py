from __future__ import annotations

from django import forms

from secrets_app.models import SECRET_VALUE_MAX_BYTES


class SecretSetForm(forms.Form):
    key = forms.CharField(
        max_length=200,  # the service gives the precise 128-character message
        widget=forms.TextInput(attrs={"placeholder": "OPENAI_API_KEY", "autocomplete": "off", "spellcheck": "false"}),
        help_text="Letters, digits and underscores, not starting with a digit; at most 128 characters.",
    )
    # render_value=False: a form re-rendered with errors never puts the value back into the page.
    value = forms.CharField(
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=f"Write-only: it is encrypted and never shown again. Up to {SECRET_VALUE_MAX_BYTES // 1024} KiB.",
    )
