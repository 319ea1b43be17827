#!/usr/bin/env python3
"""Regenerate kbroker's schema model from Kafka's message definitions.

Usage: python tools/genschema.py [-o OUT] [REFERENCE_DIR]

REFERENCE_DIR defaults to the definitions of the pinned Kafka release,
``.cache/kafka-protocol/<version>/``, which ``tools/fetch_protocol.sh`` extracts from the
release's sources jars, or its binary jars when it publishes none (run first when the folder
is missing; the version is the one pin of ``tools/kafka_dist/pom.xml``).

Reads every ``*.json`` definition (top level and the metadata/, group-coordinator/,
transaction-coordinator/ and raft/ subfolders), keeps only the facts the codec needs —
names, types, version ranges, tags, defaults, map keys — and writes them to
``kbroker/wire/schema/messages.json``. Comments and ``about`` prose are dropped: the
output is data, and the project owns its format.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "kbroker" / "wire" / "schema" / "messages.json"

FIELD_KEYS = ("name", "type", "versions", "nullableVersions", "taggedVersions", "tag",
              "default", "mapKey", "ignorable", "flexibleVersions", "zeroCopy", "entityType")
TOP_KEYS = ("name", "type", "apiKey", "validVersions", "flexibleVersions",
            "latestVersionUnstable", "deprecatedVersions", "listeners")


def strip_comments(text: str) -> str:
    """Drop ``//`` line comments (the definitions are JSON with comments)."""
    out = []
    for line in text.splitlines():
        in_str = False
        for i, ch in enumerate(line):
            if ch == '"' and (i == 0 or line[i - 1] != "\\"):
                in_str = not in_str
            elif ch == "/" and not in_str and line[i:i + 2] == "//":
                line = line[:i]
                break
        out.append(line)
    return "\n".join(out)


def load_definition(path: Path) -> dict:
    return json.loads(strip_comments(path.read_text()))


def facts_of_field(field: dict) -> dict:
    kept = {k: field[k] for k in FIELD_KEYS if k in field}
    if "fields" in field:
        kept["fields"] = [facts_of_field(f) for f in field["fields"]]
    return kept


def facts_of(defn: dict, group: str) -> dict:
    kept = {k: defn[k] for k in TOP_KEYS if k in defn}
    kept["group"] = group
    kept["fields"] = [facts_of_field(f) for f in defn.get("fields", [])]
    if "commonStructs" in defn:
        kept["commonStructs"] = [
            {"name": s["name"], "versions": s.get("versions", "0+"),
             "fields": [facts_of_field(f) for f in s["fields"]]}
            for s in defn["commonStructs"]]
    return kept


def removed(defn: dict) -> bool:
    """A definition Kafka keeps only as a tombstone of a removed API (``validVersions``
    ``none``, no fields: LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown)."""
    return defn.get("validVersions") == "none"


def collect(reference: Path) -> list[dict]:
    messages = []
    for path in sorted(reference.glob("*.json")):
        defn = load_definition(path)
        if not removed(defn):
            messages.append(facts_of(defn, "protocol"))
    for sub in ("metadata", "group-coordinator", "transaction-coordinator", "raft"):
        for path in sorted((reference / sub).glob("*.json")):
            messages.append(facts_of(load_definition(path), sub))
    return messages


def source_version(reference: Path) -> str:
    """The Apache Kafka release the reference was extracted from (first line of SOURCE.txt)."""
    src_file = reference / "SOURCE.txt"
    if src_file.exists():
        m = re.search(r"Apache Kafka (\S+) message definitions", src_file.read_text())
        if m:
            return m.group(1)
    return ""


def pinned_reference() -> Path:
    """The pinned release's definitions, fetched by tools/fetch_protocol.sh if missing."""
    out = subprocess.run(["bash", str(ROOT / "tools" / "fetch_protocol.sh")], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return Path(out.strip().splitlines()[-1])


def render(reference: Path) -> str:
    """The full text of ``messages.json`` for ``reference`` (deterministic: sorted keys,
    files in sorted order), so a test can regenerate it and compare with the committed one."""
    messages = collect(reference)
    return json.dumps({"kafka_version": source_version(reference), "messages": messages},
                      indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    args = argv[1:]
    out = OUT
    if len(args) >= 2 and args[0] in ("-o", "--out"):
        out, args = Path(args[1]), args[2:]
    reference = Path(args[0]) if args else pinned_reference()
    text = render(reference)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {len(json.loads(text)['messages'])} message schemas to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
