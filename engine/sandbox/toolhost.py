"""Data and search tools that run INSIDE the sandbox: jq, SQLite, text/file search, build detection.

The launcher forks a child per call, with the sandbox's clean environment, its uid, seccomp
filter, cgroup and deadline, and runs :func:`main`. The request is JSON on stdin
(``{"args": {...}}``), the answer JSON on stdout: ``{"ok": value}`` or
``{"error": code, "message": text}``.

This file is bind-mounted read-only into the sandbox as ``agentclash_toolhost`` and imported
by the sandbox's system python: stdlib only, plus jq and google-re2 when their bindings are
mounted beside it (``engine.sandbox.bwrap``). On the host it is only imported by tests, and run
as a script by the development-only unisolated mode.

Paths arrive already contained and symlink-free (``engine.sandbox.fs.resolve``); each open is
``O_NOFOLLOW | O_NONBLOCK`` and the opened fd must still be inside the workspace, be a regular
file and be under the size limit, so neither a racing symlink nor a FIFO gets anywhere.
"""

from __future__ import annotations

import bisect
import errno
import fnmatch
import importlib
import itertools
import json
import os
import posixpath
import stat
import sys
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

# The most one data-tool answer may hold. The worker reads the answer whole and decodes it, then
# redacts and spills it as text (engine/tools/envelope.py): about 2.6 times the answer at its peak.
# At 64 MiB one query_json of a 26 MB file grew a worker by 69 MiB (issue 23, bench/data_tool_rss.py);
# 8 MiB bounds a call to about 20 MiB. A bigger result is refused: narrow the query, or use a shell.
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
_modules: dict[str, ModuleType | None] = {}


class ToolFailure(Exception):
    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(message or code)
        self.code = code
        self.message = message


def _module(name: str) -> ModuleType | None:
    if name not in _modules:
        try:
            _modules[name] = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - missing or ABI-incompatible bindings: reported per call
            _modules[name] = None
    return _modules[name]


def preload(name: str) -> None:
    """Import what tool ``name`` needs (called by the launcher before it forks)."""
    for module in {"jq": ("jq",), "sql": ("sqlite3",), "search_text": ("re2", "re")}.get(name, ()):
        _module(module)


# ------------------------------------------------------------------ workspace files
class Workspace:
    """Maps agent paths (``/workspace/...``) to this process's view (``root``)."""

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/") or "/"

    def local(self, agent: str) -> str:
        rest = agent[len("/workspace") :] if agent == "/workspace" or agent.startswith("/workspace/") else None
        if rest is None:
            raise ToolFailure("outside")
        return self.root + rest

    def check_inside(self, fd: int) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}")
        if target != self.root and not target.startswith(self.root + "/"):
            raise ToolFailure("outside")

    def open(self, agent: str, flags: int) -> int:
        try:
            fd = os.open(self.local(agent), flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            raise ToolFailure("not_found") from None
        except NotADirectoryError:
            raise ToolFailure("not_found") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link swapped in after the host resolved the path
                raise ToolFailure("outside") from None
            if exc.errno == errno.ENXIO:  # a socket
                raise ToolFailure("not_a_file") from None
            raise ToolFailure("unreadable") from None
        try:
            self.check_inside(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def read(self, agent: str, limit: int) -> bytes:
        fd = self.open(agent, os.O_RDONLY)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ToolFailure("not_a_file")
            if st.st_size > limit:
                raise ToolFailure("too_large", str(st.st_size))
            chunks, size = [], 0
            while True:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > limit:
                    raise ToolFailure("too_large", str(size))
            return b"".join(chunks)
        finally:
            os.close(fd)

    def is_file(self, agent: str) -> bool:
        try:
            fd = self.open(agent, os.O_RDONLY)
        except ToolFailure:
            return False
        try:
            return stat.S_ISREG(os.fstat(fd).st_mode)
        finally:
            os.close(fd)

    def files(self, base: str, max_depth: int = 64) -> list[tuple[str, int]]:
        """Every regular file under ``base`` as (agent path, size), sorted; symlinks never followed."""
        fd = self.open(base, os.O_RDONLY | os.O_DIRECTORY)
        out: list[tuple[str, int]] = []
        try:
            self._walk(fd, base.rstrip("/"), out, max_depth)
        finally:
            os.close(fd)
        out.sort()
        return out

    def _walk(self, dfd: int, agent_dir: str, out: list[tuple[str, int]], depth: int) -> None:
        if depth < 0:
            return
        with os.scandir(dfd) as it:
            items = list(it)
        for entry in items:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            path = agent_dir + "/" + entry.name
            if stat.S_ISREG(st.st_mode):
                out.append((path, st.st_size))
            elif stat.S_ISDIR(st.st_mode):
                try:
                    sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
                except OSError:
                    continue
                try:
                    self._walk(sub, path, out, depth - 1)
                finally:
                    os.close(sub)


# ------------------------------------------------------------------ tools
class Budget:
    """Caps the bytes of one answer (the host caps what it reads as well)."""

    def __init__(self, limit: int = MAX_OUTPUT_BYTES) -> None:
        self.left = limit

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise ToolFailure("too_large_output")


def tool_jq(ws: Workspace, args: dict[str, Any]) -> Any:
    jq = _module("jq")
    if jq is None:
        raise ToolFailure("unavailable", "jq bindings are not available in this sandbox")
    if args.get("path"):
        text = ws.read(str(args["path"]), int(args["limit"])).decode("utf-8", "replace")
    else:
        text = str(args.get("text") or "")
    budget = Budget()
    lines = []
    try:
        program = jq.compile(str(args["query"]))
        for value in program.input_text(text):
            line = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
            budget.spend(len(line) + 1)
            lines.append(line)
    except ValueError as exc:
        text = str(exc).strip()
        raise ToolFailure("jq", text.splitlines()[0][:500] if text else "jq query failed") from None
    return lines


_READ_PRAGMAS = frozenset(
    "table_info table_xinfo index_list index_info index_xinfo foreign_key_list table_list collation_list function_list database_list".split()
)


def tool_sql(ws: Workspace, args: dict[str, Any]) -> Any:
    sqlite3 = _module("sqlite3")
    if sqlite3 is None:
        raise ToolFailure("unavailable", "sqlite3 is not available in this sandbox")
    fd = ws.open(str(args["path"]), os.O_RDONLY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolFailure("not_a_file")
        # The connection opens the very file we checked, through our fd, never the path again.
        uri = f"file:/proc/self/fd/{fd}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=1.0, isolation_level=None)
        except sqlite3.Error as exc:
            raise ToolFailure("sql", f"sql error: {exc}") from None
    finally:
        os.close(fd)  # sqlite holds its own descriptor now
    deadline = time.monotonic() + float(args.get("budget", 10.0))
    max_rows = int(args.get("max_rows", 100_000))

    def authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE):
            return int(sqlite3.SQLITE_OK)
        if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _READ_PRAGMAS and arg2 is None:
            return int(sqlite3.SQLITE_OK)
        return int(sqlite3.SQLITE_DENY)

    budget = Budget()
    try:
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
        conn.set_authorizer(authorizer)
        cursor = conn.execute(str(args["query"]))
        columns = [d[0] for d in cursor.description or []]
        rows: list[dict[str, Any]] = []
        for row in cursor:
            item = {c: _cell(v) for c, v in zip(columns, row, strict=False)}
            budget.spend(len(json.dumps(item, ensure_ascii=False)) + 1)
            rows.append(item)
            if len(rows) >= max_rows:
                break
        return rows
    except sqlite3.OperationalError as exc:
        if str(exc) == "interrupted":
            raise ToolFailure("sql_timeout") from None
        raise ToolFailure("sql", f"sql error: {exc}") from None
    except sqlite3.Error as exc:
        raise ToolFailure("sql", f"sql error: {exc}") from None
    finally:
        conn.close()


def _cell(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    return value


class LineMatcher:
    """Finds the lines of a text that match a pattern, on RE2 (linear time).

    Lines match one by one (``search(line)``), as ripgrep and the previous Python version did.
    To avoid one call per line, a multi-line twin of the pattern searches the whole file (as
    UTF-8 bytes, from an offset): every matching line is touched by one of its matches, so only
    touched lines are checked. Without the re2 bindings: Python ``re``, line by line, under the
    call's deadline.
    """

    def __init__(self, pattern: str, case_sensitive: bool) -> None:
        re2 = _module("re2")
        self.whole: Any = None
        if re2 is None:
            import re

            try:
                self.line = re.compile(pattern, 0 if case_sensitive else re.IGNORECASE).search
            except re.error as exc:
                raise ToolFailure("regex", f"invalid regex: {exc}") from None
            return
        options = re2.Options()
        options.log_errors = False
        options.case_sensitive = case_sensitive
        try:
            self.line = re2.compile(pattern, options).search
            if "\\A" not in pattern and "\\z" not in pattern:  # absolute anchors are per line only
                self.whole = re2.compile(("(?m)" + pattern).encode("utf-8"), options).search
        except Exception as exc:  # noqa: BLE001 - re2 raises its own error type
            message = exc.args[0] if exc.args else exc
            text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
            raise ToolFailure("regex", f"invalid regex: {text}") from None

    def matching(self, lines: list[str]) -> Iterator[int]:
        """Indexes of the matching lines, in order."""
        if self.whole is None or not lines:
            yield from (k for k, line in enumerate(lines) if self.line(line) is not None)
            return
        encoded = [line.encode("utf-8") for line in lines]
        blob = b"\n".join(encoded)
        ends = list(itertools.accumulate(len(b) + 1 for b in encoded))  # just past each line's newline
        pos, last_line = 0, len(lines) - 1
        while pos <= len(blob):
            found = self.whole(blob, pos)
            if found is None:
                return
            first = bisect.bisect_right(ends, found.start())
            last = min(bisect.bisect_right(ends, max(found.end() - 1, found.start())), last_line)
            for k in range(first, last + 1):
                if self.line(lines[k]) is not None:
                    yield k
            pos = ends[last]


def _included(path: str, base: str, include: str) -> bool:
    if not include:
        return True
    target = posixpath.relpath(path, base) if "/" in include else posixpath.basename(path)
    return fnmatch.fnmatchcase(target, include)


def tool_search_text(ws: Workspace, args: dict[str, Any]) -> Any:
    matcher = LineMatcher(str(args["pattern"]), bool(args.get("case_sensitive", True)))
    base = str(args["base"])
    include = str(args.get("include") or "")
    max_results = int(args["max_results"])
    file_limit = int(args["file_limit"])
    line_chars = int(args["line_chars"])
    budget = Budget()
    found: list[dict[str, Any]] = []
    for path, size in ws.files(base):
        if size > file_limit or not _included(path, base, include):
            continue
        try:
            data = ws.read(path, file_limit)
        except ToolFailure:
            continue
        if b"\x00" in data[:8192]:
            continue  # binary, as ripgrep skips it
        lines = data.decode("utf-8", "replace").splitlines()
        for count, index in enumerate(matcher.matching(lines), start=1):
            shown = lines[index][:line_chars]
            budget.spend(len(path) + len(shown) + 48)
            found.append({"path": path, "line_number": index + 1, "line_text": shown})
            if count >= max_results:
                break
    return found


def tool_search_files(ws: Workspace, args: dict[str, Any]) -> Any:
    pattern = str(args["pattern"])
    max_results = int(args["max_results"])
    return [p for p, _ in ws.files(str(args["base"])) if fnmatch.fnmatchcase(posixpath.basename(p), pattern)][:max_results]


def tool_detect(ws: Workspace, args: dict[str, Any]) -> Any:
    """The test/build command for the project in ``cwd`` (npm, go, cargo, python, make) or None."""
    base, mode = str(args["cwd"]).rstrip("/"), str(args["mode"])
    try:
        package = ws.read(f"{base}/package.json", 4 * 1024 * 1024)
    except ToolFailure:
        package = None
    if package is not None:
        try:
            scripts = json.loads(package).get("scripts") or {}
        except (ValueError, AttributeError, RecursionError):
            scripts = {}
        if isinstance(scripts, dict) and mode in scripts:
            return ["npm", ["npm", "run", mode]]
    if ws.is_file(f"{base}/go.mod"):
        return ["go", ["go", mode, "./..."]]
    if ws.is_file(f"{base}/Cargo.toml"):
        return ["cargo", ["cargo", mode]]
    if ws.is_file(f"{base}/pyproject.toml"):
        return ["python", ["python3", "-m", "unittest", "discover"] if mode == "test" else ["python3", "-m", "compileall", "."]]
    if ws.is_file(f"{base}/Makefile"):
        return ["make", ["make", mode]]
    return None


TOOLS: dict[str, Callable[[Workspace, dict[str, Any]], Any]] = {
    "jq": tool_jq,
    "sql": tool_sql,
    "search_text": tool_search_text,
    "search_files": tool_search_files,
    "detect": tool_detect,
}


def handle(name: str, request: dict[str, Any]) -> dict[str, Any]:
    args = request.get("args") or {}
    ws = Workspace(str(request.get("root") or "/workspace"))
    try:
        return {"ok": TOOLS[name](ws, args)}
    except ToolFailure as exc:
        return {"error": exc.code, "message": exc.message}
    except RecursionError:
        return {"error": "too_deep", "message": ""}
    except MemoryError:
        return {"error": "memory", "message": ""}


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main(name: str) -> None:
    request = json.loads(_read_all(0) or b"{}")
    answer = handle(name, request) if name in TOOLS else {"error": "unknown_tool", "message": name}
    _write_all(1, json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace"))


if __name__ == "__main__":  # pragma: no cover - development-only unisolated mode
    main(sys.argv[1])
