"""Execution modes and the worker's entry point, :func:`run_case`.

``from engine.modes import run_case, CaseRequest, CaseOutcome``. The mode modules are imported
inside :func:`run_case` because they import :mod:`engine.loop`, which imports this package.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from engine.modes.adversarial import with_planted_tool_output
from engine.modes.case import (
    MULTI_TURN,
    NATIVE,
    PROMPT_EVAL,
    RESPONSES,
    CaseOutcome,
    CaseRequest,
    Limits,
)
from engine.modes.race import StandingsSource
from engine.modes.simulator import llm_phases, unsupported_simulator_actors, unsupported_simulator_phases
from engine.types import JSON, CancelCheck, EventSink, Provider

__all__ = [
    "CaseOutcome",
    "CaseRequest",
    "Limits",
    "llm_phases",
    "run_case",
    "unsupported_simulator_actors",
    "unsupported_simulator_phases",
]


def run_case(
    request: CaseRequest,
    *,
    provider: Provider,
    toolset: Any,
    event_sink: EventSink,
    cancel_check: CancelCheck,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    simulator: Provider | None = None,
    standings: StandingsSource | None = None,
) -> CaseOutcome:
    """Run one case in its execution mode. Never raises for provider or tool problems.

    ``toolset`` is unused by ``prompt_eval`` (pass ``None``). ``simulator`` answers ``multi_turn``
    ``llm`` user-simulator phases (``request.simulator_model`` is its model). An unknown execution
    mode returns a failed outcome with a ``unsupported_capability`` provider failure. ``responses``
    runs the native loop; the caller builds its provider for the Responses API. ``standings``
    turns on race context (engine/modes/race.py) for the loop-driven modes.
    """
    mode = (request.execution_mode or NATIVE).strip()
    toolset = with_planted_tool_output(toolset, request.manifest)  # security packs' tool-output secrets
    if mode == PROMPT_EVAL:
        from engine.modes.prompt_eval import run_prompt_eval

        return run_prompt_eval(request, provider=provider, event_sink=event_sink, cancel_check=cancel_check, clock=clock)
    # The loop-driven modes take the same arguments; multi_turn also takes the user simulator.
    loop_args: dict[str, Any] = dict(
        provider=provider, toolset=toolset, event_sink=event_sink, cancel_check=cancel_check, clock=clock, sleep=sleep, standings=standings
    )
    if mode in (NATIVE, RESPONSES):
        from engine.loop import run_native

        return run_native(request, **loop_args)
    if mode == MULTI_TURN:
        from engine.modes.multi_turn import run_multi_turn

        return run_multi_turn(request, simulator=simulator, **loop_args)
    from engine.events import SOURCE_NATIVE
    from engine.loop import LoopResult, finish, make_emitter
    from engine.modes import case as c
    from engine.types import Usage

    message = f"execution mode {mode!r} is not supported yet"
    failure: dict[str, JSON] = {
        "provider_key": provider.provider_key,
        "code": "unsupported_capability",
        "retryable": False,
        "message": message,
    }
    emitter = make_emitter(request, event_sink, SOURCE_NATIVE)
    return finish(
        emitter,
        LoopResult(c.STOP_PROVIDER_ERROR, error=message, provider_failure=failure),
        step_count=0,
        tool_call_count=0,
        usage=Usage(),
        duration_ms=0,
    )
