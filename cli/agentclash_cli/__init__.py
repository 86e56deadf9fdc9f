"""The ``agentclash`` command line: the REST API, from scripts and CI (docs/ci.md)."""

__version__ = "0.1.0"
