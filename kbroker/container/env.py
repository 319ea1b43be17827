"""Kafka's container configuration rules, without I/O (the model: apache/kafka's image,
``docker/jvm/launch`` → ``KafkaDockerWrapper setup``, checked against Kafka 4.3.1).

- Every ``KAFKA_<NAME>`` environment variable is a ``server.properties`` key: drop the prefix,
  lower-case, ``_`` → ``.``, then ``...`` → ``-`` and ``..`` → ``_``; so ``KAFKA_NODE_ID`` is
  ``node.id``, ``KAFKA_A__B`` is ``a_b`` and ``KAFKA_A___B`` is ``a-b``. The variables of
  Kafka's launch scripts (heap, JVM and JMX options, log4j) are not keys (``NOT_KEYS``); the
  ones that make sense here are translated (``KAFKA_LOG4J_ROOT_LOGLEVEL`` → the log level).
  Neither are ``KAFKA_REST_*`` (Confluent's REST proxy, beside the broker in its images).
  Kafka strips every ``KAFKA_`` inside the name; only the prefix is stripped here, so that
  ``KAFKA_KAFKA_METRICS_REPORTERS`` is ``kafka.metrics.reporters``.
- A mounted ``server.properties`` is the base and the environment's keys are appended to it
  (later keys win). With neither a mounted file nor any key in the environment, the image's
  default file is used: one combined node (broker + controller), Kafka's image defaults.
  Environment keys replace the default file as a whole, as in Kafka's image: they do not
  inherit it.
- ``KAFKA_LISTENERS`` unset and ``KAFKA_ADVERTISED_LISTENERS`` set (and the node is not a
  controller only): the listeners are the advertised ones bound to ``0.0.0.0``. A controller
  only node with ``KAFKA_ADVERTISED_LISTENERS`` is refused (``render`` raises ValueError).
- ``CLUSTER_ID`` is ``cluster.id``; unset, Kafka's image default id is used (every node of one
  cluster started without it therefore agrees).
- ZooKeeper settings (``KAFKA_ZOOKEEPER_CONNECT`` and every other ``zookeeper.*`` key, as the
  ZooKeeper modes of Confluent's image and of testcontainers' Kafka modules set them) are left
  out: kbroker has no ZooKeeper mode, and a node without ``controller.quorum.voters`` is one
  combined KRaft node (broker and its own controller), which is what a single ZooKeeper-mode
  broker stood for. ``Rendered.notes`` says which keys were left out.
- Documented extras of kbroker's older image: ``KBROKER_ADVERTISED_LISTENERS`` stands for
  ``KAFKA_ADVERTISED_LISTENERS`` when that is unset; ``KBROKER_OPTS`` adds ``kbroker serve``
  arguments (``--override key=value``...); ``KBROKER_LOG_LEVEL`` sets the log level.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Mapping

PREFIX = "KAFKA_"
# Kafka's image: the settings of its launch scripts, never server.properties keys
NOT_KEYS = frozenset({
    "KAFKA_VERSION", "KAFKA_HEAP_OPT", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS",
    "KAFKA_JMX_OPTS", "KAFKA_JMX_PORT", "KAFKA_JMX_HOSTNAME", "KAFKA_JVM_PERFORMANCE_OPTS",
    "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_DEBUG", "KAFKA_HOME",
})
# Confluent's confluent-local image: the settings of the REST proxy it runs beside the broker
# (testcontainers-go's module sets KAFKA_REST_BOOTSTRAP_SERVERS), never broker keys
NOT_KEY_PREFIXES = ("KAFKA_REST_",)
KAFKA_DEFAULT_CLUSTER_ID = "5L6g3nShT-eMCtK--X86sw"   # Kafka's image default CLUSTER_ID
DEFAULT_LOG_DIRS = "/var/lib/kbroker"                 # the image's volume
# the HTTP listener of every node with the broker role: /ready for the HEALTHCHECK, /metrics
# (the console stays off on a non-loopback address unless kbroker.console.enable=true)
DEFAULT_HTTP_LISTEN = "0.0.0.0:9404"
# log4j levels → Python's
_LEVELS = {"TRACE": "DEBUG", "DEBUG": "DEBUG", "INFO": "INFO", "WARN": "WARNING",
           "WARNING": "WARNING", "ERROR": "ERROR", "FATAL": "CRITICAL", "OFF": "CRITICAL"}


def property_name(env_name: str) -> str:
    """``KAFKA_LISTENER_SECURITY_PROTOCOL_MAP`` → ``listener.security.protocol.map``."""
    name = env_name[len(PREFIX):] if env_name.startswith(PREFIX) else env_name
    return name.lower().replace("_", ".").replace("...", "-").replace("..", "_")


def env_name(key: str) -> str:
    """The inverse: the variable that sets ``key`` (for messages)."""
    return PREFIX + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def is_key_variable(name: str) -> bool:
    """Whether the variable ``name`` names a server.properties key."""
    return (name.startswith(PREFIX) and len(name) > len(PREFIX) and name not in NOT_KEYS
            and not name.startswith(NOT_KEY_PREFIXES))


def server_properties_from_env(env: Mapping[str, str]) -> dict[str, str]:
    """``{key: value}`` of every ``KAFKA_*`` variable that names a key, sorted by key."""
    out = {}
    for name, value in env.items():
        if is_key_variable(name):
            out[property_name(name)] = value
    return dict(sorted(out.items()))


def listeners_from_advertised(advertised: str) -> str:
    """Kafka's rule: the advertised listeners with every host replaced by ``0.0.0.0``."""
    return re.sub(r"://[^:]*:", "://0.0.0.0:", advertised)


def escape_value(value: str) -> str:
    """A value as a properties line holds it (backslashes doubled, one line)."""
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def log_level(env: Mapping[str, str]) -> str | None:
    """``--log-level`` from ``KBROKER_LOG_LEVEL`` or ``KAFKA_LOG4J_ROOT_LOGLEVEL`` (log4j's
    names), None when neither is set. A value that is no level raises ValueError."""
    for name in ("KBROKER_LOG_LEVEL", "KAFKA_LOG4J_ROOT_LOGLEVEL"):
        raw = env.get(name, "").strip()
        if raw:
            level = _LEVELS.get(raw.split(",")[0].strip().upper())
            if level is None:
                raise ValueError(f"{name}={raw!r} is not a log level "
                                 f"(one of {', '.join(_LEVELS)})")
            return level
    return None


@dataclass
class Rendered:
    """The configuration the entrypoint writes: ``text`` (a server.properties), where it came
    from (``source``: "default", "mounted", "environment" or "mounted+environment"), the keys
    the environment set (``from_env``: key → variable name) and the extra ``serve`` args."""
    text: str
    source: str
    from_env: dict[str, str] = field(default_factory=dict)
    serve_args: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def drop_zookeeper_keys(props: dict[str, str], from_env: dict[str, str]) -> list[str]:
    """Remove the ``zookeeper.*`` keys from ``props`` (and ``from_env``); one note per key."""
    notes = []
    for key in [k for k in props if k.startswith("zookeeper.")]:
        del props[key]
        var = from_env.pop(key, env_name(key))
        notes.append(f"{key} ({var}) left out: kbroker runs KRaft, here as one combined node "
                     "unless controller.quorum.voters names others")
    return notes


def render(env: Mapping[str, str], mounted: str | None, default: str,
           parse=None, *, cluster_id: bool = True,
           default_log_dirs: str = DEFAULT_LOG_DIRS) -> Rendered:
    """The server.properties for ``env``, the mounted file's text (None: none mounted) and the
    image's default file's text. ``parse`` reads properties text (``kbroker.config.broker.
    parse_properties``), used to see which keys a file already sets. ValueError for a
    combination Kafka's image refuses. ``cluster_id=False`` writes no ``cluster.id`` (Confluent's
    image: ``CLUSTER_ID`` goes to ``kafka-storage format``, the id then comes from
    ``meta.properties``); ``default_log_dirs`` is ``log.dirs`` when nothing sets it."""
    if parse is None:
        from kbroker.config.broker import parse_properties as parse
    env = dict(env)
    if not env.get("KAFKA_ADVERTISED_LISTENERS") and env.get("KBROKER_ADVERTISED_LISTENERS"):
        env["KAFKA_ADVERTISED_LISTENERS"] = env["KBROKER_ADVERTISED_LISTENERS"]
    props = server_properties_from_env(env)
    from_env = {k: env_name_of(env, k) for k in props}
    notes = drop_zookeeper_keys(props, from_env)
    if mounted is None and not props:
        base, source = default, "default"
    elif mounted is None:
        base, source = "", "environment"
    else:
        base, source = mounted, "mounted+environment" if props else "mounted"
    roles = env.get("KAFKA_PROCESS_ROLES", "")
    if roles.replace(" ", "") == "controller" and env.get("KAFKA_ADVERTISED_LISTENERS"):
        raise ValueError("KAFKA_ADVERTISED_LISTENERS is not supported on a KRaft controller "
                         "(KAFKA_PROCESS_ROLES=controller), as in Kafka's image")
    if ("listeners" not in props and props.get("advertised.listeners")
            and roles.replace(" ", "") != "controller"):
        props["listeners"] = listeners_from_advertised(props["advertised.listeners"])
        from_env["listeners"] = "KAFKA_ADVERTISED_LISTENERS"
    in_base = parse(base)
    if not cluster_id:
        pass
    elif env.get("CLUSTER_ID"):
        props["cluster.id"] = env["CLUSTER_ID"]
        from_env["cluster.id"] = "CLUSTER_ID"
    elif "cluster.id" not in props and "cluster.id" not in in_base:
        props["cluster.id"] = KAFKA_DEFAULT_CLUSTER_ID
    if not any(k in props or k in in_base for k in ("log.dirs", "log.dir")):
        props["log.dirs"] = default_log_dirs
    effective_roles = props.get("process.roles") or in_base.get("process.roles") or "broker,controller"
    if ("broker" in effective_roles and "kbroker.http.listen" not in props
            and "kbroker.http.listen" not in in_base):
        props["kbroker.http.listen"] = DEFAULT_HTTP_LISTEN
    lines = [base.rstrip("\n")] if base.strip() else []
    if props:
        lines.append("# --- set by the container's environment (kbroker.container) ---")
        lines += [f"{k}={escape_value(v)}" for k, v in props.items()]
    serve_args = shlex.split(env.get("KBROKER_OPTS", ""))
    return Rendered("\n".join(lines) + "\n", source, from_env, serve_args, notes)


def env_name_of(env: Mapping[str, str], key: str) -> str:
    """The variable in ``env`` that produced ``key`` (several spellings may map to one key)."""
    for name in env:
        if is_key_variable(name) and property_name(name) == key:
            return name
    return env_name(key)
