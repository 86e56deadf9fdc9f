"""What this installation's engine supports, described for the bundle pipeline's warnings.

``bundle`` is pure and may not import ``engine``; packs may import both, so the one description of
"what can run here" that pack warnings use is built here, from the engine's own registries.
"""

from __future__ import annotations

import functools

from bundle import Installation
from engine.modes.adversarial import TOOL_OUTPUT_TOOL
from engine.modes.simulator import SUPPORTED_ACTORS, phase_can_fire
from engine.scoring.metrics import COLLECTORS
from engine.scoring.validators.base import PackError
from engine.scoring.validators.structured import parse_path
from engine.tools import registry


@functools.cache
def bundle_installation() -> Installation:
    return Installation(
        primitives=frozenset(registry.primitives()),
        simulator_actors=frozenset(SUPPORTED_ACTORS),
        simulator_phase_can_fire=phase_can_fire,
        tool_output_tool=TOOL_OUTPUT_TOOL,
        primitive_kinds={name: spec.kind for name, spec in registry.primitives().items()},
        metric_collectors=frozenset(COLLECTORS),
        json_path_error=json_path_error,
    )


def json_path_error(path: str) -> str | None:
    """Why the scorer cannot parse ``path`` (its own parser), or None."""
    try:
        parse_path(path)
    except PackError as exc:
        return str(exc)
    return None
