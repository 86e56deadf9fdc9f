"""Default run names that tell runs apart: pack, version, agents and the time to the second."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from infrastructure.models import AgentDeployment
from packs.models import PackVersion
from runs.models import Run
from workspaces.models import Workspace

NAME_MAX = 200
AGENTS_SHOWN = 3
# A default name fits one line of a list (issue 25: long agent names made four-line names):
# each part is cut, with "…", to these many characters.
PACK_CHARS = 40
AGENT_CHARS = 24


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def agents_text(names: Sequence[str]) -> str:
    """``A``, ``A vs B``, ``A vs B vs C``, ``A vs B vs C + 2 more``; a long name is cut."""
    shown = " vs ".join(_cut(name, AGENT_CHARS) for name in names[:AGENTS_SHOWN])
    hidden = len(names) - AGENTS_SHOWN
    return f"{shown} + {hidden} more" if hidden > 0 else shown


def run_default_name(*, workspace: Workspace, pack_version: PackVersion, deployments: Sequence[AgentDeployment], at: datetime) -> str:
    """``Support triage v3 · gpt-4.1 vs claude · 2026-05-01 14:03:27``, suffixed ``(2)`` if taken.

    Two runs of the same pack and agents started within one second would otherwise read the
    same in every list and picker.
    """
    stamp = f"{timezone.localtime(at):%Y-%m-%d %H:%M:%S}"
    head = f"{_cut(pack_version.pack.name, PACK_CHARS)} v{pack_version.number}"
    agents = agents_text([d.name for d in deployments])
    room = NAME_MAX - len(head) - len(stamp) - len(" ·  · ") - len(" (99)")
    if len(agents) > room:
        agents = agents[: max(0, room - 1)].rstrip() + "…"
    base = f"{head} · {agents} · {stamp}"
    taken = set(Run.objects.filter(workspace=workspace, name__startswith=base).values_list("name", flat=True))
    name, n = base, 2
    while name in taken:
        name, n = f"{base} ({n})", n + 1
    return name
