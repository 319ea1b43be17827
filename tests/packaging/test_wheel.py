"""The package as a new user gets it: ``python -m build`` makes an sdist and, from that sdist, a
wheel; the wheel installed into a fresh virtualenv (its dependencies from pip's cache or PyPI)
gives a working ``kbroker`` command and registers the pytest plugin by its entry point alone.

Nothing here imports the work tree's kbroker in the child processes: they run in the fresh
venv from a temporary folder with PYTHONPATH and pytest's environment variables removed, and
one check asserts that ``import kbroker`` there resolves inside the venv.
"""
from __future__ import annotations

import os
import re
import signal
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import kbroker

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

INNER_TEST = '''
from confluent_kafka import Consumer, Producer, TopicPartition


def test_a_record_through_the_installed_plugin(kbroker, kafka_topic):
    # confluent-kafka comes with the wheel (the client of kbroker's own commands)
    producer = Producer({"bootstrap.servers": kbroker.bootstrap_servers, "acks": "all"})
    producer.produce(kafka_topic, b"from-the-wheel")
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kbroker.bootstrap_servers, "group.id": "wheel",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(kafka_topic, 0, 0)])
    values = []
    for _ in range(100):
        message = consumer.poll(0.3)
        if message is not None and message.error() is None:
            values.append(message.value())
            break
    consumer.close()
    assert values == [b"from-the-wheel"]
'''


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "VIRTUAL_ENV")
           and not k.startswith("PYTEST_XDIST")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run(cmd, cwd, timeout=600) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=clean_env(), capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel, built from a copy of the tracked files: a build writes into
    its source tree (build/, *.egg-info), so two workers building from the checkout at once
    would race."""
    src = tmp_path_factory.mktemp("src")
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source, target = REPO / name, src / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, src], cwd=out)
    return out


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and pytest (the version this suite runs on)."""
    root = tmp_path_factory.mktemp("venv")
    # no pip inside (ensurepip costs seconds of CPU): this suite's pip installs into it
    run([sys.executable, "-m", "venv", "--without-pip", root / "v"], cwd=root)
    wheel = next(dist.glob("kbroker-*.whl"))
    run([sys.executable, "-m", "pip", "--python", root / "v/bin/python", "install", "-q",
         "--disable-pip-version-check", wheel, f"pytest=={pytest.__version__}"], cwd=root)
    return root / "v"


def test_sdist_and_wheel_carry_the_version_the_scripts_and_every_data_file(dist):
    version = kbroker.__version__
    assert sorted(p.name for p in dist.iterdir()) == [
        f"kbroker-{version}-py3-none-any.whl", f"kbroker-{version}.tar.gz"]
    with zipfile.ZipFile(dist / f"kbroker-{version}-py3-none-any.whl") as z:
        names = set(z.namelist())
        entry_points = z.read(f"kbroker-{version}.dist-info/entry_points.txt").decode()
    # every file of the package that is not Python source (schemas, the console's assets)
    data = {str(p.relative_to(REPO)) for p in (REPO / "kbroker").rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
    assert {"kbroker/wire/schema/messages.json", "kbroker/console/static/index.html"} <= data
    assert data - names == set()
    assert re.search(r"^kbroker = kbroker\.__main__:main$", entry_points, re.M)
    assert re.search(r"^\[pytest11\]\nkbroker\.testing\.pytest_plugin = kbroker\.testing\.pytest_plugin$",
                     entry_points, re.M)


def test_installed_command_prints_the_version_and_serves(venv, tmp_path):
    out = run([venv / "bin/kbroker", "--version"], cwd=tmp_path).stdout
    assert out.strip() == f"kbroker {kbroker.__version__}"
    where = run([venv / "bin/python", "-c", "import kbroker; print(kbroker.__file__)"],
                cwd=tmp_path).stdout.strip()
    assert Path(where).is_relative_to(venv), where
    proc = subprocess.Popen([venv / "bin/kbroker", "serve", "--port", "0", "--data-dir",
                             tmp_path / "data"], cwd=tmp_path, env=clean_env(),
                            stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        for line in proc.stderr:        # ends when the process does
            seen.append(line)
            if "kbroker ready: listening on PLAINTEXT://127.0.0.1:" in line:
                break
        assert "kbroker ready:" in "".join(seen), "".join(seen)[-3000:]
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, rest[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_pytest_session_uses_only_the_installed_plugin(venv, tmp_path):
    (tmp_path / "test_uses_plugin.py").write_text(INNER_TEST)
    r = run([venv / "bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "test_uses_plugin.py"], cwd=tmp_path)
    assert re.search(r"\b1 passed\b", r.stdout), r.stdout[-3000:]
