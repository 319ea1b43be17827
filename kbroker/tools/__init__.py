"""``kbroker`` client commands: daily operations against any Kafka-protocol broker, no JVM.

    kbroker topics   list | create | describe | alter-config | add-partitions | delete
    kbroker produce  TOPIC              (lines from stdin; keys, headers, partition)
    kbroker consume  TOPIC              (offsets, timestamps, groups, kcat-like -f formats)
    kbroker groups   list | describe | reset-offsets | delete
    kbroker configs  describe | alter   (topics, brokers, the broker default)
    kbroker cluster  describe | quorum  (DescribeCluster/Metadata, DescribeQuorum)
    kbroker acls     list | add | remove  (kafka-acls vocabulary; needs a broker authorizer)
    kbroker users    list | describe | set-password | delete   (SCRAM credentials)
    kbroker schemas  list | get | register | check | delete | config   (a schema registry's REST API)

Every command is a client of the wire protocol through kafka-python's admin client, producer
and consumer (a maintained library; kbroker never hand-writes a second client), so it works
against kbroker and Apache Kafka alike. (``schemas`` is the exception: it is a client of a schema
registry's REST API, with the standard library's urllib.) Rules:

* Start-up is fast: this package and its command modules import nothing heavy at module level
  (no trio, no broker, no kafka-python); a command imports kafka-python when it runs.
* Output is a readable table by default and JSON with ``--json``; errors are one line on
  stderr (``kbroker: ...``) and exit code 1; usage errors exit 2 (argparse).
* Names and defaults follow Kafka's tools (``kafka-topics``, ``kafka-consumer-groups``,
  ``kafka-configs``, ``kafka-metadata-quorum``, ``kafka-acls``): reset-offsets is a dry run unless
  ``--execute``.

Each module exposes ``add_parser(subparsers, common)``; ``kbroker.tools.cli`` registers them and
calls the ``func`` stored on the parsed namespace.
"""
from __future__ import annotations

from kbroker.tools import acls, configs, consume, groups, produce, schemas, topics, users
from kbroker.tools.common import common_parent

COMMANDS = (topics, produce, consume, groups, configs, acls, users, schemas)


def add_parsers(sub) -> None:
    """Register every client command on ``sub`` (the top-level subparsers)."""
    parent = common_parent()
    for module in COMMANDS:
        module.add_parser(sub, parent)
