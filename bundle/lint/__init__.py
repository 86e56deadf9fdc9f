"""Warnings: constructs that validate but probably do not do what the author meant.

Validation (``bundle.validate``) decides whether a bundle is valid; this package never does. It
finds legal but useless or surprising constructs and says what will happen at run time, as
``(path, message)`` pairs in the same field-path syntax as errors. Some checks depend on what the
running installation supports (its primitives, simulator actors, the tool that delivers
``tool-output`` secrets); the Django side describes that in an :class:`Installation` built from
the engine (``packs/installation.py``). Without one, those checks are skipped.

One module per area, like ``validate/``: tools, simulator, scoring, security, run time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from bundle.lint.run_time import lint_run_time, lint_sandbox_template
from bundle.lint.scoring import lint_scoring
from bundle.lint.security import lint_security
from bundle.lint.simulator import lint_simulators
from bundle.lint.tools import lint_tool_assertions, lint_tools
from bundle.validate.common import Report

PhaseCanFire = Callable[[dict[str, Any], int], bool]


@dataclasses.dataclass(frozen=True, slots=True)
class Installation:
    """What this installation can run, as far as pack warnings need to know.

    ``primitives``: engine primitive names a composed tool may delegate to.
    ``simulator_actors``: user-simulator actor types the engine can drive.
    ``simulator_phase_can_fire(phase, index)``: whether a phase can start in an unattended run.
    ``tool_output_tool``: the mock tool the engine adds to deliver ``tool-output`` planted secrets.
    ``primitive_kinds``: each primitive's kind (``always``, ``shell``, ``file``…), to tell which ones
    a pack's tool policy enables; empty skips the checks that need it.
    ``metric_collectors``: the metric collectors the scorer has; empty skips the check.
    ``sandbox_templates()``: the ids of the operator's sandbox templates, asked only of packs that name
    one (it reads the database); None skips the check.
    ``json_path_error(path)``: why the scorer cannot parse a JSON path, or None; a bad path is then
    a validation *error* (``bundle/validate/json_paths.py``); None skips the check.
    """

    primitives: frozenset[str]
    simulator_actors: frozenset[str]
    simulator_phase_can_fire: PhaseCanFire
    tool_output_tool: str
    primitive_kinds: Mapping[str, str] = dataclasses.field(default_factory=dict)
    metric_collectors: frozenset[str] = frozenset()
    sandbox_templates: Callable[[], frozenset[str]] | None = None
    json_path_error: Callable[[str], str | None] | None = None


def lint_bundle(bundle: dict[str, Any], installation: Installation | None) -> list[tuple[str, str]]:
    report = Report()
    primitives = installation.primitives if installation is not None else None
    hidden = lint_tools(bundle, primitives, report)
    lint_tool_assertions(bundle, primitives, hidden, report)
    if installation is not None:
        lint_simulators(bundle, installation.simulator_actors, installation.simulator_phase_can_fire, report)
    lint_scoring(bundle, report)
    lint_security(bundle, installation.tool_output_tool if installation is not None else None, report)
    if installation is not None:
        lint_run_time(bundle, installation.primitive_kinds, installation.metric_collectors, report)
        if installation.sandbox_templates is not None:
            lint_sandbox_template(bundle, installation.sandbox_templates, report)
    else:
        lint_run_time(bundle, {}, frozenset(), report)
    return report.items


__all__ = ["Installation", "PhaseCanFire", "lint_bundle"]
