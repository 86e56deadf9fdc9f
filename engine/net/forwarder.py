"""The in-sandbox half of sandbox egress: where the relay listens and how many connections it serves.

The sandbox has its own network namespace with only ``lo``, so the relay is the only way out,
and it knows nothing about policy: the host proxy (``engine.net.proxy``) decides. The relay is a
thread of the native launcher, the sandbox's PID 1 (``engine/sandbox/launcher.c``, the ``egress=``
argument that ``bwrap.native_command`` builds from these constants): it listens on
``FORWARD_HOST:FORWARD_PORT`` and copies every connection, byte for byte, to the host proxy's
Unix socket bound into the sandbox, at most ``MAX_FORWARDED_CONNECTIONS`` at once
(docs/engine-safety.md "The native launcher").
"""

from __future__ import annotations

FORWARD_HOST = "127.0.0.1"
FORWARD_PORT = 3128
MAX_FORWARDED_CONNECTIONS = 64  # launcher.c's RELAY_MAX is the most it accepts
