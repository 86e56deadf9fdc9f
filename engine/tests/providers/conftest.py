from __future__ import annotations

import pytest

from engine.tests.providers.fake_server import FakeServer


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake
