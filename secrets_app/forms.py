from __future__ import annotations

from typing import Any

from django import forms

from secrets_app.models import SECRET_VALUE_MAX_BYTES


class SecretSetForm(forms.Form):
    """Add a secret, or edit one: a new value (optional when editing) and where tools may send it."""

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
    allowed_hosts = forms.CharField(
        label="Allowed hosts",
        required=False,
        strip=False,
        widget=forms.Textarea(
            attrs={"rows": 4, "placeholder": "api.example.com\n*.example.org:443", "autocomplete": "off", "spellcheck": "false"}
        ),
        help_text=(
            "One host per line, with an optional :port (any port without one); *.example.org covers the hosts below "
            "example.org. Composed tools send ${secrets.KEY} only to these hosts, and only if the pack's network "
            "allowlist allows them too. Empty: no tool can send this secret. Provider accounts are not affected."
        ),
    )

    def __init__(self, *args: Any, editing: bool = False, locked_key: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.locked_key = locked_key
        if editing:
            self.fields["value"].required = False
            self.fields["value"].help_text = "Write-only. Leave blank to keep the current value."
        if locked_key:  # the Edit dialog: the key names the secret, it is not renamed here
            self.fields["key"].widget.attrs["readonly"] = True
            self.fields["key"].help_text = "A secret's key cannot be changed: add a new secret with the new key, then delete this one."

    def clean_key(self) -> str:
        key = str(self.cleaned_data["key"])
        if self.locked_key and key.strip() != self.locked_key:
            # issue 25: a changed key in the Edit dialog silently made a second secret
            raise forms.ValidationError(
                f"This dialog edits {self.locked_key}; a key cannot be renamed. Add a new secret with the new key, then delete this one."
            )
        return key

    def clean_value(self) -> str | None:
        return self.cleaned_data["value"] or None  # blank while editing: keep the stored value

    def clean_allowed_hosts(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["allowed_hosts"].splitlines() if line.strip()]
