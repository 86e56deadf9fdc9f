"""Test data for runs: a small published pack and scripted deployments."""

from __future__ import annotations

import itertools
from typing import Any

from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile
from packs.models import PackVersion
from packs.services import pack_publish
from workspaces.models import Workspace

_counter = itertools.count(1)


def native_pack_yaml(*, cases: int = 3, slug: str | None = None, mode: str = "native", extra_version: str = "") -> str:
    slug = slug or f"notes-{next(_counter)}"
    case_lines = []
    for i in range(cases):
        case_lines.append(f"""      - challenge_key: notes
        case_key: case-{i}
        payload:
          workspace_files:
            - path: notes.txt
              content: "note number {i}"
        inputs:
          - key: number
            kind: text
            value: "{i}"
        expectations:
          - key: answer
            kind: text
            value: "note number {i}"
""")
    return f"""pack:
  slug: {slug}
  name: Notes {slug}
  family: testing
version:
  number: 1
  execution_mode: {mode}
{extra_version}
{"" if mode == "prompt_eval" else "  tool_policy:" + chr(10) + "    allowed_tool_kinds: [file]"}
  evaluation_spec:
    name: notes-v1
    version_number: 1
    judge_mode: deterministic
    validators:
      - key: answer
        type: contains  # the scripted reader submits the read_file result, which holds the note
        target: final_output
        expected_from: case.expectations.answer
    metrics:
      - key: completed
        type: boolean
        collector: run_completed_successfully
    scorecard:
      dimensions: [correctness]
challenges:
  - key: notes
    title: Read the note
    category: files
    difficulty: easy
    instructions: Read notes.txt and submit its content.
input_sets:
  - key: default
    name: Default
    cases:
{"".join(case_lines)}"""


def publish(workspace: Workspace, user: Any, source: str) -> PackVersion:
    return pack_publish(workspace=workspace, user=user, source=source)


READ_AND_SUBMIT = [{"tool": "read_file", "args": {"path": "/workspace/notes.txt"}}, {"submit": "{{last_result}}"}]


def make_deployment(
    workspace: Workspace,
    *,
    name: str | None = None,
    script: list | dict | None = None,
    max_iterations: int = 10,
    max_tool_calls: int = 0,
    max_in_flight_cases: int = 8,
    credential_reference: str = "",
    provider_key: str = "scripted",
    execution_target: str = "native",
    **extra: Any,
) -> AgentDeployment:
    """A scripted deployment whose runtime profile runs ``execution_target``: give the mode of the
    pack it races in (run creation refuses a deployment whose profile runs another mode)."""
    n = next(_counter)
    account = ProviderAccount.objects.create(
        workspace=workspace, name=f"account-{n}", provider_key=provider_key, credential_reference=credential_reference
    )
    profile = RuntimeProfile.objects.create(
        workspace=workspace,
        name=f"profile-{n}",
        max_iterations=max_iterations,
        max_tool_calls=max_tool_calls,
        max_in_flight_cases=max_in_flight_cases,
        execution_target=execution_target,
    )
    if script is None:
        script = READ_AND_SUBMIT
    config = {"script": script if isinstance(script, dict) else {"default": script}}
    return AgentDeployment.objects.create(
        workspace=workspace,
        name=name or f"agent-{n}",
        provider_account=account,
        model="scripted-1",
        runtime_profile=profile,
        deployment_config=config,
        **extra,
    )


def demo_race() -> tuple[Any, Any, Any]:
    """The demo workspace (seeded) with one finished run of its Good and Sloppy agents on the
    file-fixes pack, executed in-process: ``(demo, user, run)``."""
    from django.contrib.auth import get_user_model

    from runs import queue, services
    from runs.tests.fixtures import TaskQueue
    from workspaces.demo import demo_seed

    demo = demo_seed()
    user = get_user_model().objects.get(username=demo.username)
    version = PackVersion.objects.get(workspace=demo.workspace, pack__slug="demo-file-fixes")
    agents = [AgentDeployment.objects.get(workspace=demo.workspace, name=n).pk for n in ("Good agent", "Sloppy agent")]
    captured = TaskQueue()
    queue.capture(captured.items)
    try:
        run = services.run_create(workspace=demo.workspace, user=user, pack_version=version, deployment_ids=agents)
        captured.drain()
    finally:
        queue.capture(None)
    return demo, user, run
