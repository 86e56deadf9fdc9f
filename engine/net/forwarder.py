"""The in-sandbox half of sandbox egress: a TCP listener on the sandbox's loopback that relays
every connection, byte for byte, to the host proxy's Unix socket bound into the sandbox.

The sandbox has its own network namespace with only ``lo``, so this relay is the only way out,
and it knows nothing about policy: the host proxy (``engine.net.proxy``) decides. It runs as a
daemon thread inside the sandbox launcher (PID 1), because the launcher kills every other process
after each command. One thread and ``poll`` serve every connection (threads would count
against the sandbox's ``RLIMIT_NPROC``); buffers are bounded and the number of connections is
capped.

:func:`forwarder_source` returns Python source for the launcher to ``exec``: it binds the listener
before returning (so the first command finds it) and starts the relay thread.
"""

from __future__ import annotations

import json

FORWARD_HOST = "127.0.0.1"
FORWARD_PORT = 3128
MAX_FORWARDED_CONNECTIONS = 64
BUFFER_CAP = 256 * 1024

# Runs under the sandbox's system python (``-I -S``): stdlib only, no typing imports needed.
_SOURCE = r"""
import _thread, select, socket

def _egress_forwarder(listen_host, listen_port, target, limit, cap):
    READ, WRITE = select.POLLIN, select.POLLOUT
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((listen_host, listen_port))
    lst.listen(128)
    lst.setblocking(False)
    lst.set_inheritable(False)
    poller = select.poll()
    poller.register(lst.fileno(), READ)
    ends = {}  # fd -> End
    pairs = set()

    class End:
        __slots__ = ("sock", "fd", "peer", "buf", "eof", "shut", "events")

        def __init__(self, sock):
            self.sock, self.fd, self.peer, self.buf, self.eof, self.shut, self.events = sock, sock.fileno(), None, bytearray(), False, False, 0

    def drop(end):
        for e in (end, end.peer):
            if e.events:
                poller.unregister(e.fd)
                e.events = 0
            ends.pop(e.fd, None)
            e.sock.close()
        pairs.discard(end if end in pairs else end.peer)

    def update(e):
        want = (READ if not e.eof and len(e.peer.buf) < cap else 0) | (WRITE if e.buf else 0)
        if want == e.events:
            return
        if not want:
            poller.unregister(e.fd)
        elif not e.events:
            poller.register(e.fd, want)
        else:
            poller.modify(e.fd, want)
        e.events = want

    def settle(e):
        # Half-close a side once everything read from the other side has been written to it.
        for x in (e, e.peer):
            if x.eof and not x.peer.buf and not x.peer.shut:
                x.peer.shut = True
                try:
                    x.peer.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
        if e.eof and e.peer.eof and not e.buf and not e.peer.buf:
            drop(e)
            return
        update(e)
        update(e.peer)

    def accept():
        while True:
            try:
                client, _ = lst.accept()
            except OSError:  # BlockingIOError included: nothing more to accept
                return
            client.set_inheritable(False)
            if len(pairs) >= limit:
                client.close()
                continue
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.set_inheritable(False)
            upstream.settimeout(5)
            try:
                upstream.connect(target)
            except OSError:
                upstream.close()
                client.close()
                continue
            client.setblocking(False)
            upstream.setblocking(False)
            a, b = End(client), End(upstream)
            a.peer, b.peer = b, a
            ends[a.fd], ends[b.fd] = a, b
            pairs.add(a)
            update(a)
            update(b)

    def loop():
        while True:
            for fd, mask in poller.poll():
                if fd == lst.fileno():
                    accept()
                    continue
                e = ends.get(fd)
                if e is None or not e.events:
                    continue
                try:
                    if mask & WRITE and e.buf:
                        sent = e.sock.send(e.buf)
                        del e.buf[:sent]
                    if mask & ~WRITE and not e.eof:  # POLLIN, POLLHUP or POLLERR: recv tells which
                        data = e.sock.recv(65536)
                        if data:
                            e.peer.buf += data
                        else:
                            e.eof = True
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    drop(e)
                    continue
                settle(e)

    _thread.start_new_thread(loop, ())

_egress_forwarder(*__CONFIG__)
"""


def forwarder_source(
    target: str,
    *,
    host: str = FORWARD_HOST,
    port: int = FORWARD_PORT,
    limit: int = MAX_FORWARDED_CONNECTIONS,
    cap: int = BUFFER_CAP,
) -> str:
    """Source for the launcher to ``exec``: listen on ``host:port`` and relay to ``target``."""
    return _SOURCE.replace("__CONFIG__", json.dumps([host, port, target, limit, cap]))
