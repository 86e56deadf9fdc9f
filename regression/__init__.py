"""Regression suites: failed cases promoted into suites and run again (docs/regression-suites.md)."""
