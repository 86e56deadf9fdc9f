"""The run family's shared fixtures (runs/tests/fixtures.py; docs/testing.md)."""

from runs.tests.fixtures import *  # noqa: F403
