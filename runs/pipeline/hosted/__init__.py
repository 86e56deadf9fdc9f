"""Hosted external agents (docs/hosted-agents.md): the worker hands each case to the team's own
HTTPS endpoint, the agent posts its events back to a per-case callback URL with a scoped token."""

from __future__ import annotations
