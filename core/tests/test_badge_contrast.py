"""Status badges are readable in both colour schemes (issue 25: light badges at 4.07:1): the text
colour of every badge against its background reaches WCAG AA for small text, 4.5:1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CSS = (Path(__file__).resolve().parents[2] / "static" / "css" / "app.css").read_text(encoding="utf-8")


def _variables(block: str) -> dict[str, str]:
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})", block))


LIGHT = _variables(CSS.split("@media (prefers-color-scheme: dark)")[0])
DARK = {**LIGHT, **_variables(CSS.split("@media (prefers-color-scheme: dark)")[1].split("}")[0])}
# Every ".badge…" rule that sets a background and a colour from variables.
BADGES = re.findall(r"(\.badge[^{]*)\{[^}]*background:\s*var\(--([\w-]+)\);\s*color:\s*var\(--([\w-]+)\)", CSS)


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_the_badge_rules_are_found():
    assert len(BADGES) >= 8 and any("badge-pass" in selector for selector, _, _ in BADGES)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_badge_reaches_4_5_to_1(scheme):
    palette = LIGHT if scheme == "light" else DARK
    low = {
        selector.strip(): round(_contrast(palette[fg], palette[bg]), 2)
        for selector, bg, fg in BADGES
        if _contrast(palette[fg], palette[bg]) < 4.5
    }
    assert low == {}
