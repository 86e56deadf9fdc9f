"""Demo infrastructure: a scripted provider account, two runtime profiles, six scripted agents.

The scripts follow the demo packs (packs/demo/demo-file-fixes.yaml and demo-prompt-eval.yaml):
the "Good" agents solve every case, the "Sloppy" ones make mistakes a scorecard can show —
a wrong fix, a badly formatted answer, a wrong sum. One script covers both packs' case keys.
The two "(trials)" agents are stochastic (docs/runs.md, "Trials"): each trial of a case plays the
Good script or the Sloppy one, drawn with the weights below by a generator seeded by (seed, case
key, trial), so a run with repeats shows pass rates between 0 and 1 and flaky cases, reproducibly.
On the prompt-eval pack the Sloppy script still gets ``small`` right, so the true pass rates are:
Steady — small 1.0, negative and large 0.9 (0.93 over the pack); Flaky — small 1.0, negative and
large 0.6 (0.73 over the pack).
Idempotent: existing objects (matched by name) are left as they are.
"""

from __future__ import annotations

from typing import Any

from infrastructure import services
from infrastructure.models import AgentDeployment, ExecutionTarget, ProviderAccount, ProviderKey, RuntimeProfile
from workspaces.models import Workspace

ACCOUNT_NAME = "Scripted (offline)"
SETTINGS_PATH = "config/settings.json"
FIXED_SETTINGS = '{"name": "web", "port": 8080, "debug": false}'


def _fix(content: str, answer: str) -> list[dict[str, Any]]:
    """Read the config through the pack's composed tool, write it back, submit the answer."""
    return [
        {"tool": "read_config", "args": {"name": "settings.json"}},
        {"tool": "write_file", "args": {"path": SETTINGS_PATH, "content": content}},
        {"submit": answer},
    ]


GOOD_SCRIPT: dict[str, Any] = {
    "script": {
        "default": [{"submit": "I could not find instructions for this case."}],
        "cases": {
            # demo-file-fixes (native)
            "port-typo": _fix(FIXED_SETTINGS, "fixed port"),
            "debug-typo": _fix('{"name": "web", "port": 8080, "debug": true}', "fixed debug"),
            "name-case": _fix(FIXED_SETTINGS, "fixed name"),
            # demo-prompt-eval (prompt_eval: the first step's text is the answer)
            "small": [{"text": "5"}],
            "negative": [{"text": "-3"}],
            "large": [{"text": "1234"}],
        },
    }
}

SLOPPY_SCRIPT: dict[str, Any] = {
    "script": {
        "default": [{"text": "Not sure what to do here."}],
        "cases": {
            # wrong value written, answer in the wrong shape
            "port-typo": _fix('{"name": "web", "port": 8000, "debug": false}', "Fixed the port!"),
            # right file, answer names nothing
            "debug-typo": _fix('{"name": "web", "port": 8080, "debug": true}', "done"),
            # never writes the file, but reports success
            "name-case": [{"tool": "read_config", "args": {"name": "settings.json"}}, {"submit": "fixed name"}],
            "small": [{"text": "5"}],
            "negative": [{"text": "The answer is -3"}],
            "large": [{"text": "1243"}],
        },
    }
}


def _mix(good: float, seed: int) -> dict[str, Any]:
    """A stochastic scripted agent: the Good script with probability ``good``, else the Sloppy one."""
    return {
        "script_mix": [
            {"weight": good, "script": GOOD_SCRIPT["script"]},
            {"weight": round(1 - good, 6), "script": SLOPPY_SCRIPT["script"]},
        ],
        "seed": seed,
    }


STEADY_MIX = _mix(0.9, 24)
FLAKY_MIX = _mix(0.6, 24)
STEADY_NAME = "Steady agent (trials)"
FLAKY_NAME = "Flaky agent (trials)"

PROFILES: list[dict[str, Any]] = [
    {
        "name": "Native (demo)",
        "execution_target": ExecutionTarget.NATIVE,
        "max_iterations": 8,
        "max_tool_calls": 20,
        "step_timeout_seconds": 30,
        "run_timeout_seconds": 300,
    },
    {
        "name": "Prompt eval (demo)",
        "execution_target": ExecutionTarget.PROMPT_EVAL,
        "max_iterations": 1,
        "step_timeout_seconds": 30,
        "run_timeout_seconds": 120,
    },
]

DEPLOYMENTS = [
    ("Good agent", "Native (demo)", GOOD_SCRIPT, "Careful: reads the file, fixes the right value, answers in the requested format."),
    ("Sloppy agent", "Native (demo)", SLOPPY_SCRIPT, "Hasty: writes wrong values and answers loosely."),
    ("Good agent (prompt eval)", "Prompt eval (demo)", GOOD_SCRIPT, "Answers every sum with digits only."),
    ("Sloppy agent (prompt eval)", "Prompt eval (demo)", SLOPPY_SCRIPT, "Chatty and sometimes wrong."),
    (STEADY_NAME, "Prompt eval (demo)", STEADY_MIX, "Stochastic: answers like the Good agent 9 times in 10, else like the Sloppy one."),
    (FLAKY_NAME, "Prompt eval (demo)", FLAKY_MIX, "Stochastic: answers like the Good agent 6 times in 10, else like the Sloppy one."),
]


def seed(*, workspace: Workspace, user: Any) -> list[str]:
    notes: list[str] = []
    account = ProviderAccount.objects.filter(workspace=workspace, name=ACCOUNT_NAME).first()
    if account is None:
        account = services.provider_account_create(workspace=workspace, name=ACCOUNT_NAME, provider_key=ProviderKey.SCRIPTED, actor=user)
        notes.append(f"Created the provider account “{ACCOUNT_NAME}”.")
    profiles: dict[str, RuntimeProfile] = {}
    for spec in PROFILES:
        profile = RuntimeProfile.objects.filter(workspace=workspace, name=spec["name"]).first()
        if profile is None:
            profile = services.runtime_profile_create(workspace=workspace, actor=user, **spec)
            notes.append(f"Created the runtime profile “{profile.name}”.")
        profiles[spec["name"]] = profile
    for name, profile_name, config, prompt in DEPLOYMENTS:
        if AgentDeployment.objects.filter(workspace=workspace, name=name).exists():
            continue
        services.deployment_create(
            workspace=workspace,
            name=name,
            provider_account=account,
            model="scripted-demo",
            runtime_profile=profiles[profile_name],
            system_prompt=prompt,
            deployment_config=config,
            actor=user,
        )
        notes.append(f"Created the deployment “{name}”.")
    return notes
