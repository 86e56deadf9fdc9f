"""Race context: peer standings told to an agent between steps (spec runtime.md §3.6, product R2).

The engine knows nothing of lanes or databases. The worker passes a *standings source*, a function
that returns how the other lanes of the run stand as one line of text ("" when there is nothing to
say), and :class:`RaceContext` decides when the agent hears it, the way the reference does:

- never before step :data:`FIRST_STEP` of a case (so the first call sees only the task);
- then on the first eligible step, whenever the standings changed since the agent last heard them
  (a peer finished a case: ``peer_progress``), and otherwise every :data:`MIN_STEP_GAP` steps
  (``cadence``).

The note is appended to the history as a ``user`` message (the reference's "newswire"), so the
next ``model.call.started`` records it, and a ``race.standings.injected`` event carries the text,
the trigger and an estimate of the tokens it added (scoring keeps those apart from the agent's).
A failing source is logged and skipped: race context must never break a run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from engine.types import JSON

logger = logging.getLogger(__name__)

StandingsSource = Callable[[], str]

FIRST_STEP = 3
MIN_STEP_GAP = 3
TRIGGER_CADENCE = "cadence"
TRIGGER_PEER_PROGRESS = "peer_progress"


def estimate_tokens(text: str) -> int:
    """About four characters a token, as the reference estimates; only for the token split."""
    return (len(text) + 3) // 4 if text else 0


def standings_message(text: str, step: int) -> str:
    return f"Race context (your step {step}): {text}"


class RaceContext:
    def __init__(self, source: StandingsSource, *, first_step: int = FIRST_STEP, min_step_gap: int = MIN_STEP_GAP) -> None:
        self._source = source
        self.first_step = max(1, first_step)
        self.min_step_gap = max(1, min_step_gap)
        self._last_step = 0
        self._last_text = ""

    def _standings(self) -> str:
        try:
            text = self._source()
        except Exception:
            logger.exception("race context: the standings source failed; skipping this step")
            return ""
        return text.strip() if isinstance(text, str) else ""

    def due(self, step: int) -> tuple[str, dict[str, JSON]] | None:
        """The note to append before this step's model call and its event payload, or None."""
        if step < self.first_step:
            return None
        text = self._standings()
        if not text:
            return None
        if self._last_step == 0:
            trigger = TRIGGER_CADENCE
        elif text != self._last_text:
            trigger = TRIGGER_PEER_PROGRESS
        elif step - self._last_step >= self.min_step_gap:
            trigger = TRIGGER_CADENCE
        else:
            return None
        self._last_step, self._last_text = step, text
        message = standings_message(text, step)
        tokens = estimate_tokens(message)
        payload: dict[str, JSON] = {
            "tokens_added": tokens,
            "tokens": tokens,  # the key engine.scoring.evidence reads
            "standings_snapshot": message,
            "triggered_by": trigger,
            "self_step_index": step,
            "min_step_gap": self.min_step_gap,
        }
        return message, payload
