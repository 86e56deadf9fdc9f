"""Host-side egress proxy of one sandbox: HTTP forward proxy and CONNECT tunnels on a Unix socket.

A sandbox has its own network namespace with only ``lo``. When its pack allows network, the
sandbox directory gets a Unix socket served by an :class:`EgressProxy` (threads in the worker
process, living as long as the sandbox); the socket's directory is bound into the sandbox and an
in-sandbox relay (a thread of the native launcher, the sandbox's PID 1; its port and connection
cap are in :mod:`engine.net.forwarder`) exposes it as ``127.0.0.1:3128``, which
``HTTP_PROXY``/``HTTPS_PROXY`` point at. Raw TCP to anything else has no route.

For every connection the proxy reads one bounded request head (CONNECT ``host:port`` or an
absolute ``http://`` URL), applies the same :class:`~engine.net.guard.EgressPolicy` as
``http_request`` (resolve once, refuse if any answer is refused, connect to the checked address),
and reports an :class:`EgressAttempt` — allowed or denied, with host, port, method and reason —
to ``on_attempt``. ``on_attempt`` is called from proxy threads: it must be quick and thread-safe.

Content inspection (issue 23): with an ``inspector``, the proxy keeps what the client sends on an
allowed connection — the request line, headers and body of a forwarded request, the raw bytes of
a CONNECT tunnel — up to ``max_inspected_bytes``, and at the connection's end hands it to the
inspector (the security scanner's leak matcher and the workspace secrets, built by the caller) and
reports an :class:`EgressContent`: how many bytes were inspected, what could not be (``tls`` when
a tunnel carries a TLS handshake, ``over_limit`` past the cap) and the names that matched. It
detects, it does not block: the bytes were relayed as they came.

DoS bounds: at most ``max_connections`` concurrent connections and ``max_attempts`` attempts per
proxy, a request head of at most ``max_header_bytes`` read within ``header_timeout``, upstream
connect within ``connect_timeout``, tunnels closed after ``idle_timeout`` without traffic.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import os
import re
import select
import socket
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable

from engine.events import SANDBOX_EGRESS_ATTEMPTED, SANDBOX_EGRESS_DENIED, SANDBOX_EGRESS_INSPECTED, SOURCE_NATIVE
from engine.net import guard
from engine.net.forwarder import FORWARD_HOST, FORWARD_PORT
from engine.net.vault_mock import VaultMock
from engine.types import JSON, Event, EventSink

log = logging.getLogger(__name__)

SOCKET_NAME = "proxy.sock"
SANDBOX_SOCKET_DIR = "/run/agentclash-egress"  # where the socket's directory appears in the sandbox
SANDBOX_SOCKET = f"{SANDBOX_SOCKET_DIR}/{SOCKET_NAME}"

MAX_HEADER_BYTES = 16 * 1024
HEADER_TIMEOUT = 10.0
CONNECT_TIMEOUT = 10.0
IDLE_TIMEOUT = 120.0
MAX_CONNECTIONS = 32
MAX_ATTEMPTS = 4096
_CHUNK = 64 * 1024

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_HOSTNAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,252})\Z")
_HOP_BY_HOP = frozenset("connection proxy-connection keep-alive proxy-authorization proxy-authenticate te trailer upgrade host".split())
_REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 431: "Request Header Fields Too Large"}
_REASONS |= {502: "Bad Gateway", 503: "Service Unavailable"}

MAX_INSPECTED_BYTES = 1024 * 1024
_TLS_HANDSHAKE = 0x16  # the first byte of a TLS record carrying a ClientHello

# What the inspector was given (request bytes) to the names of what it found in them.
Inspector = Callable[["InspectedRequest"], tuple[str, ...]]
AttemptCallback = Callable[["EgressAttempt | EgressContent"], None]


def proxy_env(host: str = FORWARD_HOST, port: int = FORWARD_PORT) -> dict[str, str]:
    """Environment that points common clients (curl, pip, git, urllib, requests, npm) at the relay."""
    url = f"http://{host}:{port}"
    no_proxy = "localhost,127.0.0.1,::1"
    return {
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "http_proxy": url,
        "https_proxy": url,
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
    }


@dataclasses.dataclass(frozen=True, slots=True)
class EgressAttempt:
    """One connection through the proxy. ``reason`` is ``allowed``, ``upstream_unreachable`` (allowed
    but the connect failed) or a refusal code (``not_allowlisted``, ``loopback``, ``metadata``…)."""

    host: str
    port: int
    method: str
    allowed: bool
    reason: str
    address: str = ""
    at: float = dataclasses.field(default_factory=time.time)
    via: str = "sandbox_proxy"  # or http_request: each hop the guard checked, redirects included
    vault_secrets: tuple[str, ...] = ()  # names the mock vault returned (vault_mock.py); never values

    def payload(self) -> dict[str, JSON]:
        extra: dict[str, JSON] = {"vault_secrets": list(self.vault_secrets)} if self.reason == "vault_mock" else {}
        return extra | {
            "host": self.host,
            "port": self.port,
            "method": self.method,
            "decision": "allowed" if self.allowed else "denied",
            "reason": self.reason,
            "address": self.address,
            "via": self.via,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class InspectedRequest:
    """The bytes a client sent on one allowed connection, and where they went."""

    host: str
    port: int
    method: str
    data: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class EgressContent:
    """The content inspection of one allowed connection (reported when it ends).

    ``uninspected`` says why part of it was not read (``tls``: a tunnel's TLS handshake, the rest
    encrypted; ``over_limit``: past ``max_inspected_bytes``; ``inspector_failed``); ``leaked``
    the names the inspector matched (never values)."""

    host: str
    port: int
    method: str
    address: str
    inspected_bytes: int
    uninspected: str
    leaked: tuple[str, ...]
    at: float = dataclasses.field(default_factory=time.time)

    def payload(self) -> dict[str, JSON]:
        return {
            "host": self.host,
            "port": self.port,
            "method": self.method,
            "address": self.address,
            "inspected_bytes": self.inspected_bytes,
            "uninspected": self.uninspected,
            "leaked": list(self.leaked),
            "via": "sandbox_proxy",
        }


class _Capture:
    """What a client sends on one connection, kept for inspection up to a cap."""

    __slots__ = ("buf", "limit", "uninspected")

    def __init__(self, limit: int) -> None:
        self.buf = bytearray()
        self.limit = limit
        self.uninspected = ""

    def add(self, data: bytes, *, tunnel_start: bool = False) -> None:
        if self.uninspected or not data:
            return
        if tunnel_start and data[0] == _TLS_HANDSHAKE:
            self.uninspected = "tls"
            return
        room = self.limit - len(self.buf)
        if len(data) > room:
            self.buf += data[: max(room, 0)]
            self.uninspected = "over_limit"
            return
        self.buf += data


def _timestamp(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d}Z"


def content_event(content: EgressContent, *, lane_id: str = "", case_key: str = "", redact: Callable[[str], str] = str) -> Event:
    """The ``sandbox.egress.inspected`` event of one inspected connection."""
    payload = content.payload()
    payload["host"] = redact(content.host)
    return Event(
        event_id=f"native:{lane_id}:{SANDBOX_EGRESS_INSPECTED}:{uuid.uuid4().hex[:12]}",
        event_type=SANDBOX_EGRESS_INSPECTED,
        source=SOURCE_NATIVE,
        occurred_at=_timestamp(content.at),
        payload=payload,
        case_key=case_key,
        summary={"status": "leaked" if content.leaked else "inspected", **({"case_key": case_key} if case_key else {})},
    )


def egress_event(attempt: EgressAttempt, *, lane_id: str = "", case_key: str = "", redact: Callable[[str], str] = str) -> Event:
    """The engine event for one attempt (``sandbox.egress.attempted`` / ``sandbox.egress.denied``).

    The host goes through ``redact``: a secret can be smuggled out as a DNS label."""
    event_type = SANDBOX_EGRESS_ATTEMPTED if attempt.allowed else SANDBOX_EGRESS_DENIED
    payload: dict[str, JSON] = dict(attempt.payload())
    payload["host"] = redact(attempt.host)
    occurred = _timestamp(attempt.at)
    return Event(
        event_id=f"native:{lane_id}:{event_type}:{uuid.uuid4().hex[:12]}",
        event_type=event_type,
        source=SOURCE_NATIVE,
        occurred_at=occurred,
        payload=payload,
        case_key=case_key,
        summary={"status": payload["decision"], **({"case_key": case_key} if case_key else {})},
    )


def egress_listener(
    sink: EventSink, *, lane_id: str = "", case_key: str = "", redact: Callable[[str], str] = str
) -> Callable[[EgressAttempt | EgressContent], None]:
    """A ``LocalSandbox.egress_listener`` that emits every attempt (and inspection) to ``sink``."""

    def listen(attempt: EgressAttempt | EgressContent) -> None:
        if isinstance(attempt, EgressContent):
            sink(content_event(attempt, lane_id=lane_id, case_key=case_key, redact=redact))
        else:
            sink(egress_event(attempt, lane_id=lane_id, case_key=case_key, redact=redact))

    return listen


class ProxyRequestError(Exception):
    def __init__(self, status: int, reason: str, host: str = "", port: int = 0, method: str = ""):
        super().__init__(reason)
        self.status, self.reason = status, reason
        self.host, self.port, self.method = host, port, method


@dataclasses.dataclass(slots=True)
class ProxyRequest:
    method: str
    host: str  # as written by the client, lower-cased, without brackets
    port: int
    version: str
    path: str = ""  # origin-form for forwarded requests; empty for CONNECT
    headers: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == 80 and self.method != "CONNECT" else f"{host}:{self.port}"

    def origin_head(self) -> bytes:
        """The request head to send upstream: origin-form target, hop-by-hop headers removed,
        ``Host`` set from the URL and ``Connection: close``."""
        listed = {token.strip().lower() for name, value in self.headers if name.lower() == "connection" for token in value.split(",")}
        lines = [f"{self.method} {self.path} {self.version}", f"Host: {self.authority}"]
        lines += [f"{name}: {value}" for name, value in self.headers if name.lower() not in _HOP_BY_HOP and name.lower() not in listed]
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _check_host(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or (guard.parse_ip_literal(host) is None and not _HOSTNAME.match(host)):
        raise ProxyRequestError(400, "bad_host")
    return host


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ProxyRequestError(400, "bad_port")
    return int(text)


def parse_request_head(head: bytes) -> ProxyRequest:
    """Parse one proxy request head (without the final CRLFCRLF). Raises ProxyRequestError."""
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        raise ProxyRequestError(400, "bad_request") from None
    lines = text.split("\r\n")
    if any("\r" in line or "\n" in line or "\x00" in line for line in lines):
        raise ProxyRequestError(400, "bad_request")  # bare CR/LF: a smuggling vector, refuse
    parts = lines[0].split(" ")
    if len(parts) != 3 or not _TOKEN.match(parts[0]) or parts[2] not in ("HTTP/1.0", "HTTP/1.1"):
        raise ProxyRequestError(400, "bad_request")
    method, target, version = parts
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.match(name):
            raise ProxyRequestError(400, "bad_request")  # also refuses obs-fold continuation lines
        headers.append((name, value.strip()))
    if method == "CONNECT":
        host_text, sep, port_text = target.rpartition(":")
        if not sep:
            raise ProxyRequestError(400, "bad_request", method=method)
        return ProxyRequest(method, _check_host(host_text), _port(port_text), version, "", headers)
    lowered = target[:8].lower()
    if lowered.startswith("https://"):
        raise ProxyRequestError(400, "https_requires_connect", method=method)
    if not lowered.startswith("http://"):
        raise ProxyRequestError(400, "not_a_proxy_request", method=method)
    parts_ = urllib.parse.urlsplit(target)
    if "@" in parts_.netloc:
        raise ProxyRequestError(400, "credentials_in_url", method=method)
    host = _check_host(parts_.hostname or "")
    try:
        port = parts_.port or 80
    except ValueError:
        raise ProxyRequestError(400, "bad_port", host=host, method=method) from None
    path = (parts_.path or "/") + (f"?{parts_.query}" if parts_.query else "")
    return ProxyRequest(method, host, port, version, path, headers)


def _response(status: int, message: str) -> bytes:
    body = (message + "\n").encode()
    head = f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    return (head + "Connection: close\r\n\r\n").encode() + body


class EgressProxy:
    """Serve one sandbox's egress on ``<socket_dir>/proxy.sock`` until :meth:`close`."""

    def __init__(
        self,
        socket_dir: str,
        policy: guard.EgressPolicy,
        on_attempt: AttemptCallback | None = None,
        *,
        resolver: guard.Resolver | None = None,
        uid: int | None = None,
        max_connections: int = MAX_CONNECTIONS,
        max_attempts: int = MAX_ATTEMPTS,
        max_header_bytes: int = MAX_HEADER_BYTES,
        header_timeout: float = HEADER_TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
        idle_timeout: float = IDLE_TIMEOUT,
        inspector: Inspector | None = None,
        max_inspected_bytes: int = MAX_INSPECTED_BYTES,
        vault: VaultMock | None = None,
    ) -> None:
        self.vault = vault  # answered here, before policy and DNS (vault_mock.py)
        self.socket_dir = socket_dir
        self.socket_path = os.path.join(socket_dir, SOCKET_NAME)
        self.policy = policy
        self.on_attempt = on_attempt
        self.resolver = resolver
        self.uid = uid
        self.max_connections = max_connections
        self.max_attempts = max_attempts
        self.max_header_bytes = max_header_bytes
        self.header_timeout = header_timeout
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.inspector = inspector
        self.max_inspected_bytes = max_inspected_bytes
        self._lock = threading.Condition()
        self._active: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._pending = 0  # connections whose decision is not recorded yet
        self._inspecting = 0  # allowed connections whose content report is not recorded yet
        self._attempts = 0
        self._closed = False
        self._listener: socket.socket | None = None
        self._wake_r, self._wake_w = -1, -1
        self._accept_thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> EgressProxy:
        os.makedirs(self.socket_dir, mode=0o711, exist_ok=True)
        os.chmod(self.socket_dir, 0o711)  # noqa: S103 - traversable for bwrap (sandbox uid), not listable
        dfd = os.open(self.socket_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                os.unlink(SOCKET_NAME, dir_fd=dfd)
            except FileNotFoundError:
                pass
            # Through the directory fd: a long SANDBOX_ROOT never hits the 108-byte sun_path limit.
            listener.bind(f"/proc/self/fd/{dfd}/{SOCKET_NAME}")
            os.chmod(SOCKET_NAME, 0o600, dir_fd=dfd)
            if self.uid is not None:
                os.chown(SOCKET_NAME, self.uid, self.uid, dir_fd=dfd, follow_symlinks=False)
            listener.listen(64)
        except BaseException:
            listener.close()
            raise
        finally:
            os.close(dfd)
        self._listener = listener
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._accept_thread = threading.Thread(target=self._accept_loop, name="egress-proxy", daemon=True)
        self._accept_thread.start()
        return self

    def close(self) -> None:
        """Stop accepting, cut every tunnel, and wait (briefly) for the threads."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            active = list(self._active)
            threads = list(self._threads)
            self._lock.notify_all()
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass
        for sock in active:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + 2.0  # a thread stuck in getaddrinfo cannot be interrupted
        for thread in [t for t in (self._accept_thread, *threads) if t is not None]:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1
        try:
            os.unlink(self.socket_path)
        except OSError:
            pass

    def settle(self, timeout: float = 0.2) -> None:
        """Wait until every connection accepted so far has its decision (and, when inspected, its
        content report) recorded (bounded: a tunnel still open reports at the next settle)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while (self._pending or self._inspecting) and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self._lock.wait(remaining)

    # ------------------------------------------------------------------ accept
    def _accept_loop(self) -> None:
        assert self._listener is not None
        listener = self._listener
        poller = select.poll()
        poller.register(listener.fileno(), select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        try:
            while not self._closed:
                events = poller.poll()
                if any(fd == self._wake_r for fd, _ in events) or self._closed:
                    return
                try:
                    client, _ = listener.accept()
                except OSError:
                    continue
                self._admit(client)
        finally:
            listener.close()

    def _admit(self, client: socket.socket) -> None:
        with self._lock:
            refusal = ""
            if self._closed:
                refusal = "closed"
            elif self._attempts >= self.max_attempts:
                refusal = "attempt_limit"
            elif len(self._threads) >= self.max_connections:
                refusal = "connection_limit"
            self._attempts += 1
            record = refusal != "closed" and self._attempts <= self.max_attempts + 1
            if not refusal:
                self._active.add(client)
                self._pending += 1
                thread = threading.Thread(target=self._serve, args=(client,), name="egress-proxy-conn", daemon=True)
                self._threads.add(thread)
        if refusal:
            if record:
                self._record(EgressAttempt("", 0, "", False, refusal))
            client.setblocking(False)
            try:  # best effort, never blocking the accept loop
                client.send(_response(503, f"egress refused: {refusal}"))
                client.shutdown(socket.SHUT_WR)
                client.recv(_CHUNK)  # once: what the client already sent, so closing does not reset
            except OSError:
                pass
            client.close()
            return
        thread.start()

    # ------------------------------------------------------------------ one connection
    def _record(self, attempt: EgressAttempt | EgressContent) -> None:
        if self.on_attempt is None:
            return
        try:
            self.on_attempt(attempt)
        except Exception:
            log.exception("egress attempt callback failed")

    def _decided(self) -> None:
        with self._lock:
            self._pending -= 1
            self._lock.notify_all()

    def _read_head(self, client: socket.socket) -> tuple[bytes, bytes]:
        deadline = time.monotonic() + self.header_timeout
        buf = bytearray()
        while True:
            end = buf.find(b"\r\n\r\n")
            if end >= 0:
                if end > self.max_header_bytes:
                    raise ProxyRequestError(431, "header_too_large")
                return bytes(buf[:end]), bytes(buf[end + 4 :])
            if len(buf) > self.max_header_bytes + 3:
                raise ProxyRequestError(431, "header_too_large")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProxyRequestError(408, "header_timeout")
            client.settimeout(remaining)
            try:
                chunk = client.recv(4096)
            except TimeoutError:
                raise ProxyRequestError(408, "header_timeout") from None
            if not chunk:
                raise ProxyRequestError(400, "closed_before_request")
            buf += chunk

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        decided = False
        try:
            got = self._request(client)
            if got is None or self._answer_vault(client, got[0]):
                decided = True  # refused, closed or answered by the mock vault: recorded already
                return
            request, rest = got
            try:
                ip = guard.resolve_destination(request.host, request.port, self.policy, self.resolver)
            except guard.NetworkPolicyError as exc:
                decided = True
                self._decided_with(EgressAttempt(request.host, request.port, request.method, False, exc.reason or "refused"))
                self._send(client, _response(403, f"egress denied: {exc.reason or 'refused'}"))
                return
            connect_ip = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip
            upstream = socket.socket(socket.AF_INET6 if connect_ip.version == 6 else socket.AF_INET, socket.SOCK_STREAM)
            with self._lock:
                if self._closed:
                    return
                self._active.add(upstream)
            upstream.settimeout(self.connect_timeout)
            try:
                upstream.connect((str(connect_ip), request.port))
            except OSError:
                decided = True
                self._decided_with(EgressAttempt(request.host, request.port, request.method, True, "upstream_unreachable", str(ip)))
                self._send(client, _response(502, "egress upstream unreachable"))
                return
            decided = True
            self._decided_with(EgressAttempt(request.host, request.port, request.method, True, "allowed", str(ip)))
            self._forward(client, upstream, request, rest, str(ip))
        except OSError:
            pass
        except Exception:
            log.exception("egress proxy connection failed")
        finally:
            if not decided:
                self._decided()
            with self._lock:
                self._active.discard(client)
                if upstream is not None:
                    self._active.discard(upstream)
                self._threads.discard(threading.current_thread())
            for sock in (client, upstream):
                if sock is not None:
                    sock.close()

    def _request(self, client: socket.socket) -> tuple[ProxyRequest, bytes] | None:
        """The request head and what followed it, or None when it was refused (answered and recorded)
        or the client went away."""
        try:
            head, rest = self._read_head(client)
            return parse_request_head(head), rest
        except ProxyRequestError as exc:
            if exc.reason == "closed_before_request":  # a connect-and-close is no attempt
                self._decided()
                return None
            self._decided_with(EgressAttempt(exc.host, exc.port, exc.method, False, exc.reason))
            self._send(client, _response(exc.status, f"egress refused: {exc.reason}"))
            return None
        except OSError:
            self._decided()
            return None

    def _answer_vault(self, client: socket.socket, request: ProxyRequest) -> bool:
        """Answer a request for the mock vault here (vault_mock.py); False for any other request."""
        if self.vault is None or not self.vault.handles(request.host, request.port, request.method):
            return False
        answer = self.vault.answer(request.method, request.path, request.headers)
        self._decided_with(EgressAttempt(request.host, request.port, request.method, True, "vault_mock", vault_secrets=answer.secrets_read))
        self._send(client, answer.http())
        return True

    def _decided_with(self, attempt: EgressAttempt) -> None:
        try:
            self._record(attempt)
        finally:
            self._decided()

    def _send(self, client: socket.socket, data: bytes) -> None:
        """Send a final response, then half-close and discard what the client still sends (briefly),
        so closing does not reset the connection before the client has read the response."""
        try:
            client.settimeout(2)
            client.sendall(data)
            client.shutdown(socket.SHUT_WR)
            deadline, drained = time.monotonic() + 1.0, 0
            while drained < 1 << 20 and (remaining := deadline - time.monotonic()) > 0:
                client.settimeout(remaining)
                chunk = client.recv(_CHUNK)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError:
            pass

    def _forward(self, client: socket.socket, upstream: socket.socket, request: ProxyRequest, rest: bytes, address: str) -> None:
        """Relay an allowed connection, capturing what the client sends when there is an inspector."""
        capture = _Capture(self.max_inspected_bytes) if self.inspector is not None else None
        if capture is not None:
            with self._lock:
                self._inspecting += 1
        try:
            upstream.settimeout(self.idle_timeout)
            client.settimeout(self.idle_timeout)
            if request.method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                origin_head = request.origin_head()
                if capture is not None:
                    capture.add(origin_head)
                upstream.sendall(origin_head)
            if rest:
                if capture is not None:
                    capture.add(rest, tunnel_start=request.method == "CONNECT")
                upstream.sendall(rest)
            self._relay(client, upstream, capture, tunnel=request.method == "CONNECT" and not rest)
        finally:
            if capture is not None:
                self._inspect(request, address, capture)

    def _inspect(self, request: ProxyRequest, address: str, capture: _Capture) -> None:
        assert self.inspector is not None
        uninspected, leaked = capture.uninspected, tuple[str, ...]()
        try:
            leaked = self.inspector(InspectedRequest(request.host, request.port, request.method, bytes(capture.buf)))
        except Exception:
            log.exception("egress content inspection failed")
            uninspected = uninspected or "inspector_failed"
        try:
            self._record(EgressContent(request.host, request.port, request.method, address, len(capture.buf), uninspected, tuple(leaked)))
        finally:
            with self._lock:
                self._inspecting -= 1
                self._lock.notify_all()

    def _relay(self, a: socket.socket, b: socket.socket, capture: _Capture | None = None, *, tunnel: bool = False) -> None:
        """Copy both ways until both close; what ``a`` (the client) sends also goes to ``capture``.
        ``tunnel``: the client's first bytes open a CONNECT tunnel (a TLS handshake is not read)."""
        first = tunnel
        peer = {a.fileno(): (a, b), b.fileno(): (b, a)}
        open_fds = set(peer)
        poller = select.poll()
        for fd in open_fds:
            poller.register(fd, select.POLLIN)
        while open_fds and not self._closed:
            events = poller.poll(self.idle_timeout * 1000)
            if not events:
                return  # idle
            for fd, _ in events:
                if fd not in open_fds:
                    continue
                src, dst = peer[fd]
                data = src.recv(_CHUNK)
                if not data:
                    open_fds.discard(fd)
                    poller.unregister(fd)
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    continue
                if capture is not None and src is a:
                    capture.add(data, tunnel_start=first)
                    first = False
                dst.sendall(data)
