from __future__ import annotations

from django import forms

from packs.models import Pack, PackVersion
from packs.services import MAX_BUNDLE_BYTES

TOO_LARGE = "A bundle may be at most 1 MiB."


class PackSourceForm(forms.Form):
    """The YAML editor: pasted text, or an uploaded file (which wins when both are given)."""

    # The editor's script refuses an over-long paste itself, with this message: the server's
    # request size limit would refuse it before this form could say anything.
    max_bytes = MAX_BUNDLE_BYTES
    too_large_message = TOO_LARGE

    yaml = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"wrap": "off", "spellcheck": "false"}))
    file = forms.FileField(required=False, label="…or upload a .yaml file")

    def clean(self) -> dict:
        super().clean()
        data = self.cleaned_data
        upload = data.get("file")
        if upload:
            if upload.size > MAX_BUNDLE_BYTES:
                self.add_error("file", f"The file is {upload.size} bytes. {TOO_LARGE}")
                return data
            raw = upload.read()
            try:
                data["source"] = raw.decode("utf-8-sig")
            except UnicodeDecodeError:
                self.add_error("file", "The file is not UTF-8 text.")
                return data
        else:
            data["source"] = data.get("yaml") or ""
        if not data["source"].strip():
            self.add_error("yaml", "Paste a pack bundle (YAML) or choose a file.")
        elif len(data["source"].encode()) > MAX_BUNDLE_BYTES:
            self.add_error("yaml", TOO_LARGE)
        return data


class PackVersionLifecycleForm(forms.Form):
    lifecycle_status = forms.ChoiceField(choices=PackVersion.Lifecycle.choices)


class PackLifecycleForm(forms.Form):
    lifecycle_status = forms.ChoiceField(choices=Pack.Lifecycle.choices)
