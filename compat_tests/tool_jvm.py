"""A resident JVM per test process for Kafka's command-line tools (compat_tests/cli.py uses it).

Starting a JVM for each tool run cost about 0.9 s of CPU on the suite's 2-core machine, and the
suites run a few hundred tools. `ResidentToolJvm` starts `KafkaToolServer`
(compat_tests/tool_jvm/KafkaToolServer.java, whose header says how a run is isolated) once and
hands it one tool run at a time: main class, arguments and the whole stdin go in; the tool's
stdout and stderr come back as it writes them, then its exit code. The rules kept:

- a tool run sees what a fresh JVM gives it: exit codes, stdin, stdout and stderr, shutdown
  hooks; a run that leaves threads behind makes the JVM halt after its reply, and a tool that
  calls System.exit ends the JVM (its code is the process's); the next run starts a new one;
  what differs is below the tool's main: a stack trace's last frames are the reflective call;
- a run over its timeout kills the JVM's process group (as with a fresh JVM) and raises;
- a tool that cannot share a JVM (FRESH_ONLY: System.exit and the JVM's own shutdown hooks),
  a second run while one is in progress (tests with threads), a working directory other than
  the JVM's, or KBROKER_TOOL_JVM=0 gets a fresh JVM, as before.

The classes are compiled with the JDK's javac into .cache/tool-jvm/<hash of the source>/ (an
ignored, shared folder; `make kafka-tool-jvm` does it up front, idempotently).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import select
import signal
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from tests.support.cputime import PER_FILE_ENV

ROOT = Path(__file__).resolve().parent.parent
SOURCE = Path(__file__).resolve().parent / "tool_jvm" / "KafkaToolServer.java"
MAIN = "KafkaToolServer"
ENV_SWITCH = "KBROKER_TOOL_JVM"

# Tools that call System.exit or add JVM shutdown hooks of their own, or leave a client open at
# their exit (TransactionsCommand's admin client): always a fresh JVM.
FRESH_ONLY = frozenset({
    "org.apache.kafka.tools.TransactionsCommand",
    "org.apache.kafka.tools.VerifiableProducer",
    "org.apache.kafka.tools.VerifiableConsumer",
    "org.apache.kafka.tools.VerifiableShareConsumer",
})


class ToolTimeout(Exception):
    """The run passed its timeout; the JVM was killed. Carries what the tool printed."""

    def __init__(self, stdout: str, stderr: str):
        super().__init__("tool run timed out")
        self.stdout = stdout
        self.stderr = stderr


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1") != "0"


def build() -> Path:
    """The folder holding the compiled server (compiled now if missing); idempotent."""
    from compat_tests.kafka_runner import java
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    out = ROOT / ".cache" / "tool-jvm" / digest
    if (out / f"{MAIN}.class").exists():
        return out
    javac = Path(os.path.realpath(java())).parent / "javac"
    tmp = out.with_name(f"{digest}.{os.getpid()}.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([str(javac) if javac.exists() else "javac", "--release", "11",
                             "-d", str(tmp), str(SOURCE)], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"javac {SOURCE} failed:\n{result.stdout}\n{result.stderr}")
    try:
        os.replace(tmp, out)
    except OSError:             # another process published it first
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return out


def _text(data: bytearray) -> str:
    """Bytes as text the way subprocess's text mode gives them (universal newlines)."""
    return data.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _frame(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


class ResidentToolJvm:
    """One KafkaToolServer process; `run` is for one caller at a time (see `try_run`)."""

    def __init__(self, command: list[str], log_path: Path):
        from compat_tests.runner import die_with_parent
        self.cwd = os.getcwd()
        self.log = open(log_path, "ab")
        # its CPU during a test file counts for that file (tests/support/cputime.py)
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, start_new_session=True,
                                     preexec_fn=die_with_parent, env=dict(os.environ, **PER_FILE_ENV))
        self.lock = threading.Lock()
        self.runs = 0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.log):
            try:
                f.close()
            except OSError:
                pass

    def run(self, main: str, args: list[str], input: str | None,
            timeout: float) -> tuple[int, str, str, bool]:
        """(exit code, stdout, stderr, jvm still usable). Raises ToolTimeout after `timeout`."""
        request = _frame(main.encode()) + struct.pack(">i", len(args))
        request += b"".join(_frame(a.encode()) for a in args)
        request += _frame((input or "").encode())
        self.runs += 1
        out, err = bytearray(), bytearray()
        try:
            self.proc.stdin.write(request)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass                # it died: the reads below see EOF
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = bytearray()
        while True:
            # frames: kind byte, int32 length, bytes; 'x' is kind + int32 code + byte tainted
            while len(buf) >= 5:
                kind = buf[0]
                if kind == ord("x"):
                    if len(buf) < 6:
                        break
                    code, tainted = struct.unpack(">iB", bytes(buf[1:6]))
                    if tainted:
                        self.proc.wait()
                    return code, _text(out), _text(err), not tainted
                (n,) = struct.unpack(">i", bytes(buf[1:5]))
                if len(buf) < 5 + n:
                    break
                (out if kind == ord("o") else err).extend(buf[5:5 + n])
                del buf[:5 + n]
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise ToolTimeout(_text(out), _text(err))
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:       # the tool ended the JVM (System.exit): its code is the process's
                code = self.proc.wait()
                return code, _text(out), _text(err), False
            buf.extend(chunk)


_JVMS: dict[tuple, ResidentToolJvm] = {}
_JVMS_LOCK = threading.Lock()


def _shutdown() -> None:
    for jvm in list(_JVMS.values()):
        jvm.kill()
        log = Path(jvm.log.name)
        if log.exists() and log.stat().st_size == 0:
            log.unlink()        # nothing to tell (a log says which run left threads behind)
    _JVMS.clear()


atexit.register(_shutdown)


def try_run(main: str, args: list[str], *, input: str | None, timeout: float,
            key: tuple, jvm_command) -> tuple[int, str, str] | None:
    """Run one tool in this process's resident JVM, or None when it must get a fresh JVM.

    `key` names the JVM (the java binary, Kafka's jars, the log config: a change of release gets
    its own); `jvm_command(classpath_tail)` builds its command line (java, flags, a class path
    ending with `classpath_tail`), without the main class. Raises ToolTimeout (the JVM was killed).
    """
    if not enabled() or main in FRESH_ONLY:
        return None
    with _JVMS_LOCK:
        jvm = _JVMS.get(key)
        if jvm is not None and (not jvm.alive() or jvm.cwd != os.getcwd()):
            if jvm.cwd != os.getcwd() and jvm.alive() and jvm.lock.locked():
                return None
            jvm.kill()
            jvm = None
        if jvm is None:
            log = Path(tempfile.gettempdir()) / f"kbroker-tool-jvm-{os.getpid()}.log"
            jvm = _JVMS[key] = ResidentToolJvm([*jvm_command(str(build())), MAIN], log)
    if not jvm.lock.acquire(blocking=False):
        return None             # another thread's tool is running in it
    try:
        try:
            code, out, err, usable = jvm.run(main, args, input, timeout)
        except ToolTimeout:
            with _JVMS_LOCK:
                if _JVMS.get(key) is jvm:
                    del _JVMS[key]
            raise
        if not usable:
            jvm.kill()
            with _JVMS_LOCK:
                if _JVMS.get(key) is jvm:
                    del _JVMS[key]
        return code, out, err
    finally:
        jvm.lock.release()
