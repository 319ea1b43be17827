"""The last resort of ``kbroker serve``'s shutdown (kbroker/server/signals.py): a second
signal ends the process even when the orderly stop is stuck on a slow disk, and nothing
acknowledged is lost — on a real process over a real (FUSE-slowed) file system.

The node's log directory is a ``tests/support/slow_fs.py`` mount whose every write and fsync
then takes 10 s, so the stop (metadata records of the controlled shutdown, log flushes, the
clean-shutdown marker) needs many times that. Only the hard exit gives the exit code 128 +
SIGTERM; the restart must recover the logs (no clean-shutdown marker) and serve every
acknowledged record.
"""
from __future__ import annotations

import signal
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer

from tests.cluster.support import wait_for
from tests.support.broker_proc import BrokerProcess
from tests.support.fake_clock import FakeClock
from tests.support.slow_fs import SlowDisk


def test_a_second_signal_ends_a_node_stuck_on_a_slow_disk(tmp_path):
    disk = SlowDisk(tmp_path / "backing", tmp_path / "mnt", tmp_path / "delay").start()
    broker = BrokerProcess(tmp_path / "mnt" / "data",
                           overrides={"broker.session.timeout.ms": "120000"})
    broker.log_path = tmp_path / "broker.log"          # the log itself is not slowed
    try:
        broker.start()
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        acked = [producer.send("kept", str(i).encode()).get(timeout=30).offset for i in range(20)]
        producer.close()

        disk.set_delay(10_000)
        broker.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: "received SIGTERM" in broker.log_text(), what="the first signal taken")
        broker.proc.send_signal(signal.SIGTERM)
        assert broker.proc.wait(timeout=60) == 128 + signal.SIGTERM, broker.log_text()[-3000:]
        text = broker.log_text()
        assert "received SIGTERM, forcing shutdown" in text
        assert "still stopping 3 s after the second SIGTERM; exiting now" in text
        assert "shut down cleanly" not in text

        disk.set_delay(0)
        broker.proc = None
        mark = len(broker.log_text())
        broker.start()
        assert "(clean shutdown before: False)" in broker.log_text()[mark:]
        consumer = KafkaConsumer("kept", bootstrap_servers=broker.bootstrap,
                                 auto_offset_reset="earliest", consumer_timeout_ms=10000)
        got = {m.offset: int(m.value) for m in consumer}
        consumer.close()
        assert {o: i for i, o in enumerate(acked)}.items() <= got.items()
    finally:
        broker.kill()
        disk.stop()


def test_stopping_and_continuing_a_node_is_no_signal_to_stop(tmp_path):
    """Under libfaketime (as in the clock-step fault tests) SIGSTOP/SIGCONT made
    ``sigtimedwait`` return an unfilled siginfo: its leftover number read as SIGINT (a
    graceful stop nobody asked for) or as no signal at all (the watcher thread died and the
    next SIGTERM was never taken). A paused and continued node keeps serving, and one SIGTERM
    then stops it cleanly."""
    clock = FakeClock(tmp_path / "faketime")
    broker = BrokerProcess(tmp_path / "data")
    broker.env = clock.env()
    try:
        broker.start()
        assert "libfaketime" in Path(f"/proc/{broker.proc.pid}/maps").read_text()
        for _ in range(8):
            broker.proc.send_signal(signal.SIGSTOP)
            time.sleep(0.3)
            broker.proc.send_signal(signal.SIGCONT)
            time.sleep(0.2)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        producer.send("after-pauses", b"x").get(timeout=30)
        producer.close()
        text = broker.log_text()
        assert "received" not in text and "Traceback" not in text, text[-3000:]
        assert broker.stop() == 0
        text = broker.log_text()
        assert text.count("received SIGTERM") == 1 and "forcing" not in text, text[-3000:]
        assert "shut down cleanly" in text, text[-3000:]
    finally:
        broker.kill()
