"""CPU per throttled API request: the window counter (``core.throttling``) against DRF's own
history-list throttle, measured in the same run, rounds interleaved.

    .venv/bin/python bench/throttle_bench.py                          # in-memory cache
    CACHE_URL=redis://127.0.0.1:6379/12 .venv/bin/python bench/throttle_bench.py

Each round counts ``--calls`` requests of one user against a budget they stay within (the
common case), with each implementation in turn; printed: median CPU microseconds per request of
each and their ratio (new / DRF). DRF's throttle reads the whole history list, trims it and
writes it back on every request (O(budget) work and bytes); the window counter does one
``add`` and one ``incr``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentclash.settings.test")

import django  # noqa: E402

django.setup()

from django.core.cache import caches  # noqa: E402
from rest_framework import throttling as drf_throttling  # noqa: E402

from core import throttling  # noqa: E402

RATE = "1200/min"


class DrfUserThrottle(drf_throttling.UserRateThrottle):
    rate = RATE


def _request(user_id: int) -> SimpleNamespace:
    user = SimpleNamespace(pk=user_id, is_authenticated=True)
    return SimpleNamespace(user=user, _request=SimpleNamespace(), META={"REMOTE_ADDR": "203.0.113.1"})


def _round(make: object, calls: int, user_id: int) -> float:
    request = _request(user_id)
    start = time.process_time()
    for _ in range(calls):
        throttle = make()  # type: ignore[operator]
        if not throttle.allow_request(request, None):
            raise SystemExit("a bench request was throttled: lower --calls")
    return (time.process_time() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000, help="requests per round (within the 1200/min budget)")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    if throttling.live_rate("user") != RATE:
        raise SystemExit(f"run with the default API_THROTTLE_USER ({RATE}), not {throttling.live_rate('user')}")
    drf, ours = [], []
    base = time.time_ns() % 10**9 * 1000  # fresh user ids each run: nothing to clear (never flush a shared Redis)
    for n in range(args.rounds):
        drf.append(_round(DrfUserThrottle, args.calls, base + 2 * n + 1))
        ours.append(_round(throttling.UserRateThrottle, args.calls, base + 2 * n + 2))
    drf_median, ours_median = statistics.median(drf), statistics.median(ours)
    print(f"cache: {caches['default'].__class__.__name__}; {args.rounds} rounds × {args.calls} requests, CPU µs per request (median)")
    print(f"DRF history-list throttle (baseline): {drf_median:8.1f}")
    print(f"window counter (core.throttling):     {ours_median:8.1f}")
    print(f"ratio window / baseline:              {ours_median / drf_median:8.2f}")


if __name__ == "__main__":
    main()
