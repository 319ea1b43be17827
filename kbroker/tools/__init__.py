"""``kbroker`` client commands: daily operations against any Kafka-protocol broker, no JVM.

    kbroker topics   list | create | describe | alter-config | add-partitions | delete
    kbroker produce  TOPIC              (lines from stdin; keys, headers, partition)
    kbroker consume  TOPIC              (offsets, timestamps, groups, kcat-like -f formats)
    kbroker groups   list | describe | reset-offsets | delete   (classic, consumer, share, streams)
    kbroker configs  describe | alter   (topics, brokers, the broker default, groups)
    kbroker cluster  describe | quorum  (DescribeCluster/Metadata, DescribeQuorum)
    kbroker acls     list | add | remove  (kafka-acls vocabulary; needs a broker authorizer)
    kbroker users    list | describe | set-password | delete   (SCRAM credentials)
    kbroker schemas  list | get | register | check | delete | config   (a schema registry's REST API)

Every command is a client of the wire protocol through confluent-kafka's (librdkafka's)
AdminClient, Producer and Consumer, a maintained client that speaks what the broker speaks
(KIP-848 groups, SCRAM, ACLs, Kafka 4's admin APIs); the few calls it does not make (group
metadata of every type, DescribeQuorum, Metadata's offline replicas) go over the project's own
codec (``wire_client``, ``group_reads``). So the commands work against kbroker and Apache
Kafka alike. (``schemas`` is the exception: it is a client of a schema registry's REST API,
with the standard library's urllib.) Rules:

* Start-up is fast: this package and its command modules import nothing heavy at module level
  (no trio, no broker, no confluent-kafka); a command imports its client when it runs.
* Connection options on every command (``client_config``): ``-b``/``--bootstrap-server``,
  ``--command-config FILE`` (a Kafka client properties file), ``-X KEY=VALUE``, ``--profile
  NAME`` (``~/.config/kbroker/profiles.toml``), ``--timeout SECONDS`` (default 15).
* Fail fast and say why (``errors``, ``common.Connection``): an unreachable bootstrap, a
  refused authentication, a missing ACL or an unknown partition ends the command at once
  with one sentence naming the address, principal, resource or partition.
* Output is a readable table by default and JSON with ``--json``. Exit codes: 0 success;
  1 the command failed (the cluster refused it, could not be reached, or did not answer in
  ``--timeout``), as one line ``kbroker: <sentence>`` on stderr; 2 usage errors (argparse, bad
  option values, an unreadable ``--command-config`` or profile); 130 interrupted (Ctrl-C).
* Names and defaults follow Kafka's tools (``kafka-topics``, ``kafka-consumer-groups``,
  ``kafka-share-groups``, ``kafka-streams-groups``, ``kafka-configs``, ``kafka-metadata-quorum``,
  ``kafka-acls``): reset-offsets is a dry run unless ``--execute``.

Each module exposes ``add_parser(subparsers, common)``; ``kbroker.tools.cli`` registers them and
calls the ``func`` stored on the parsed namespace.
"""
from __future__ import annotations

import importlib

# loaded when the full command line is built, not by ``kbroker serve`` (whose start-up
# imports this package for ``kbroker.tools.cli``)
_COMMAND_MODULES = ("topics", "produce", "consume", "groups", "configs", "acls", "users", "schemas")


def __getattr__(name: str):
    """``COMMANDS`` and ``common_parent`` on first use (PEP 562)."""
    if name == "COMMANDS":
        return tuple(importlib.import_module(f"{__name__}.{m}") for m in _COMMAND_MODULES)
    if name == "common_parent":
        from kbroker.tools.common import common_parent
        return common_parent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def add_parsers(sub) -> None:
    """Register every client command on ``sub`` (the top-level subparsers)."""
    from kbroker.tools.common import common_parent
    parent = common_parent()
    for module in __getattr__("COMMANDS"):
        module.add_parser(sub, parent)
