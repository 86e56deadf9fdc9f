from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def artifact_root(settings, tmp_path):
    """Each test stores its artifacts in its own folder."""
    root = tmp_path / "artifacts"
    settings.STORAGES = {
        **settings.STORAGES,
        "artifacts": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(root)}},
    }
    return root
