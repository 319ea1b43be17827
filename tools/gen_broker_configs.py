"""Regenerate ``kbroker/config/kafka_keys.py`` from the pinned Apache Kafka jars.

Runs ``tools/KafkaBrokerConfigDump.java`` (Java's single-file launcher) with the jars of
``tools/fetch_kafka.sh`` on the class path: Kafka's own broker ``ConfigDef`` and
``DynamicBrokerConfig`` tables give every broker/controller key's name, type, default,
importance, internal flag, dynamic update mode, validator and synonyms, and the topic
config → broker config synonym map. Only these facts are written (no documentation text).

Usage: .venv/bin/python tools/gen_broker_configs.py
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "kbroker" / "config" / "kafka_keys.py"


def main() -> int:
    version = subprocess.run([str(ROOT / "tools/fetch_kafka.sh"), "--version"], check=True,
                             capture_output=True, text=True).stdout.strip()
    libs = subprocess.run([str(ROOT / "tools/fetch_kafka.sh")], check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]
    cp = ":".join(str(p) for p in sorted(Path(libs).glob("*.jar")))
    dump = subprocess.run(["java", "-cp", cp, str(ROOT / "tools/KafkaBrokerConfigDump.java")],
                          check=True, capture_output=True, text=True).stdout
    keys, topic, security = [], [], []
    for line in dump.splitlines():
        cols = [c.replace("\\t", "\t").replace("\\n", "\n").replace("\\\\", "\\")
                for c in line.split("\t")]
        if cols[0] == "#topic":
            topic.append((cols[1], cols[2]))
            continue
        if cols[0] == "#security":
            security.append(cols[1])
            continue
        name, type_, default, importance, internal, mode, validator, synonyms = cols
        default = {"<none>": None, "<null>": None}.get(default, default)
        keys.append((name, type_, default, importance, internal == "true", mode, validator,
                     tuple(s for s in synonyms.split(",") if s)))
    lines = [
        f'"""Apache Kafka {version} broker and controller configuration keys (generated; do not edit).',
        "",
        "Written by ``tools/gen_broker_configs.py`` from Kafka's own definitions in the pinned jars.",
        "``BROKER_CONFIGS``: (name, type, default as Kafka's string form or None, importance,",
        "internal, dynamic update mode: read-only / per-broker / cluster-wide, validator text,",
        "broker synonyms in Kafka's order). ``TOPIC_CONFIG_SYNONYMS``: topic config → the",
        "broker config DescribeConfigs lists as its synonym. ``LISTENER_ONLY_DYNAMIC``: security",
        "configs updatable dynamically only with a ``listener.name.<l>.`` prefix.",
        '"""',
        f"KAFKA_VERSION = {version!r}",
        "",
        "BROKER_CONFIGS = (",
        *(f"    {k!r}," for k in keys),
        ")",
        "",
        "TOPIC_CONFIG_SYNONYMS = {",
        *(f"    {t!r}: {b!r}," for t, b in topic),
        "}",
        "",
        f"LISTENER_ONLY_DYNAMIC = frozenset({sorted(security)!r})",
        "",
    ]
    OUT.write_text("\n".join(lines))
    print(f"{OUT.relative_to(ROOT)}: {len(keys)} broker keys, {len(topic)} topic synonyms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
