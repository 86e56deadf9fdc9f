"""The sandbox's seccomp filter: a classic-BPF program handed to bubblewrap with ``--seccomp FD``.

It applies to the launcher (PID 1) and everything it starts. It denies the kernel surface an
agent has no business touching and that has a history of privilege-escalation bugs:

- debugging other processes: ``ptrace``, ``process_vm_readv/writev``, ``pidfd_getfd``, ``kcmp``,
  ``process_madvise`` (with the launcher non-dumpable this is belt and braces);
- namespaces and mounts: ``unshare``, ``setns``, ``clone`` with any ``CLONE_NEW*`` flag, ``mount``
  and the new mount API, ``pivot_root``, ``chroot``;
- kernel facilities: ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``, the key
  ring (``keyctl``, ``add_key``, ``request_key``), modules, ``kexec``, swap, reboot, clocks,
  ``syslog``, ``quotactl``, handle-based opens, ``fanotify_init``;
- ``prlimit64`` on another process (an agent could starve the launcher of its own limits) and
  the ``TIOCSTI``/``TIOCLINUX`` ioctls (typing into a terminal);
- sockets of any family but ``AF_UNIX``, ``AF_INET``, ``AF_INET6`` and ``AF_NETLINK``
  (``socket`` and ``socketpair`` return ``EAFNOSUPPORT``): the network namespace does not cover
  every family — ``AF_VSOCK`` reaches the VM's host ports from any namespace (issue 23) — and the
  others (packet, Bluetooth, CAN, ALG, XDP…) are kernel surface no workload needs.

``clone3`` and ``io_uring_setup`` return ``ENOSYS`` so libc and runtimes fall back to ``clone``
(whose flags the filter can inspect) and to plain syscalls. Everything else is ``EPERM``.
Foreign ABIs are refused outright: i386 ``int 0x80`` calls and x32 calls on x86-64.

We build the program ourselves (it is ~80 instructions) rather than depend on libseccomp's
Python bindings, which are not installable from PyPI; the syscall numbers below were checked
against the kernel headers (``asm/unistd_64.h``, ``asm-generic/unistd.h``).
"""

from __future__ import annotations

import errno
import os
import platform
import struct

# struct seccomp_data offsets
_NR = 0
_ARCH = 4
_ARG_LO = (16, 24, 32, 40, 48, 56)

# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
RET_KILL_PROCESS = 0x80000000

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000

CLONE_NAMESPACES = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCKET_FAMILIES = (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK)

DENIED = (
    "ptrace process_vm_readv process_vm_writev pidfd_getfd kcmp process_madvise migrate_pages move_pages "
    "unshare setns mount umount2 pivot_root chroot fsopen fsconfig fsmount fspick move_mount open_tree mount_setattr "
    "bpf perf_event_open userfaultfd io_uring_enter io_uring_register keyctl add_key request_key "
    "init_module finit_module delete_module create_module get_kernel_syms query_module kexec_load kexec_file_load "
    "swapon swapoff reboot acct settimeofday clock_settime clock_adjtime adjtimex syslog quotactl quotactl_fd "
    "lookup_dcookie nfsservctl uselib ustat sysfs _sysctl iopl ioperm open_by_handle_at name_to_handle_at "
    "fanotify_init vhangup sethostname setdomainname"
).split()
NOT_IMPLEMENTED = ("clone3", "io_uring_setup")
# Denied only where no cgroup charges the sandbox's memory (the launcher's RSS watchdog is the cap
# then): memory these create lives outside every process's resident set, unmapped memfds and SysV
# segments (which even outlive the command), so the watchdog could never see it.
UNACCOUNTED_MEMORY = ("memfd_create", "memfd_secret", "shmget")

_X86_64 = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "kcmp": 312,
    "process_madvise": 440, "migrate_pages": 256, "move_pages": 279, "unshare": 272, "setns": 308, "mount": 165,
    "umount2": 166, "pivot_root": 155, "chroot": 161, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "move_mount": 429, "open_tree": 428, "mount_setattr": 442, "bpf": 321, "perf_event_open": 298,
    "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 250,
    "add_key": 248, "request_key": 249, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "create_module": 174, "get_kernel_syms": 177, "query_module": 178, "kexec_load": 246, "kexec_file_load": 320,
    "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163, "settimeofday": 164, "clock_settime": 227,
    "clock_adjtime": 305, "adjtimex": 159, "syslog": 103, "quotactl": 179, "quotactl_fd": 443,
    "lookup_dcookie": 212, "nfsservctl": 180, "uselib": 134, "ustat": 136, "sysfs": 139, "_sysctl": 156,
    "iopl": 172, "ioperm": 173, "open_by_handle_at": 304, "name_to_handle_at": 303, "fanotify_init": 300,
    "vhangup": 153, "sethostname": 170, "setdomainname": 171, "clone": 56, "clone3": 435, "prlimit64": 302,
    "ioctl": 16, "memfd_create": 319, "memfd_secret": 447, "shmget": 29, "socket": 41, "socketpair": 53,
}  # fmt: skip
_AARCH64 = {
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "kcmp": 272,
    "process_madvise": 440, "migrate_pages": 238, "move_pages": 239, "unshare": 97, "setns": 268, "mount": 40,
    "umount2": 39, "pivot_root": 41, "chroot": 51, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "move_mount": 429, "open_tree": 428, "mount_setattr": 442, "bpf": 280, "perf_event_open": 241,
    "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 219,
    "add_key": 217, "request_key": 218, "init_module": 105, "finit_module": 273, "delete_module": 106,
    "kexec_load": 104, "kexec_file_load": 294, "swapon": 224, "swapoff": 225, "reboot": 142, "acct": 89,
    "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266, "adjtimex": 171, "syslog": 116,
    "quotactl": 60, "quotactl_fd": 443, "lookup_dcookie": 18, "nfsservctl": 42, "open_by_handle_at": 265,
    "name_to_handle_at": 264, "fanotify_init": 262, "vhangup": 58, "sethostname": 161, "setdomainname": 162,
    "clone": 220, "clone3": 435, "prlimit64": 261, "ioctl": 29, "memfd_create": 279, "memfd_secret": 447,
    "shmget": 194, "socket": 198, "socketpair": 199,
}  # fmt: skip
ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (AUDIT_ARCH_X86_64, _X86_64),
    "aarch64": (AUDIT_ARCH_AARCH64, _AARCH64),
}


class SeccompUnavailableError(RuntimeError):
    """No filter for this CPU architecture: the sandbox refuses to start rather than run unfiltered."""


class _Program:
    """A tiny assembler: instructions with symbolic jump targets, resolved to relative offsets."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def load(self, offset: int) -> None:
        self.code.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, true: str | int = 0, false: str | int = 0) -> None:
        self.code.append((op, true, false, k))

    def ret(self, value: int) -> None:
        self.code.append((_RET_K, 0, 0, value))

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (op, jt, jf, k) in enumerate(self.code):
            offsets = []
            for target in (jt, jf):
                rel = target if isinstance(target, int) else self.labels[target] - index - 1
                if not 0 <= rel <= 255:
                    raise ValueError("seccomp jump out of range")
                offsets.append(rel)
            out += struct.pack("=HBBI", op, offsets[0], offsets[1], k)
        return bytes(out)


def build_filter(machine: str | None = None, *, deny_unaccounted_memory: bool = False) -> bytes:
    """The filter for ``machine`` (default: this host's), as ``struct sock_filter`` bytes.
    ``deny_unaccounted_memory``: also refuse ``UNACCOUNTED_MEMORY`` (a sandbox without a cgroup)."""
    machine = machine or platform.machine()
    if machine not in ARCHES:
        raise SeccompUnavailableError(f"no seccomp filter for {machine}")
    audit_arch, numbers = ARCHES[machine]
    p = _Program()
    p.load(_ARCH)
    p.jump(_JEQ_K, audit_arch, 0, "deny")  # i386 int 0x80 and other foreign ABIs
    p.load(_NR)
    if machine == "x86_64":
        p.jump(_JGE_K, X32_SYSCALL_BIT, "deny", 0)
    for name in [*DENIED, *(UNACCOUNTED_MEMORY if deny_unaccounted_memory else ())]:
        if name in numbers:
            p.jump(_JEQ_K, numbers[name], "deny", 0)
    for name in NOT_IMPLEMENTED:
        p.jump(_JEQ_K, numbers[name], "enosys", 0)
    p.jump(_JEQ_K, numbers["clone"], "clone", 0)
    p.jump(_JEQ_K, numbers["prlimit64"], "prlimit", 0)
    p.jump(_JEQ_K, numbers["ioctl"], "ioctl", 0)
    p.jump(_JEQ_K, numbers["socket"], "socket", 0)
    p.jump(_JEQ_K, numbers["socketpair"], "socket", 0)
    p.ret(RET_ALLOW)
    p.label("socket")  # socket(family, ...) / socketpair(family, ...): the family is an int
    p.load(_ARG_LO[0])
    for family in SOCKET_FAMILIES:
        p.jump(_JEQ_K, family, "allow", 0)
    p.ret(RET_ERRNO | errno.EAFNOSUPPORT)
    p.label("allow")
    p.ret(RET_ALLOW)
    p.label("clone")
    p.load(_ARG_LO[0])
    p.jump(_JSET_K, CLONE_NAMESPACES, "deny", 0)
    p.ret(RET_ALLOW)
    p.label("prlimit")  # prlimit64(pid, ...): only for the calling process (pid 0)
    p.load(_ARG_LO[0])
    p.jump(_JEQ_K, 0, 0, "deny")
    p.load(_ARG_LO[0] + 4)
    p.jump(_JEQ_K, 0, 0, "deny")
    p.ret(RET_ALLOW)
    p.label("ioctl")
    p.load(_ARG_LO[1])
    p.jump(_JEQ_K, TIOCSTI, "deny", 0)
    p.jump(_JEQ_K, TIOCLINUX, "deny", 0)
    p.ret(RET_ALLOW)
    p.label("enosys")
    p.ret(RET_ERRNO | errno.ENOSYS)
    p.label("deny")
    p.ret(RET_ERRNO | errno.EPERM)
    return p.assemble()


_cached: dict[bool, bytes] = {}


def filter_fd(*, deny_unaccounted_memory: bool = False) -> int:
    """A readable fd holding the filter (for ``bwrap --seccomp``); the caller closes it."""
    program = _cached.get(deny_unaccounted_memory)
    if program is None:
        program = _cached[deny_unaccounted_memory] = build_filter(deny_unaccounted_memory=deny_unaccounted_memory)
    r, w = os.pipe()
    try:
        os.write(w, program)  # < 1 KiB: fits the pipe buffer
    finally:
        os.close(w)
    return r
