"""What an uploaded file is: its sanitised name and its sniffed content type (docs/artifacts.md).

Pure Python. The client's Content-Type is never trusted: the type comes from the bytes (magic
numbers for binary formats, strict UTF-8 for text) and the extension only picks among the text
types. HTML, SVG, JavaScript and XML are refused outright, and so is anything not on the allowlist.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
import unicodedata

from core.errors import DomainError

TEXT_PLAIN = "text/plain"
JSON = "application/json"
NDJSON = "application/x-ndjson"
YAML = "application/yaml"
CSV = "text/csv"
MARKDOWN = "text/markdown"
PNG = "image/png"
JPEG = "image/jpeg"
GIF = "image/gif"
WEBP = "image/webp"
PDF = "application/pdf"
ZIP = "application/zip"
GZIP = "application/gzip"

ALLOWED_CONTENT_TYPES = (TEXT_PLAIN, MARKDOWN, CSV, JSON, NDJSON, YAML, PDF, PNG, JPEG, GIF, WEBP, ZIP, GZIP)
TEXT_TYPES = frozenset({TEXT_PLAIN, MARKDOWN, CSV, JSON, NDJSON, YAML})

_EXTENSION_TYPES = {
    ".txt": TEXT_PLAIN,
    ".log": TEXT_PLAIN,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".csv": CSV,
    ".json": JSON,
    ".jsonl": NDJSON,
    ".ndjson": NDJSON,
    ".yaml": YAML,
    ".yml": YAML,
    ".pdf": PDF,
    ".png": PNG,
    ".jpg": JPEG,
    ".jpeg": JPEG,
    ".gif": GIF,
    ".webp": WEBP,
    ".zip": ZIP,
    ".gz": GZIP,
    ".tgz": GZIP,
}
# Browsers run these when opened; an artifact store must never hand one out.
BLOCKED_EXTENSIONS = frozenset({".html", ".htm", ".xhtml", ".shtml", ".svg", ".svgz", ".js", ".mjs", ".xml", ".xsl", ".xslt"})
_MARKUP_START = re.compile(rb"^\s*<(?:!doctype\s+html|html|svg|\?xml|script)\b", re.IGNORECASE)
# Control characters no text file has (tab, newlines, form feed and escape are fine).
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f]")
_HEAD_BYTES = 512
_NAME_MAX = 200


_STATUS = {"payload_too_large": 413, "unsupported_media_type": 415}


class ContentRefused(DomainError):
    """The file may not be stored: ``code`` is ``unsupported_media_type`` (415) or
    ``payload_too_large`` (413); the error is about the upload's ``file`` field."""

    def __init__(self, code: str, message: str):
        super().__init__(message, field="file", code=code, status=_STATUS.get(code, 400))


def safe_filename(name: str, *, default: str = "artifact") -> str:
    """A file name without directories, control characters or shell-hostile punctuation."""
    name = unicodedata.normalize("NFKC", name or "")
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if ch.isprintable() and ch not in '<>:"|?*;')
    name = re.sub(r"\s+", " ", name).strip(" .")
    if not name:
        return default
    if len(name) > _NAME_MAX:
        stem, ext = os.path.splitext(name)
        ext = ext[:20]
        name = stem[: _NAME_MAX - len(ext)] + ext
    return name


def extension_of(name: str) -> str:
    lower = name.lower()
    if lower.endswith(".tar.gz"):
        return ".gz"
    return os.path.splitext(lower)[1]


def _magic_type(head: bytes) -> str | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if head.startswith(b"\xff\xd8\xff"):
        return JPEG
    if head.startswith((b"GIF87a", b"GIF89a")):
        return GIF
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return WEBP
    if head.startswith(b"%PDF-"):
        return PDF
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return ZIP
    if head.startswith(b"\x1f\x8b"):
        return GZIP
    return None


class Sniffer:
    """Fed a file chunk by chunk: counts, hashes and decides what the file is, refusing early."""

    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.head = b""
        self._sha256 = hashlib.sha256()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
        self._is_text = True

    def feed(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.max_bytes:
            raise ContentRefused("payload_too_large", f"the file is larger than the limit of {self.max_bytes} bytes")
        if len(self.head) < _HEAD_BYTES:
            self.head += chunk[: _HEAD_BYTES - len(self.head)]
        self._sha256.update(chunk)
        if self._is_text:
            try:
                text = self._decoder.decode(chunk)
            except UnicodeDecodeError:
                self._is_text = False
            else:
                if _CONTROL.search(text):
                    self._is_text = False

    @property
    def sha256(self) -> str:
        return self._sha256.hexdigest()

    def content_type(self, name: str) -> str:
        """The sniffed type for a file called ``name``; ContentRefused when it may not be stored."""
        if self._is_text:
            try:
                self._decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                self._is_text = False
        ext = extension_of(name)
        if ext in BLOCKED_EXTENSIONS:
            raise ContentRefused("unsupported_media_type", f"{ext} files are not accepted (HTML, SVG, JavaScript and XML never are)")
        claimed = _EXTENSION_TYPES.get(ext)
        sniffed = _magic_type(self.head)
        if sniffed is None and self._is_text:
            if _MARKUP_START.match(self.head.lstrip(codecs.BOM_UTF8)):
                raise ContentRefused("unsupported_media_type", "HTML, SVG and XML content is not accepted")
            sniffed = claimed if claimed in TEXT_TYPES else TEXT_PLAIN
        if sniffed is None:
            allowed = ", ".join(ALLOWED_CONTENT_TYPES)
            raise ContentRefused("unsupported_media_type", f"the file's content is not one of the accepted types ({allowed})")
        if claimed is not None and claimed != sniffed:
            raise ContentRefused("unsupported_media_type", f"the file is named {ext} but its content is {sniffed}")
        return sniffed
