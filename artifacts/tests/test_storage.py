"""ARTIFACT_STORAGE_URL → the ``artifacts`` storage: local by default, S3-compatible when asked."""

from __future__ import annotations

import importlib.util

import pytest
from django.core.exceptions import ImproperlyConfigured

from artifacts.storage import S3_BACKEND, storage_config


def test_an_empty_url_means_local_files():
    assert storage_config("", local_root="/srv/media/artifacts") == {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": "/srv/media/artifacts"},
    }


@pytest.mark.parametrize("url", ["http://bucket/x", "s3://", "/srv/artifacts"])
def test_it_refuses_what_it_cannot_read(url):
    with pytest.raises(ImproperlyConfigured, match="ARTIFACT_STORAGE_URL must be"):
        storage_config(url, local_root="/x")


def test_it_refuses_unknown_s3_options():
    with pytest.raises(ImproperlyConfigured, match="unknown option 'acl'"):
        storage_config("s3://bucket?acl=public-read", local_root="/x")


def test_an_s3_url_configures_django_storages(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name in ("storages", "boto3") else real(name, *a))
    config = storage_config("s3://ac-artifacts/prod/files?endpoint_url=https://minio.internal:9000&region_name=eu-west-1", local_root="/x")
    assert config == {
        "BACKEND": S3_BACKEND,
        "OPTIONS": {
            "bucket_name": "ac-artifacts",
            "location": "prod/files",
            "default_acl": "private",
            "file_overwrite": False,
            "querystring_auth": True,
            "endpoint_url": "https://minio.internal:9000",
            "region_name": "eu-west-1",
        },
    }


def test_an_s3_url_without_django_storages_fails_loudly(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "storages" else real(name, *a))
    with pytest.raises(ImproperlyConfigured, match="pip install 'django-storages\\[s3\\]'"):
        storage_config("s3://bucket", local_root="/x")
