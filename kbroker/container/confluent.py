"""The steps behind the image's ``/etc/confluent/docker/`` scripts: what tools written for
Confluent's ``cp-kafka`` / ``confluent-local`` images run to start a broker.

    python -m kbroker.container.confluent configure   # /etc/confluent/docker/configure
    python -m kbroker.container.confluent launch      # /etc/confluent/docker/launch (exec)

Those images split the start into ``configure`` (the ``KAFKA_*`` variables → the properties
file ``/etc/kafka/kafka.properties``), ``ensure`` (KRaft: ``kafka-storage format`` with
``CLUSTER_ID``) and ``launch`` (the broker in the foreground); ``run`` chains the three.
testcontainers' modules call them one by one and edit them on the way (they delete the
``KAFKA_ZOOKEEPER_CONNECT`` lines of ``configure`` and append a ``kafka-storage format`` line to
it; they empty ``ensure``), so the scripts stay small shell files that call this module, and
``kafka-storage`` is kbroker's ``kbroker storage`` (the same verbs).

Rules kept, as in Confluent's image: the variables are read with Kafka's image rules
(``kbroker.container.env``; ZooKeeper settings become one combined KRaft node), the data goes
to ``/var/lib/kafka/data`` unless ``KAFKA_LOG_DIRS`` says otherwise, and ``cluster.id`` is not
written into the file: the id is the one ``kafka-storage format`` wrote to ``meta.properties``
(a single combined node that nobody formatted formats itself with a new id). A wrong setting
ends ``configure`` with the one-line message of the entrypoint (exit 2).
"""
from __future__ import annotations

import os
import shlex
import sys

from kbroker.container import entrypoint

PROPERTIES_DIR = "/etc/kafka"
PROPERTIES_NAME = "kafka.properties"
DATA_DIR = "/var/lib/kafka/data"      # Confluent's image's log.dirs


def properties_path() -> str:
    return os.path.join(PROPERTIES_DIR, PROPERTIES_NAME)


def configure(environ) -> str:
    path, _ = entrypoint.configure(environ, dirs=(PROPERTIES_DIR,), name=PROPERTIES_NAME,
                                   cluster_id=False, default_log_dirs=DATA_DIR)
    return path


def launch(environ) -> None:
    """Become the broker on the file ``configure`` wrote (PID of the calling script)."""
    path = properties_path()
    if not os.path.exists(path):
        entrypoint.fail(f"{path} does not exist: run /etc/confluent/docker/configure first", 2)
    try:
        level = entrypoint.cenv.log_level(environ)
    except ValueError as e:
        entrypoint.fail(f"configuration error: {e}", 2)
    args = (["--log-level", level] if level else []) + shlex.split(environ.get("KBROKER_OPTS", ""))
    os.umask(0o002)
    cmd = [sys.executable, "-m", "kbroker", "serve", "--kafka-start-lines", "--config", path, *args]
    entrypoint.say("exec kbroker " + " ".join(cmd[3:]))
    os.execv(sys.executable, cmd)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["configure"]:
        configure(os.environ)
        return 0
    if args == ["launch"]:
        launch(os.environ)
    print("usage: python -m kbroker.container.confluent configure|launch", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
