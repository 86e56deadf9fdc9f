"""Where artifact bytes live: Django's storage API under the ``artifacts`` alias (docs/artifacts.md).

``storage_config`` turns ``ARTIFACT_STORAGE_URL`` into a ``STORAGES`` entry; the settings call it
(so this module imports nothing of the project and no model). Empty → local files; ``s3://…`` →
django-storages' S3 backend (any S3-compatible service), which is optional and only imported
when configured.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.core.files.storage import Storage, storages

ALIAS = "artifacts"
S3_BACKEND = "storages.backends.s3.S3Storage"
_S3_QUERY_OPTIONS = frozenset({"endpoint_url", "region_name", "addressing_style", "signature_version"})


def storage_config(url: str, *, local_root: Path | str) -> dict[str, Any]:
    """``""`` → FileSystemStorage under ``local_root``; ``s3://BUCKET[/PREFIX][?endpoint_url=…&region_name=…]`` → S3.

    S3 credentials are not part of the URL: boto3 reads them from its usual places
    (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``, a profile, an instance role).
    """
    url = (url or "").strip()
    if not url:
        return {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(local_root)}}
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ImproperlyConfigured(
            "ARTIFACT_STORAGE_URL must be empty (local files) or s3://BUCKET[/PREFIX][?endpoint_url=…&region_name=…]."
        )
    options: dict[str, Any] = {
        "bucket_name": parts.netloc,
        "location": parts.path.strip("/"),
        "default_acl": "private",
        "file_overwrite": False,
        "querystring_auth": True,
    }
    for key, values in parse_qs(parts.query).items():
        if key not in _S3_QUERY_OPTIONS:
            raise ImproperlyConfigured(f"ARTIFACT_STORAGE_URL: unknown option {key!r} (known: {', '.join(sorted(_S3_QUERY_OPTIONS))}).")
        options[key] = values[-1]
    if importlib.util.find_spec("storages") is None or importlib.util.find_spec("boto3") is None:
        raise ImproperlyConfigured(
            "ARTIFACT_STORAGE_URL is s3://… but django-storages is not installed: pip install 'django-storages[s3]'."
        )
    return {"BACKEND": S3_BACKEND, "OPTIONS": options}


def artifact_storage() -> Storage:
    """The configured storage (looked up on every call, so tests can swap ``STORAGES``)."""
    try:
        return storages[ALIAS]
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"ARTIFACT_STORAGE_URL needs django-storages with boto3 (pip install 'django-storages[s3]'): {exc}"
        ) from exc


def storage_key(*, workspace_id: int, artifact_id: str) -> str:
    """No user-supplied text in storage paths: the workspace id and the artifact's UUID."""
    return f"workspaces/{workspace_id}/{artifact_id}"
