"""Comparisons of two lanes' scorecards and release-gate verdicts on them (runtime.md §6)."""
