"""Child-process environment and the argv shell rule."""

from __future__ import annotations

import posixpath

SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Only these reach a sandboxed process, plus the pack's literal env_vars and per-call extras.
# Nothing is copied from the worker's own environment.
BASE_ENV = {
    "PATH": SANDBOX_PATH,
    "HOME": "/workspace",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "TMPDIR": "/tmp",  # noqa: S108 - the sandbox-private tmpfs
    "TERM": "dumb",
    "USER": "sandbox",
    "PYTHONDONTWRITEBYTECODE": "1",
}

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh", "mksh", "pdksh", "csh", "tcsh", "fish", "rbash", "yash", "busybox"})
# Programs whose job is to run the argv that follows them.
WRAPPERS = frozenset(
    {
        "env",
        "nice",
        "nohup",
        "setsid",
        "timeout",
        "stdbuf",
        "ionice",
        "chrt",
        "taskset",
        "time",
        "exec",
        "command",
        "sudo",
        "doas",
        "unbuffer",
        "xargs",
        "flock",
    }
)


def build_env(pack_env: dict[str, str], extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(BASE_ENV)
    env.update(pack_env)
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    return env


def _skip_wrapper_options(name: str, rest: list[str]) -> list[str]:
    i = 0
    while i < len(rest):
        arg = rest[i]
        if name == "env" and "=" in arg and not arg.startswith("-"):
            i += 1
            continue
        if arg == "--":
            return rest[i + 1 :]
        if arg.startswith("-"):
            # options that take a separate value
            if name == "env" and arg in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                if arg in ("-S", "--split-string"):
                    return ["sh"]  # env -S runs a command line: treat as a shell
                i += 2
                continue
            if name in ("timeout",) and arg in ("-s", "--signal", "-k", "--kill-after"):
                i += 2
                continue
            if name in ("nice", "ionice", "chrt", "taskset", "flock") and arg in ("-n", "-c", "-p"):
                i += 2
                continue
            if name == "env" and arg.startswith("-S"):
                return ["sh"]
            i += 1
            continue
        break
    rest = rest[i:]
    if name == "timeout" and rest:
        rest = rest[1:]  # the duration
    if name in ("taskset", "flock") and rest:
        rest = rest[1:]
    return rest


def invokes_shell(argv: list[str]) -> bool:
    """True when argv (possibly through env/busybox/nice/... wrappers) starts a shell."""
    rest = list(argv)
    for _ in range(16):
        if not rest:
            return False
        name = posixpath.basename(str(rest[0]).strip())
        if name in SHELLS:
            return True
        if name in WRAPPERS:
            rest = _skip_wrapper_options(name, rest[1:])
            continue
        return False
    return True
