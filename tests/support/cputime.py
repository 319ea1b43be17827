"""Opt-in pytest plugin: CPU-seconds and wall time spent per test file.

Used to find what makes the suite slow on a machine whose cores are all busy (``make test`` is
bound by total CPU on 2 cores, not by waits), so it counts CPU, which does not depend on what
else runs beside the suite. Never on by default; load it with
``-p tests.support.cputime`` and name an output folder in ``KBROKER_CPU_REPORT``::

    KBROKER_CPU_REPORT=/tmp/cpu .venv/bin/python -m pytest -p tests.support.cputime -n 2 \\
        --dist loadfile tests
    .venv/bin/python -m tests.support.cputime /tmp/cpu        # the table, biggest first
    .venv/bin/python -m tests.support.cputime run -- CMD...   # CMD's total CPU, orphans too

How it counts (Linux /proc, no other dependency): at the start and at the end of each test
file a process (the pytest process, or each xdist worker) adds up, over itself and all of its
live descendants, ``utime + stime + cutime + cstime``. A child that ends and is reaped moves its
whole CPU into its parent's ``cutime``, so end minus start is what the file cost, including the
brokers, JVMs and clients it started and stopped. Processes that were already running when the
file started (the session's shared brokers, the resident tool JVM) are counted apart, on a
``(shared)`` line of the process, since their CPU serves every file after them, except a
resident helper that works for one file at a time (compat_tests/cli_fork.py's Python,
compat_tests/tool_jvm.py's JVM): started with ``KBROKER_CPU_PER_FILE=1`` in its environment
(``PER_FILE_ENV``), what it spends during a file counts for that file. A process that
leaves the tree (reparented to init by a double fork) or a container is not seen.

Run it as ``make test`` runs the suites, without ``PYTHONDONTWRITEBYTECODE`` (the Makefile
unexports it): with it set, every child Python compiles again what has no bytecode cache yet,
which added up to a quarter to the files that start many processes (tests/tools/
test_cli_commands.py: 24.2 CPU-s with it, 18.4 without).

A file's start is its first test's setup; its end is the teardown of its last test, which is
where pytest tears down module fixtures. Each process appends JSON lines to
``<dir>/cpu-<pid>.jsonl``; ``python -m tests.support.cputime DIR`` merges them.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")
_T0 = time.monotonic()
# In the environment of a long-lived helper whose CPU belongs to the file it serves.
PER_FILE_ENV = {"KBROKER_CPU_PER_FILE": "1"}


def _per_file(pid: int) -> bool:
    """Whether ``pid`` was started with PER_FILE_ENV (its initial environment, /proc)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return b"KBROKER_CPU_PER_FILE=1" in f.read().split(b"\0")
    except OSError:
        return False


def _stat(pid: int) -> tuple[int, float, int] | None:
    """(ppid, own + reaped children's CPU seconds, start time in ticks) of ``pid``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces or ')'
    fields = data[data.rindex(b")") + 2:].split()
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return ppid, (utime + stime + cutime + cstime) / _TICK, int(fields[19])


def tree_cpu(root: int) -> dict[tuple[int, int], float]:
    """CPU seconds of ``root`` and each live descendant, keyed by (pid, start time)."""
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                stats[int(name)] = st
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    out = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            out[(pid, stats[pid][2])] = stats[pid][1]
            todo.extend(children.get(pid, ()))
    return out


class CpuTimer:
    """Per-file CPU and wall of this process's tree, appended to a JSON-lines file."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.out = folder / f"cpu-{os.getpid()}.jsonl"
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.file = None
        self.before: dict = {}
        self.wall = 0.0

    def start(self, file: str) -> None:
        first = self.file is None and not self.before
        self.file = file
        self.before = tree_cpu(os.getpid())
        if first:       # the interpreter's start, the plugins' imports and the collection
            self._write({"file": "(start-up and collection)", "worker": self.worker,
                         "cpu": round(sum(self.before.values()), 2), "shared": 0.0,
                         "wall": round(time.monotonic() - _T0, 2)})
        self.wall = time.monotonic()

    def end(self) -> None:
        after = tree_cpu(os.getpid())
        me = (os.getpid(), next(k[1] for k in after if k[0] == os.getpid()))
        shared = own = 0.0
        for key, cpu in after.items():
            if key in self.before and key != me and not _per_file(key[0]):
                shared += cpu - self.before[key]
            else:
                own += cpu - self.before.get(key, 0.0)
        # processes that were there at the start and have gone: their CPU went into a live
        # parent's cutime (counted in own) — take their share at the start back out of own
        own -= sum(cpu for key, cpu in self.before.items() if key not in after)
        self._write({"file": self.file, "worker": self.worker, "cpu": round(own, 2),
                     "shared": round(shared, 2), "wall": round(time.monotonic() - self.wall, 2)})
        self.file = None

    def _write(self, row: dict) -> None:
        with open(self.out, "a") as f:
            f.write(json.dumps(row) + "\n")


def _file_of(item) -> str:
    return item.nodeid.split("::")[0]


def pytest_configure(config):
    folder = os.environ.get("KBROKER_CPU_REPORT")
    if folder and not _is_xdist_controller(config):
        config._kbroker_cpu = CpuTimer(Path(folder))
    elif folder:
        config._kbroker_cpu_controller = Path(folder)


def _is_xdist_controller(config) -> bool:
    return (not hasattr(config, "workerinput")
            and getattr(config.option, "numprocesses", None) not in (None, 0))


def pytest_runtest_protocol(item, nextitem):
    # a file ends where the next one starts: its module fixtures were torn down in its last
    # test's teardown, just before
    timer = getattr(item.config, "_kbroker_cpu", None)
    if timer is not None and timer.file != _file_of(item):
        if timer.file is not None:
            timer.end()
        timer.start(_file_of(item))


def pytest_sessionfinish(session):
    timer = getattr(session.config, "_kbroker_cpu", None)
    if timer is not None and timer.file is not None:
        timer.end()
    folder = getattr(session.config, "_kbroker_cpu_controller", None)
    if folder is not None:      # xdist's controller: its own CPU, without the workers'
        own = os.times()
        row = {"file": "(xdist controller)", "worker": "controller",
               "cpu": round(own.user + own.system, 2), "shared": 0.0,
               "wall": round(time.monotonic() - _T0, 2)}
        with open(folder / f"cpu-{os.getpid()}.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")


def report(folder: Path) -> str:
    rows = []
    for path in sorted(folder.glob("cpu-*.jsonl")):
        rows.extend(json.loads(line) for line in path.read_text().splitlines() if line)
    files: dict[str, dict] = {}
    for row in rows:
        agg = files.setdefault(row["file"], {"cpu": 0.0, "shared": 0.0, "wall": 0.0})
        for k in ("cpu", "shared", "wall"):
            agg[k] += row[k]
    lines = [f"{'CPU-s':>8} {'shared':>7} {'wall-s':>7}  file"]
    for name, agg in sorted(files.items(), key=lambda kv: -kv[1]["cpu"]):
        lines.append(f"{agg['cpu']:8.1f} {agg['shared']:7.1f} {agg['wall']:7.1f}  {name}")
    total = sum(a["cpu"] for a in files.values())
    shared = sum(a["shared"] for a in files.values())
    lines.append(f"{total:8.1f} {shared:7.1f} {'':>7}  total over {len(files)} files")
    return "\n".join(lines)


def run_reaping(cmd: list[str]) -> int:
    """Run ``cmd`` as a child subreaper (prctl PR_SET_CHILD_SUBREAPER): descendants orphaned
    on the way (a JVM whose Python parent ended first, a daemonised helper) are reparented here
    and reaped, so the total CPU printed counts them too, which the per-file lines cannot."""
    import ctypes
    import subprocess
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:      # PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    t0 = time.monotonic()
    rc = subprocess.Popen(cmd).wait()
    while True:                               # the orphans still running or not yet reaped
        try:
            os.wait()
        except ChildProcessError:
            break
    usage = os.times()
    print(f"cputime: {usage.children_user + usage.children_system:.1f} CPU-s "
          f"(user {usage.children_user:.1f}, system {usage.children_system:.1f}), "
          f"wall {time.monotonic() - t0:.1f} s, exit {rc}: {' '.join(cmd)}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        sys.exit(run_reaping(sys.argv[3:] if sys.argv[2:3] == ["--"] else sys.argv[2:]))
    print(report(Path(sys.argv[1])))
