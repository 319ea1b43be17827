"""README.md is executable: its API table matches the registry, and its code blocks run as
written.

Every fenced block carries a marker comment on the line before it:
``<!-- readme-test: python -->`` (run with this Python), ``run`` (the block is one bash script,
``set -euo pipefail``, from the repository root), ``serve`` (each line starts a broker that must
log its ready line and stop cleanly on SIGTERM) or ``skip (reason)``; an unmarked block fails
the test, so nothing is left out silently. All blocks run in README order against one
``kbroker serve --dev`` started by the test. The only change to the text: the broker address
and ports (``127.0.0.1:9092``, ``--port``, ``--listen``) become free ports of this machine,
and ``kbroker`` commands without ``-b`` find the broker through ``$KBROKER_BOOTSTRAP_SERVERS``
(as the README documents).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.broker_proc import REPO_ROOT, free_port

README = REPO_ROOT / "README.md"
MARKER = re.compile(r"<!-- readme-test: (python|run|serve|skip)\b[^>]*-->")


def test_readme_api_table_matches_registry():
    r = subprocess.run([sys.executable, "tools/gen_api_table.py", "--check"], cwd=REPO_ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def blocks(text: str) -> list[tuple[str, str, int]]:
    """(mode, code, line number) of every fenced block; mode from the marker before it."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start = i
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            m = MARKER.search(lines[start - 1]) if start else None
            out.append((m.group(1) if m else "unmarked", "\n".join(lines[start + 1:j]), start + 1))
            i = j + 1
        else:
            i += 1
    return out


def test_every_readme_block_is_marked():
    unmarked = [line for mode, _, line in blocks(README.read_text()) if mode == "unmarked"]
    assert not unmarked, f"README.md blocks without a readme-test marker at lines {unmarked}"


def _env():
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _wait_ready(proc, log_path: Path, timeout=60.0) -> None:
    deadline = time.monotonic() + timeout
    while "kbroker ready:" not in log_path.read_text(errors="replace"):
        assert proc.poll() is None, f"exited {proc.returncode}: {log_path.read_text(errors='replace')[-2000:]}"
        assert time.monotonic() < deadline, log_path.read_text(errors="replace")[-2000:]
        time.sleep(0.1)


def _stop(proc) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


def _with_port(line: str, port: int) -> str:
    """A serve line with its listener on ``port``."""
    if re.search(r"--port \d+", line):
        return re.sub(r"--port \d+", f"--port {port}", line)
    if re.search(r"--listen \S+:\d+", line):
        return re.sub(r"--listen (\S+):\d+", rf"--listen \1:{port}", line)
    return line + f" --port {port}"


def _own_rest_port(line: str) -> str:
    """--dev turns the REST gateway on at 127.0.0.1:8082: give the line a port of its own."""
    return line + " --rest-proxy 127.0.0.1:0" if "--dev" in line.split() else line


@pytest.mark.slow
def test_readme_code_blocks_run_as_written(tmp_path):
    if shutil.which("kcat") is None:
        pytest.fail("kcat is missing: `make kcat` installs it (the README uses it)")
    env = _env()
    work = tmp_path / "project"
    work.mkdir()
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    env["KBROKER_BOOTSTRAP_SERVERS"] = bootstrap
    rest = f"127.0.0.1:{free_port()}"      # the REST gateway --dev serves on 8082
    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as log:
        broker = subprocess.Popen([sys.executable, "-m", "kbroker", "serve", "--dev", "--port", str(port),
                                   "--rest-proxy", rest], cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(broker, log_path)
        ran = {"python": 0, "run": 0, "serve": 0}
        for mode, code, line in blocks(README.read_text()):
            if mode not in ran:
                continue
            ran[mode] += 1
            code = code.replace("127.0.0.1:9092", bootstrap).replace("127.0.0.1:8082", rest)
            if mode == "python":
                r = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True,
                                   text=True, timeout=120)
                assert r.returncode == 0, f"README line {line}:\n{code}\n{r.stdout}\n{r.stderr}"
                assert "hello" in r.stdout, f"README line {line}: {r.stdout}"
            elif mode == "run":
                r = subprocess.run(["bash", "-c", "set -euo pipefail\n" + code], cwd=REPO_ROOT, env=env,
                                   capture_output=True, text=True, timeout=300)
                assert r.returncode == 0, f"README line {line}:\n{code}\n{r.stdout}\n{r.stderr}"
                assert "Traceback" not in r.stderr, r.stderr
            else:
                _run_serve_lines(code, line, tmp_path, env)
        assert ran["python"] >= 2 and ran["run"] >= 3 and ran["serve"] >= 1, ran
        # the confluent-kafka snippet waits for CreateTopics: the topic has its 3 partitions,
        # not the 1 of an auto-creation by the producer's first send
        from kafka import KafkaAdminClient
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            [events2] = admin.describe_topics(["events2"])
            assert len(events2["partitions"]) == 3
        finally:
            admin.close()
        assert (work / "data" / "meta.properties").exists()   # --dev: data in the project folder
    finally:
        assert _stop(broker) == 0


def _run_serve_lines(code: str, line_no: int, tmp_path: Path, env) -> None:
    for i, line in enumerate(l.split("#")[0].strip() for l in code.splitlines()):
        if not line:
            continue
        cwd = tmp_path / f"serve-{line_no}-{i}"
        cwd.mkdir()
        # a stock Kafka server.properties (the README's --config line brings its own file)
        (cwd / "server.properties").write_text(
            "process.roles=broker,controller\nnode.id=1\nlisteners=PLAINTEXT://127.0.0.1:9092\n"
            "num.network.threads=3\nnum.partitions=1\nlog.dirs=./kafka-data\n")
        log_path = cwd / "out.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(["bash", "-c", "exec " + _own_rest_port(_with_port(line, free_port()))], cwd=cwd,
                                    env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_ready(proc, log_path)
        finally:
            rc = _stop(proc)
        assert rc == 0, f"README line {line_no}: {line!r} exited {rc}\n{log_path.read_text()[-2000:]}"
