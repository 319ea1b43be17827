"""``python -m kbroker`` client commands for the suites without an interpreter start each time.

A ``kbroker topics list`` run costs about 0.23 s of CPU on the suite's 2-core machine, and
almost all of it is the interpreter starting and importing argparse, confluent-kafka and
kbroker's command modules; the suites run a few hundred such commands
(compat_tests/kbroker_cli.py on two targets, tests/tools). ``run`` hands a command to a
resident Python per test process, started once with those modules imported and no thread; it
forks one child per command, and the child runs ``kbroker/__main__.py`` as ``python -m kbroker``
does (``runpy``, ``sys.argv``), with the test's stdin, stdout and stderr as its file descriptors
0, 1 and 2, then ends through the interpreter's normal exit. The rules kept:

- a command sees what a fresh ``python -m kbroker`` gives it: its own process, the caller's
  environment and working directory, real file descriptors (what librdkafka writes to fd 2
  is captured as a fresh process's would be), its exit code or signal as ``returncode``;
  what differs: the modules were imported before the fork, and stdout and stderr are unlinked
  temporary files rather than pipes (neither is a terminal either way);
  tests/tools/test_cli_commands.py compares the two ways command by command;
- the resident process itself never runs a command, so no client, thread or configured logger
  exists when it forks (it checks that it has one thread before each fork);
- a run over its timeout is killed (SIGKILL) and raises ``subprocess.TimeoutExpired``, as
  ``subprocess.run`` does;
- the settings an interpreter reads as it starts (``PYTHON*`` such as ``PYTHONPATH``, ``LANG``,
  ``LC_*``) are the resident's own: each set of them gets a resident process of its own, and
  the child puts its working directory first on ``sys.path``, as ``-m`` does;
- a second run while one is in progress (tests with threads), or ``KBROKER_CLI_FORK=0``, gets a
  fresh ``python -m kbroker`` process, as before.

The entry point itself (``python -m kbroker``, the ``kbroker`` console script) is started for
real by the tests that are about it (compat_tests/kbroker_cli.py's ``scenario_version``,
tests/broker/test_startup_imports.py, tests/packaging/test_wheel.py).

Wire format on the Unix socket between the two: the request is one JSON line (argv, env, cwd)
sent with three file descriptors (SCM_RIGHTS); the answers are JSON lines ``{"pid": N}`` once
forked, then ``{"returncode": N}``.
"""
from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from tests.support.cputime import PER_FILE_ENV

ROOT = Path(__file__).resolve().parent.parent
ENV_SWITCH = "KBROKER_CLI_FORK"


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1") != "0"


def _start_settings(env: dict[str, str]) -> dict[str, str]:
    """The environment a Python reads as it starts (so a fork cannot change it afterwards)."""
    return {k: v for k, v in env.items() if k.startswith(("PYTHON", "LC_")) or k == "LANG"}


def _read_line(sock: socket.socket, buf: bytearray) -> bytes:
    while b"\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise EOFError("the resident CLI process closed its socket")
        buf += chunk
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return line


# --- the resident process -----------------------------------------------------------------------

def _preload() -> None:
    """What a client command imports, imported once: the command line with every subcommand's
    parser, the client commands' modules and confluent-kafka (no client is created), and what
    ``storage format`` imports (the suites format every node of their quorums with it: the
    configuration, the bootstrap records and the client security modules, with trio and ssl;
    about 0.1 CPU-s of a child's 0.15 otherwise)."""
    from kbroker.tools import cli, group_reads, wire_client  # noqa: F401
    cli._parser()
    import kbroker.config.broker  # noqa: F401
    import kbroker.metadata.feature_control  # noqa: F401
    import kbroker.metadata.storage_format  # noqa: F401
    import kbroker.metadata.store  # noqa: F401
    import kbroker.raft.control  # noqa: F401
    import kbroker.security.bootstrap  # noqa: F401
    import kbroker.security.client  # noqa: F401
    import kbroker.wire.records  # noqa: F401
    import confluent_kafka  # noqa: F401
    import confluent_kafka.admin  # noqa: F401


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _child(argv: list[str], env: dict[str, str], cwd: str, fds: list[int]) -> None:
    """In the forked child: become ``python -m kbroker ARGV``. Never returns: runpy runs
    kbroker/__main__.py, whose ``sys.exit(main())`` ends the process through the interpreter's
    normal exit (a usage error's SystemExit, an unhandled exception's traceback likewise)."""
    import runpy
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.path[0] = os.getcwd()       # as ``-m`` puts it (the resident's ``-c`` put '')
    sys.argv = ["-m", *argv]
    runpy.run_module("kbroker", run_name="__main__", alter_sys=True)
    sys.exit(0)


def serve(fd: int) -> None:
    """The resident process's loop: one request at a time on the socket ``fd`` until it closes."""
    _preload()
    # the imported objects are left out of the children's garbage collections (the collector
    # walking them was half of a forked command's CPU); the children's own objects are not
    import gc
    gc.freeze()
    sock = socket.socket(fileno=fd)
    buf = bytearray()
    while True:
        # the request line and its descriptors arrive in one message
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 65536, 3)
        except OSError:
            return
        if not msg:
            return
        buf += msg
        line = _read_line(sock, buf)
        request = json.loads(line)
        if len(fds) != 3 or _threads() != 1:
            for f in fds:
                os.close(f)
            sock.sendall(json.dumps({"error": f"{len(fds)} descriptors, {_threads()} threads"}).encode() + b"\n")
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            sock.close()
            _child(request["argv"], request["env"], request["cwd"], fds)
        for f in fds:
            os.close(f)
        sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        _, status = os.waitpid(pid, 0)
        sock.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode() + b"\n")


# --- the test process's side --------------------------------------------------------------------

class ResidentCli:
    """A resident process of the test process (``resident(env)``), started on first use with
    ``env``."""

    def __init__(self, env: dict[str, str]) -> None:
        from compat_tests.runner import die_with_parent
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.settings = _start_settings(env)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"from compat_tests.cli_fork import serve; serve({theirs.fileno()})"],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=None, cwd=ROOT, preexec_fn=die_with_parent,
            # its CPU during a test file counts for that file (tests/support/cputime.py)
            env=dict(env, **PER_FILE_ENV))
        theirs.close()
        self.sock = ours
        self.buf = bytearray()
        self.lock = threading.Lock()

    def close(self) -> None:
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def run(self, argv: list[str], input: str | None, env: dict[str, str], cwd: Path,
            timeout: float) -> subprocess.CompletedProcess | None:
        """The command's CompletedProcess (text, as ``subprocess.run(text=True)``), or None when
        it must run as a fresh process (busy)."""
        if _start_settings(env) != self.settings or not self.lock.acquire(blocking=False):
            return None
        try:
            return self._run(argv, input, env, cwd, timeout)
        finally:
            self.lock.release()

    def _run(self, argv, input, env, cwd, timeout):
        args = [sys.executable, "-m", "kbroker", *argv]
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
                (tempfile.TemporaryFile() if input is not None else open(os.devnull, "rb")) as stdin:
            if input is not None:
                stdin.write(input.encode())
                stdin.seek(0)
            request = json.dumps({"argv": argv, "env": env, "cwd": str(cwd)}).encode() + b"\n"
            socket.send_fds(self.sock, [request], [stdin.fileno(), out.fileno(), err.fileno()])
            self.sock.settimeout(30)
            answer = json.loads(_read_line(self.sock, self.buf))
            if "error" in answer:
                raise RuntimeError(f"the resident CLI process cannot fork: {answer['error']}")
            self.sock.settimeout(timeout)
            try:
                done = json.loads(_read_line(self.sock, self.buf))
            except TimeoutError:
                try:
                    os.kill(answer["pid"], 9)
                except ProcessLookupError:
                    pass
                self.sock.settimeout(30)
                json.loads(_read_line(self.sock, self.buf))
                raise subprocess.TimeoutExpired(args, timeout, _text(out), _text(err)) from None
            finally:
                self.sock.settimeout(None)
            return subprocess.CompletedProcess(args, done["returncode"], _text(out), _text(err))


def _text(f) -> str:
    """What ``subprocess.run(text=True)`` makes of the bytes: the locale's encoding, universal
    newlines."""
    import io
    f.seek(0)
    return io.TextIOWrapper(io.BytesIO(f.read()), newline=None).read()


_residents: dict[frozenset, ResidentCli] = {}
_residents_lock = threading.Lock()


def resident(env: dict[str, str]) -> ResidentCli:
    """The resident process started with ``env``'s start-up settings (one per set of them)."""
    key = frozenset(_start_settings(env).items())
    with _residents_lock:
        r = _residents.get(key)
        if r is None or r.proc.poll() is not None:
            r = _residents[key] = ResidentCli(env)
            atexit.register(r.close)
        return r


def run(argv: list[str], input: str | None, env: dict[str, str], cwd: Path,
        timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run([python, -m, kbroker, *argv], capture_output=True, text=True, ...)``,
    forked from the resident process when it can be (module docstring)."""
    if enabled():
        done = resident(env).run(argv, input, env, cwd, timeout)
        if done is not None:
            return done
    return subprocess.run([sys.executable, "-m", "kbroker", *argv], input=input, capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=cwd)


def repo_env() -> dict[str, str]:
    """This process's environment with the repository first on ``PYTHONPATH``: how the suites
    run ``python -m kbroker`` (one resident process per test process for all of them)."""
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def kbroker(*argv: str, input: str | None = None, timeout: float = 60,
            cwd: Path | str = ROOT) -> subprocess.CompletedProcess:
    """``run`` with the usual arguments: ``repo_env()``, the repository as working directory
    (or ``cwd``)."""
    return run(list(argv), input, repo_env(), Path(cwd), timeout)
