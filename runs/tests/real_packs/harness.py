"""Race a scripted good agent and a scripted bad agent through a real AgentClash pack.

Each pack has one data file, ``agents/<pack slug>.yaml``::

    pack: packs/library/<slug>.yaml     # the pack, relative to the repository root
    input_sets: [default]               # optional; default: every input set of the pack
    needs_sandbox: false                # prompt_eval packs only (no bubblewrap needed)
    expect:                             # what a careful reviewer says (defaults below)
      race_completed: true
      good_ranks_first: true
      gate_good_to_bad: fail
      gate_good_to_good: pass
    why: {good: "...", bad: "..."}      # for people: what each agent does and why it is good/bad
    judges:                             # scripted LLM judges, by the pack's judge key
      <judge key>:
        - when: ["text the judged context contains", ...]   # all of them; optional
          unless: ["text it must not contain", ...]           # optional
          reply: {score: 5, confidence: high, reasoning: "..."}
        - reply: {...}                                        # no `when`: the fallback
    simulator:                          # scripted `llm` user-simulator (multi_turn packs)
      rules: [{when: [...], reply: "user message"}]
      default: "user message"
    agents:
      good: {script: {...}, system_prompt: "", max_iterations: 20}
      bad:  {...}

``script`` is the scripted provider's ``deployment_config["script"]`` (engine/providers/scripted.py).

A race is: publish the pack, create a run with the good and the bad deployment (the race),
create a second run of the good deployment alone (the good agent again), drain the tasks
in-process (runs/tests/fixtures.py), then compare good → bad and good → good with the default
gate policy. Judges are one scripted deployment per judge model the pack names, passed to
``run_create`` as ``judge_deployments``; the simulator is a scripted deployment passed as
``simulator_deployment_id``. Both answer with the scripted provider's content-dependent
``replies`` (each judge's rules are scoped to it by its rubric/assertion text, ``about``).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

import yaml

from comparisons.models import GateResult
from comparisons.services import comparison_create, gate_evaluate
from infrastructure.models import AgentDeployment, ProviderAccount, RuntimeProfile
from packs.models import PackVersion
from packs.services import pack_publish
from runs.models import CaseRun, Lane, Run
from runs.services import run_create
from scoring.models import CaseScore, LaneScorecard, RunScorecard

REPO = Path(__file__).resolve().parents[3]
AGENTS_DIR = Path(__file__).resolve().parent / "agents"
AGENT_MODEL = "scripted-agent-1"
SIMULATOR_MODEL = "scripted-user-simulator-1"
DEFAULT_EXPECT = {"race_completed": True, "good_ranks_first": True, "gate_good_to_bad": "fail", "gate_good_to_good": "pass"}

_names = itertools.count(1)


@dataclasses.dataclass(frozen=True, repr=False)
class PackAgents:
    slug: str
    data: dict[str, Any]

    def __repr__(self) -> str:
        return f"PackAgents({self.slug!r})"

    @property
    def pack_path(self) -> Path:
        return REPO / self.data["pack"]

    @property
    def expect(self) -> dict[str, Any]:
        return {**DEFAULT_EXPECT, **(self.data.get("expect") or {})}

    def agent(self, role: str) -> dict[str, Any]:
        return self.data["agents"][role]

    @property
    def pack(self) -> dict[str, Any]:
        return yaml.safe_load(self.pack_path.read_text())

    @property
    def mode(self) -> str:
        """The pack's execution mode: its racing deployments' runtime profiles run it."""
        return str((self.pack.get("version") or {}).get("execution_mode") or "native").strip() or "native"

    @property
    def security(self) -> dict[str, Any] | None:
        """The pack's ``security`` block, for packs that have one."""
        return self.pack.get("security") or None


def load(path: Path) -> PackAgents:
    data = yaml.safe_load(path.read_text())
    return PackAgents(slug=path.stem, data=data)


def all_pack_agents() -> list[PackAgents]:
    return [load(path) for path in sorted(AGENTS_DIR.glob("*.yaml"))]


# -- deployments ------------------------------------------------------------------------------


def _deployment(
    workspace: Any,
    *,
    name: str,
    model: str,
    config: dict[str, Any],
    system_prompt: str = "",
    max_iterations: int = 20,
    execution_target: str = "native",
) -> AgentDeployment:
    """A scripted deployment; a racing one's runtime profile runs its pack's mode (run creation
    refuses any other), judges and simulators keep the native default (their mode is not checked)."""
    n = next(_names)
    account = ProviderAccount.objects.create(workspace=workspace, name=f"scripted-{n}", provider_key="scripted")
    profile = RuntimeProfile.objects.create(
        workspace=workspace, name=f"profile-{n}", max_iterations=max_iterations, execution_target=execution_target
    )
    return AgentDeployment.objects.create(
        workspace=workspace,
        name=name,
        provider_account=account,
        model=model,
        runtime_profile=profile,
        system_prompt=system_prompt,
        deployment_config=config,
    )


def agent_deployment(workspace: Any, spec: PackAgents, role: str) -> AgentDeployment:
    agent = spec.agent(role)
    return _deployment(
        workspace,
        name=f"{role} agent ({spec.slug})",
        model=AGENT_MODEL,
        config={"script": agent["script"]},
        system_prompt=agent.get("system_prompt") or "",
        max_iterations=int(agent.get("max_iterations") or 20),
        execution_target=spec.mode,
    )


def _judge_text(decl: dict[str, Any]) -> str:
    return str(decl.get("assertion") or decl.get("rubric") or decl.get("prompt") or "").strip()


NO_VERDICT = {"purpose": "judge", "reply": "no scripted verdict for this prompt"}


def judge_rules(manifest: dict[str, Any], judges: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Scripted ``replies`` per judge model: each rule is scoped to its judge by the judge's text."""
    decls = {str(d.get("key")): d for d in (manifest.get("evaluation_spec") or {}).get("llm_judges") or [] if isinstance(d, dict)}
    unknown, missing = sorted(set(judges) - set(decls)), sorted(set(decls) - set(judges))
    if unknown or missing:
        raise ValueError(f"scripted judges must match the pack's judges: unknown {unknown}, missing {missing}")
    by_model: dict[str, list[dict[str, Any]]] = {}
    for key, decl in decls.items():
        models = decl.get("models") or ([decl["model"]] if decl.get("model") else [])
        rules = [
            {
                "purpose": "judge",
                "about": [_judge_text(decl)],
                "when": list(rule.get("when") or []),
                "unless": list(rule.get("unless") or []),
                "reply": rule["reply"] if isinstance(rule["reply"], str) else json.dumps(rule["reply"]),
            }
            for rule in judges.get(key) or []
        ]
        for model in models:
            by_model.setdefault(str(model), []).extend(rules)
    return by_model


def judge_deployments(workspace: Any, manifest: dict[str, Any], spec: PackAgents) -> dict[str, AgentDeployment]:
    """One scripted judge deployment per judge model the pack names (model as written in the pack)."""
    rules = judge_rules(manifest, spec.data.get("judges") or {})
    return {
        model: _deployment(
            workspace,
            name=f"judge {model} ({spec.slug})",
            model=model,
            config={"replies": [*model_rules, NO_VERDICT]},
        )
        for model, model_rules in rules.items()
    }


def simulator_deployment(workspace: Any, spec: PackAgents) -> AgentDeployment | None:
    simulator = spec.data.get("simulator")
    if not simulator:
        return None
    rules = [
        {
            "purpose": "user_simulator",
            "when": list(rule.get("when") or []),
            "unless": list(rule.get("unless") or []),
            "reply": rule["reply"],
        }
        for rule in simulator.get("rules") or []
    ]
    return _deployment(
        workspace,
        name=f"user simulator ({spec.slug})",
        model=SIMULATOR_MODEL,
        config={"replies": [*rules, {"purpose": "user_simulator", "reply": simulator.get("default") or ""}]},
    )


# -- runs -------------------------------------------------------------------------------------


def _run_create_extras(judges: dict[str, AgentDeployment], simulator: AgentDeployment | None) -> dict[str, Any]:
    """Who judges and who plays the user, for ``run_create``."""
    extras: dict[str, Any] = {"judge_deployments": {model: d.pk for model, d in judges.items()}}
    if simulator is not None:
        extras["simulator_deployment_id"] = simulator.pk
    return extras


def start_run(
    tasks: Any,
    *,
    workspace: Any,
    user: Any,
    version: PackVersion,
    deployments: list[AgentDeployment],
    input_set: Any,
    name: str,
    extras: dict[str, Any],
) -> Run:
    run = run_create(
        workspace=workspace,
        user=user,
        pack_version=version,
        deployment_ids=[d.pk for d in deployments],
        input_set_id=input_set.pk,
        name=name,
        **extras,
    )
    tasks.drain()
    run.refresh_from_db()
    return run


@dataclasses.dataclass
class Race:
    input_set: str
    race: Run
    again: Run
    good: Lane
    bad: Lane
    good_again: Lane
    good_to_bad: GateResult
    good_to_good: GateResult

    def ranking(self) -> dict[str, Any]:
        card = RunScorecard.objects.filter(run=self.race).first()
        return card.document if card is not None else {}

    def good_ranks_first(self) -> bool:
        document = self.ranking()
        ranks = {str(row.get("lane_id")): row.get("rank") for row in document.get("ranking") or []}
        return str(document.get("winner_lane_id")) == str(self.good.pk) and ranks.get(str(self.good.pk)) == 1

    def verdicts(self) -> dict[str, Any]:
        """What a reviewer checks, in the shape of ``PackAgents.expect``."""
        return {
            "race_completed": self.race.status == "completed" and self.again.status == "completed",
            "good_ranks_first": self.good_ranks_first(),
            "gate_good_to_bad": self.good_to_bad.verdict,
            "gate_good_to_good": self.good_to_good.verdict,
        }

    def describe(self) -> dict[str, Any]:
        return {
            "input_set": self.input_set,
            "race": run_summary(self.race),
            "again": run_summary(self.again),
            "ranking": [
                {k: row.get(k) for k in ("lane_id", "rank", "overall_score", "pass_rate", "validity")}
                for row in self.ranking().get("ranking") or []
            ],
            "winner_lane_id": self.ranking().get("winner_lane_id"),
            "lanes": {"good": self.good.pk, "bad": self.bad.pk, "good_again": self.good_again.pk},
            "good_to_bad": gate_summary(self.good_to_bad),
            "good_to_good": gate_summary(self.good_to_good),
        }


def run_summary(run: Run) -> dict[str, Any]:
    lanes = {}
    for lane in Lane.objects.filter(run=run).order_by("lane_index"):
        card = LaneScorecard.objects.filter(lane=lane).first()
        document = card.document if card is not None else {}
        cases = []
        for case_run in CaseRun.objects.filter(lane=lane).order_by("position"):
            score = CaseScore.objects.filter(case_run=case_run).first()
            doc = score.document if score is not None else {}
            cases.append(
                {
                    "case": case_run.case_key,
                    "status": case_run.status,
                    "stop_reason": case_run.stop_reason,
                    "error": (case_run.error or "")[:200],
                    "passed": case_run.passed,
                    "score": case_run.score,
                    "tokens": case_run.total_tokens,
                    "duration_ms": case_run.duration_ms,
                    "validity": doc.get("validity"),
                    "validity_reason": doc.get("validity_reason"),
                    "failed_validators": sorted(
                        d.get("key")
                        for d in doc.get("validator_details") or []
                        if d.get("state") == "available" and d.get("verdict") == "fail"
                    ),
                    "unavailable": sorted(k for k, d in (doc.get("dimensions") or {}).items() if d.get("state") != "available"),
                    "judges": {
                        j.get("judge_key"): (j.get("state"), j.get("normalized_score"), (j.get("reason") or "")[:120])
                        for j in doc.get("llm_judge_details") or []
                    },
                }
            )
        lanes[lane.label] = {
            "lane_id": lane.pk,
            "status": lane.status,
            "overall_score": document.get("overall_score"),
            "passed": document.get("passed"),
            "validity": document.get("validity"),
            "validity_reason": document.get("validity_reason"),
            "dimensions": {k: (v.get("state"), v.get("mean")) for k, v in (document.get("dimensions") or {}).items()},
            "cases": cases,
        }
    return {"id": run.pk, "status": run.status, "failure_reason": run.failure_reason, "score_status": run.score_status, "lanes": lanes}


def gate_summary(gate: GateResult) -> dict[str, Any]:
    return {"verdict": gate.verdict, "reason_code": gate.reason_code, "summary": gate.summary}


@dataclasses.dataclass
class Setup:
    version: PackVersion
    good: AgentDeployment
    bad: AgentDeployment
    extras: dict[str, Any]
    input_sets: list[Any]


def setup_pack(spec: PackAgents, *, workspace: Any, user: Any) -> Setup:
    """Publish the pack and create the good, bad, judge and simulator deployments."""
    version = pack_publish(workspace=workspace, user=user, source=spec.pack_path.read_text())
    manifest = version.manifest or {}
    good = agent_deployment(workspace, spec, "good")
    bad = agent_deployment(workspace, spec, "bad")
    judges = judge_deployments(workspace, manifest, spec)
    extras = _run_create_extras(judges, simulator_deployment(workspace, spec))
    wanted = spec.data.get("input_sets")
    input_sets = [s for s in version.input_sets.order_by("key") if not wanted or s.key in wanted]
    assert input_sets, f"{spec.slug}: no input set matches {wanted}"
    return Setup(version=version, good=good, bad=bad, extras=extras, input_sets=input_sets)


def race_lanes(spec: PackAgents, *, tasks: Any, workspace: Any, user: Any) -> list[tuple[Lane, Lane]]:
    """Only the races (good vs bad), per input set: (good lane, bad lane)."""
    setup = setup_pack(spec, workspace=workspace, user=user)
    lanes = []
    for input_set in setup.input_sets:
        race = start_run(
            tasks, workspace=workspace, user=user, version=setup.version, deployments=[setup.good, setup.bad],
            input_set=input_set, name=f"{spec.slug}/{input_set.key}: good vs bad", extras=setup.extras,
        )  # fmt: skip
        lanes.append((Lane.objects.get(run=race, deployment=setup.good), Lane.objects.get(run=race, deployment=setup.bad)))
    return lanes


def race_pack(spec: PackAgents, *, tasks: Any, workspace: Any, user: Any) -> list[Race]:
    """Per input set: the race, the good agent again, and the two default-policy gates."""
    setup = setup_pack(spec, workspace=workspace, user=user)
    races = []
    for input_set in setup.input_sets:
        common = {"workspace": workspace, "user": user, "version": setup.version, "input_set": input_set, "extras": setup.extras}
        race = start_run(tasks, deployments=[setup.good, setup.bad], name=f"{spec.slug}/{input_set.key}: good vs bad", **common)
        again = start_run(tasks, deployments=[setup.good], name=f"{spec.slug}/{input_set.key}: good again", **common)
        good_lane = Lane.objects.get(run=race, deployment=setup.good)
        bad_lane = Lane.objects.get(run=race, deployment=setup.bad)
        again_lane = Lane.objects.get(run=again, deployment=setup.good)
        to_bad = comparison_create(
            workspace=workspace, user=None, baseline_run=race, candidate_run=race, baseline_lane=good_lane, candidate_lane=bad_lane
        )
        to_good = comparison_create(
            workspace=workspace, user=None, baseline_run=race, candidate_run=again, baseline_lane=good_lane, candidate_lane=again_lane
        )
        races.append(
            Race(
                input_set=input_set.key,
                race=race,
                again=again,
                good=good_lane,
                bad=bad_lane,
                good_again=again_lane,
                good_to_bad=gate_evaluate(comparison=to_bad, user=None),
                good_to_good=gate_evaluate(comparison=to_good, user=None),
            )
        )
    return races
