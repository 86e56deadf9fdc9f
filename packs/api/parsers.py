"""Request parsers for YAML bundles sent as the raw body (``Content-Type: text/yaml``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.parsers import BaseParser

from core.api import ApiError
from packs.services import MAX_BUNDLE_BYTES


def too_large(size: int | None = None) -> ApiError:
    detail = f" ({size} bytes)" if size is not None else ""
    return ApiError(413, "payload_too_large", f"request body is larger than 1 MiB{detail}; a pack bundle may be at most 1 MiB")


class YamlTextParser(BaseParser):
    """Returns the body as text; the bundle pipeline parses it (with line numbers)."""

    media_type = "text/yaml"

    # Returns a str; DRF's stubs declare parsers as returning mappings, hence Any.
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        if stream is None:
            return ""
        raw = stream.read(MAX_BUNDLE_BYTES + 1)
        if len(raw) > MAX_BUNDLE_BYTES:
            raise too_large()
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            return raw.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            raise ApiError(400, "invalid_request", "request body is not valid UTF-8 text") from None


class XYamlTextParser(YamlTextParser):
    media_type = "application/x-yaml"


class ApplicationYamlTextParser(YamlTextParser):
    media_type = "application/yaml"
