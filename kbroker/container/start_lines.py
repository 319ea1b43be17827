"""The start-up lines of Kafka's own log that container tooling waits for, logged by kbroker
once it is ready (``kbroker serve --kafka-start-lines``; the image's entry points pass it).

testcontainers' Kafka modules decide that the broker is up by matching its log, not by
connecting: ``[KafkaServer id=N] started`` (Kafka's ZooKeeper-mode broker: testcontainers-python
without ``with_kraft()``, testcontainers-java's Confluent container), ``Kafka Server started``
(Kafka's KRaft server: testcontainers-python's ``with_kraft()``) and ``Transitioning from
RECOVERY to RUNNING`` (Kafka's broker lifecycle once the broker is unfenced:
testcontainers-java's ``org.testcontainers.kafka.KafkaContainer`` and testcontainers-go).
Right after kbroker's own ``kbroker ready:`` line — the moment the broker serves clients — one
line carrying each of those phrases is logged by the ``kbroker.container`` logger, so every one
of those waits ends when kbroker is ready, and not before.

Rules kept: a logging handler only, added to the root logger; the broker code knows nothing of
it, and nothing is logged twice (once per process).
"""
from __future__ import annotations

import logging
import re

_READY = re.compile(r"^kbroker ready: .*\(node (-?\d+),")


def kafka_start_lines(node_id: str) -> list[str]:
    """The lines logged after kbroker's ready line, each holding one phrase a tool waits for."""
    return [
        f"[KafkaServer id={node_id}] started (for tools that wait on Kafka's start-up log: "
        "kbroker serves clients)",
        f"[KafkaRaftServer nodeId={node_id}] Kafka Server started",
        f"[BrokerLifecycleManager id={node_id}] Transitioning from RECOVERY to RUNNING",
    ]


class KafkaStartLines(logging.Handler):
    """Logs ``kafka_start_lines`` once, after the first ``kbroker ready:`` record it sees."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.done = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.done:
            return
        m = _READY.match(record.getMessage())
        if m:
            self.done = True
            out = logging.getLogger("kbroker.container")
            for line in kafka_start_lines(m.group(1)):
                out.info("%s", line)


def install() -> KafkaStartLines:
    """Add the handler to the root logger (after ``kbroker serve`` configured logging)."""
    handler = KafkaStartLines()
    logging.getLogger().addHandler(handler)
    return handler
