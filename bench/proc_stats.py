"""CPU time and memory of processes from ``/proc`` (Linux), for the bench scripts.

CPU is ``utime + stime + cutime + cstime``: a pool process's CPU includes the sandbox processes
(bubblewrap, the commands in it) it waited for, which is what a case really costs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU of ``pid`` and its reaped children, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
    return sum(int(v) for v in fields[11:15]) * TICK  # utime stime cutime cstime


def status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def smaps_kb(pid: int) -> dict[str, int]:
    """``Rss``, ``Pss`` and ``Uss`` (private clean + dirty) of ``pid`` in kB, from ``smaps_rollup``.

    RSS counts every page the process maps, the ones it shares with the worker's main process
    and the other pool processes (forked, copy-on-write) included; USS only its own; PSS its own
    plus its share of the shared ones (the pool's PSS add up to what it really uses).
    """
    values = {"Rss": 0, "Pss": 0, "Uss": 0}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss"):
                values[key] = int(rest.split()[0])
            elif key in ("Private_Clean", "Private_Dirty"):
                values["Uss"] += int(rest.split()[0])
    except (OSError, ValueError):
        pass
    return values


def machine_busy_seconds() -> float:
    """CPU seconds spent not idle by the whole machine (every core), since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) * TICK


class CpuTracker:
    """CPU used by a changing set of processes between :meth:`begin` and the last :meth:`sample`.

    A process first seen after :meth:`begin` counts from zero (a backend opened mid-run); one
    that exits keeps its last sampled value (so sample often: what it used after that is lost).
    """

    def __init__(self) -> None:
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.started = False

    def begin(self, pids: list[int]) -> None:
        self.first, self.last, self.started = {}, {}, True
        self.sample(pids, new_from_zero=False)

    def sample(self, pids: list[int], *, new_from_zero: bool = True) -> None:
        for pid in pids:
            value = cpu_seconds(pid)
            if value is None:
                continue
            if pid not in self.first:
                self.first[pid] = 0.0 if new_from_zero else value
            self.last[pid] = value

    @property
    def seconds(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.last)


class Sampler(threading.Thread):
    """Every ``every`` seconds: peak RSS per worker process, total RSS, and CPU by group.

    ``groups`` maps a name to a function returning the pids of that group now. Every
    ``smaps_every``-th sample also reads each worker process's PSS and USS (:func:`smaps_kb`,
    dearer to read than RSS); ``pool_rss_samples`` holds the largest pool process's RSS at
    each sample (the worker's main process left out).
    """

    def __init__(self, worker_pid: int, groups: dict[str, Callable[[], list[int]]], every: float = 0.25, smaps_every: int = 4) -> None:
        super().__init__(daemon=True)
        self.worker_pid, self.groups, self.every, self.smaps_every = worker_pid, groups, every, smaps_every
        self.peaks: dict[int, int] = {}
        self.first_rss: dict[int, int] = {}  # each worker process's RSS when first seen
        self.peak_pss: dict[int, int] = {}
        self.peak_uss: dict[int, int] = {}
        self.rss_samples: list[int] = []
        self.pool_rss_samples: list[int] = []
        self.count = 0
        self.cpu = {name: CpuTracker() for name in groups}
        self.stopped = threading.Event()
        self._lock = threading.Lock()

    def begin(self) -> None:
        with self._lock:
            for name, pids in self.groups.items():
                self.cpu[name].begin(pids())
            self.rss_samples, self.pool_rss_samples = [], []
            self.peak_pss, self.peak_uss = {}, {}

    def sample(self) -> None:
        with self._lock:
            worker = [self.worker_pid, *children(self.worker_pid)]
            rss = {pid: status_kb(pid, "VmRSS") for pid in worker}
            for pid in worker:
                self.peaks[pid] = max(self.peaks.get(pid, 0), status_kb(pid, "VmHWM"))
                self.first_rss.setdefault(pid, rss[pid])
            if self.count % self.smaps_every == 0:
                for pid in worker:
                    smaps = smaps_kb(pid)
                    self.peak_pss[pid] = max(self.peak_pss.get(pid, 0), smaps["Pss"])
                    self.peak_uss[pid] = max(self.peak_uss.get(pid, 0), smaps["Uss"])
            self.count += 1
            self.rss_samples.append(sum(rss.values()))
            self.pool_rss_samples.append(max((v for pid, v in rss.items() if pid != self.worker_pid), default=0))
            for name, pids in self.groups.items():
                if self.cpu[name].started:
                    self.cpu[name].sample(pids())

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                self.sample()
            except Exception:
                pass
