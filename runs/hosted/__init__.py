"""Hosted external agents (docs/hosted-agents.md): the worker hands each case to the team's own
HTTPS endpoint, the agent posts its events back to a per-case callback URL with a scoped token."""

from __future__ import annotations

HOSTED_EXTERNAL = "hosted_external"  # infrastructure.models.ExecutionTarget.HOSTED_EXTERNAL, as lanes snapshot it
# Pack execution modes a hosted agent can race in: one case in, one answer out. A multi-turn pack
# needs the simulator's turns fed to the agent, which the protocol does not carry (yet).
HOSTED_PACK_MODES = frozenset({"native", "prompt_eval"})
