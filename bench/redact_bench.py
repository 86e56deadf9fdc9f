"""Redaction benchmark (not a test): the cost of redacting a 32 KB payload with 5 secrets.

Compares today's ``engine.redact`` with the baseline before obfuscated forms were added (the
version of ``engine/redact.py`` at commit ``BASELINE``, read through git) and prints µs per call
and the ratio:

(a) ``Redactor.text`` of 32 KB of text that holds no secret (the common case)
(b) ``Redactor.json`` of a 32 KB event-like payload (many small fields plus one long one)
(c) the same payload with every secret in it, raw (both versions catch these)
(d) today only: the payload with the secrets hex/reversed/spaced/JSON-escaped/base32 (what the
    baseline missed), and the run event sink's per-event cost (``StreamRedactor.payload``)

Run: .venv/bin/python bench/redact_bench.py
"""

from __future__ import annotations

import base64
import functools
import os
import random
import string
import subprocess
import sys
import time
import types
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from engine import redact as current  # noqa: E402

BASELINE = "4452a45"
SIZE = 32 * 1024


def baseline_module() -> types.ModuleType | None:
    try:
        source = subprocess.run(
            ["git", "show", f"{BASELINE}:engine/redact.py"], cwd=ROOT, capture_output=True, check=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("redact_baseline")
    exec(compile(source, "redact_baseline.py", "exec"), module.__dict__)
    return module


def per_call(fn: Callable[[], Any], repeats: int = 7, seconds: float = 0.2) -> float:
    """Best of ``repeats`` runs of ~``seconds`` each (the machine may be busy with other work)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            fn()
            n += 1
        best = min(best, (time.perf_counter() - start) / n)
    return best


def text_of(rng: random.Random, size: int) -> str:
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9))) for _ in range(400)]
    parts: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(words) + rng.choice([" ", " ", " ", ", ", ". ", "\n", ": ", '"'])
        parts.append(word)
        total += len(word)
    return "".join(parts)[:size]


def payload_of(rng: random.Random, inserts: list[str]) -> dict[str, Any]:
    fields = {f"field_{i}": text_of(rng, 40) for i in range(64)}
    long = text_of(rng, SIZE - 64 * 40)
    for item in inserts:
        at = rng.randrange(len(long))
        long = long[:at] + " " + item + " " + long[at:]
    return {"tool_call_id": "call_1", "tool_name": "http_request", "arguments": fields, "result": {"content": long, "is_error": False}}


def main() -> int:
    rng = random.Random(7)
    secrets = ["".join(rng.choice(string.ascii_letters + string.digits) for _ in range(32)) for _ in range(5)]
    clean_text = text_of(rng, SIZE)
    clean = payload_of(rng, [])
    raw = payload_of(rng, secrets)
    obfuscated = payload_of(
        rng,
        [s.encode().hex() for s in secrets[:1]]
        + [s[::-1] for s in secrets[1:2]]
        + [" ".join(s) for s in secrets[2:3]]
        + ["".join(f"\\u{ord(c):04x}" for c in s) for s in secrets[3:4]]
        + [base64.b32encode(s.encode()).decode() for s in secrets[4:]],
    )
    now = current.Redactor(secrets)
    base = baseline_module()
    old = base.Redactor(secrets) if base is not None else None

    rows: list[tuple[str, Callable[[Any], Any]]] = [
        ("(a) text, 32 KB, no secret", lambda r: r.text(clean_text)),
        ("(b) json payload, no secret", lambda r: r.json(clean)),
        ("(c) json payload, 5 raw secrets", lambda r: r.json(raw)),
    ]
    print(f"redaction of {SIZE // 1024} KB with {len(secrets)} secrets (µs per call; baseline = engine/redact.py at {BASELINE})")
    print(f"{'':34} {'baseline':>10} {'now':>10} {'ratio':>7}")
    for label, fn in rows:
        t_now = per_call(functools.partial(fn, now))
        if old is not None:
            t_old = per_call(functools.partial(fn, old))
            print(f"{label:34} {t_old * 1e6:10.0f} {t_now * 1e6:10.0f} {t_now / t_old:6.2f}x")
        else:
            print(f"{label:34} {'n/a':>10} {t_now * 1e6:10.0f}")
    leaked = [s for s in secrets if s in str(now.json(obfuscated)) or s.encode().hex() in str(now.json(obfuscated))]
    t_obf = per_call(lambda: now.json(obfuscated))
    missed = "n/a" if old is None else sum(1 for s in secrets if _visible(old.json(obfuscated), s))
    print(f"{'(d) json payload, 5 obfuscated':34} {'':>10} {t_obf * 1e6:10.0f}   baseline left {missed}/5 visible, now {len(leaked)}/5")
    stream = current.StreamRedactor(now)
    t_stream = per_call(lambda: stream.payload("tool.call.completed", clean))
    print(f"{'(e) event sink, per 32 KB event':34} {'':>10} {t_stream * 1e6:10.0f}")
    return 0


def _visible(payload: Any, secret: str) -> bool:
    text = str(payload)
    forms = [secret.encode().hex(), secret[::-1], " ".join(secret), "".join(f"\\u{ord(c):04x}" for c in secret)]
    forms.append(base64.b32encode(secret.encode()).decode())
    return any(f in text or f.replace("\\", "\\\\") in text for f in forms)


if __name__ == "__main__":
    raise SystemExit(main())
