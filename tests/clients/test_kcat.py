"""kcat (librdkafka's command-line client) against a real kbroker process.

kcat is required, not optional: the Makefile's kcat target installs Debian's package.
Covers produce with keys, headers and each codec, consume with a format string, offsets
by timestamp (-Q), and consuming from the end.
"""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from .conftest import PAYLOAD_CODECS

KCAT = shutil.which("kcat") or shutil.which("kafkacat")


def kcat(bootstrap, *args, input: bytes | None = None, timeout=30) -> str:
    assert KCAT, "kcat is not installed (see the Makefile's kcat target)"
    res = subprocess.run([KCAT, "-b", bootstrap, *args], input=input, capture_output=True,
                         timeout=timeout)
    assert res.returncode == 0, res.stderr.decode()
    return res.stdout.decode()


def test_kcat_is_installed():
    assert KCAT, "kcat is required for the client suite (make kcat)"


@pytest.mark.parametrize("codec", PAYLOAD_CODECS)
def test_produce_consume_keys_headers(bootstrap, make_topic, codec):
    topic = make_topic(1)
    lines = b"".join(b"key%d:value %d\n" % (i, i) for i in range(50))
    kcat(bootstrap, "-P", "-t", topic, "-K", ":", "-z", codec, "-H", "source=kcat",
         "-X", "enable.idempotence=false", input=lines)
    out = kcat(bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
               "-f", "%p|%o|%k|%s|%h\n")
    rows = [line.split("|") for line in out.splitlines()]
    assert [r[1] for r in rows] == [str(i) for i in range(50)]
    assert rows[7] == ["0", "7", "key7", "value 7", "source=kcat"]


def test_offsets_by_timestamp_and_tail(bootstrap, make_topic):
    topic = make_topic(2)
    now = int(time.time() * 1000)
    kcat(bootstrap, "-P", "-t", topic, "-p", "1", input=b"a\nb\nc\n")
    out = kcat(bootstrap, "-Q", "-t", f"{topic}:1:{now - 60_000}")
    assert f"{topic} [1] offset 0" in out
    out = kcat(bootstrap, "-Q", "-t", f"{topic}:1:{now + 3_600_000}")
    assert f"{topic} [1] offset -1" in out
    out = kcat(bootstrap, "-C", "-t", topic, "-p", "1", "-o", "-2", "-e", "-q")
    assert out.split() == ["b", "c"]
    out = kcat(bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q")
    assert out == ""
