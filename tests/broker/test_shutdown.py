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

from kafka import KafkaConsumer, KafkaProducer

from tests.cluster.support import wait_for
from tests.support.broker_proc import BrokerProcess
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
