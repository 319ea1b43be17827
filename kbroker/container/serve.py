"""``kbroker serve`` as the image runs it: the same command, plus the start-up lines of Kafka's
own log that container tooling waits for.

    python -m kbroker.container.serve --config FILE [kbroker serve arguments]

testcontainers' Kafka modules decide that the broker is up by matching its log, not by
connecting: ``[KafkaServer id=N] started`` (Kafka's ZooKeeper-mode broker: testcontainers-python
without ``with_kraft()``, testcontainers-java's Confluent container), ``Kafka Server started``
(Kafka's KRaft server: testcontainers-python's ``with_kraft()``) and ``Transitioning from
RECOVERY to RUNNING`` (Kafka's broker lifecycle once the broker is unfenced:
testcontainers-java's ``org.testcontainers.kafka.KafkaContainer`` and testcontainers-go).
Right after kbroker's own ``kbroker ready:`` line — the moment the broker serves clients — one
line carrying each of those phrases is logged by the ``kbroker.container`` logger, so every one
of those waits ends when kbroker is ready, and not before.

Rules kept: the broker runs in this process (``exec``'d by the entrypoint, so it stays PID 1
and receives ``docker stop``'s SIGTERM), with the log format and level ``kbroker serve`` uses;
the broker code knows nothing of this.
"""
from __future__ import annotations

import logging
import re
import sys

_READY = re.compile(r"^kbroker ready: .*\(node (-?\d+),")
# the format kbroker.tools.cli gives ``kbroker serve``'s log
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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


def _level(argv: list[str]) -> str:
    for i, a in enumerate(argv):
        if a == "--log-level" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--log-level="):
            return a.split("=", 1)[1]
    return "INFO"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    level = _level(args)
    # the stderr handler `kbroker serve` would install (its basicConfig then finds it in place);
    # a level argparse refuses falls back to INFO here and is reported by kbroker.tools.cli
    logging.basicConfig(level=level if level in logging.getLevelNamesMapping() else "INFO",
                        stream=sys.stderr, format=LOG_FORMAT)
    logging.getLogger().addHandler(KafkaStartLines())
    from kbroker.tools.cli import main as cli_main
    return cli_main(["serve", *args])


if __name__ == "__main__":
    sys.exit(main())
