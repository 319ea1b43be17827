#!/usr/bin/env python3
"""Records the HTTP differential's transcripts against a reference registry and REST proxy.

Plays each transcript of ``compat_tests/reference_http/transcripts.py`` against a running
reference and writes every request with its answer (status, content type, JSON body) to
``compat_tests/reference_http/recorded/<transcript>.json``, the file the suite replays against
kbroker (``tests/reference_http/``). The reference must start empty: a fresh `_schemas` topic
and no topics but the ones a transcript's ``setup_topics`` names, which this tool creates
through the Kafka bootstrap address before the transcript's first step.

How the committed recordings were made (Karapace has no package on any registry; it runs from
its public sources):

    git --git-dir=<karapace.git> archive 5.0.3 | tar -x -C /work/karapace-src
    python3.11 -m venv /work/karapace-venv
    /work/karapace-venv/bin/pip install -r <its pyproject's dependencies, avro==1.11.3 for
        the patched avro archive it pins>
    SETUPTOOLS_SCM_PRETEND_VERSION=5.0.3 /work/karapace-venv/bin/pip install --no-deps \\
        --no-build-isolation /work/karapace-src    # builds its Go protobuf helper
    .venv/bin/python tools/record_reference_http.py --karapace-venv /work/karapace-venv

``--karapace-venv`` starts Apache Kafka (the pinned 4.4.0, ``.cache/kafka``), Karapace's
registry and its REST proxy (``compat_tests/reference_http/karapace.py``), records, and stops
them; every transcript gets a fresh stack. ``--registry URL --rest URL --bootstrap HOST:PORT``
records against servers someone else runs instead (one transcript per fresh server: pass
``--only``). ``--out DIR`` writes elsewhere (e.g. to record kbroker's own answers and diff).

``--draft-known FILE`` records nothing: it starts one kbroker from this checkout (registry and
gateway), replays the committed recordings against it as the suite does, and writes the draft
of ``known_differences.json`` that ``known_rules.py`` makes of the differences; those no rule
explains are printed (a kbroker bug to fix, or a new rule with its FINDINGS.md entry). Review
the draft before it replaces the list.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compat_tests.reference_http import play, transcripts  # noqa: E402
from kbroker.testing.processes import Admin  # noqa: E402

DEFAULT_OUT = ROOT / "compat_tests" / "reference_http" / "recorded"


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = Admin(bootstrap)
    for name, partitions in topics.items():
        admin.create_topic(name, partitions=partitions)
        admin.wait_topic(name, partitions)


def record(name: str, urls: dict, bootstrap: str | None, reference: dict) -> dict:
    spec = transcripts.TRANSCRIPTS[name]
    if spec["setup_topics"]:
        if not bootstrap:
            raise SystemExit(f"transcript {name} needs --bootstrap to create its topics")
        create_topics(bootstrap, spec["setup_topics"])
    steps = []
    for step, answer, sent in play.play(spec["steps"](), urls):
        steps.append({**step, "sent_path": sent, "response": answer})
        print(f"  {answer['status']} {step['method']:6} {sent}", file=sys.stderr)
    return {"transcript": name, "reference": reference, "setup_topics": spec["setup_topics"],
            "steps": steps}


def write(out: Path, name: str, data: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"wrote {path} ({len(data['steps'])} steps)", file=sys.stderr)


def draft_known(path: Path) -> int:
    from compat_tests.reference_http import known_rules, replay
    from kbroker.testing.processes import KbrokerProcess, free_port
    entries, left = [], []
    with tempfile.TemporaryDirectory(prefix="kbroker-refhttp-") as tmp:
        sr, rp = free_port(), free_port()
        broker = KbrokerProcess(Path(tmp) / "data", {
            "kbroker.schema.registry.listen": f"127.0.0.1:{sr}",
            "kbroker.rest.proxy.listen": f"127.0.0.1:{rp}",
            "group.initial.rebalance.delay.ms": "0"}).start()
        try:
            urls = {"registry": f"http://127.0.0.1:{sr}", "rest": f"http://127.0.0.1:{rp}"}
            for name in transcripts.TRANSCRIPTS:  # the suite's order: registry, then rest
                results = replay.replay(replay.load(name), urls, broker.bootstrap_servers)
                got, missed = known_rules.draft(name, results)
                entries += got
                left += [(name, *m) for m in missed]
        finally:
            broker.stop()
    path.write_text(json.dumps({"differences": entries}, indent=1) + "\n")
    print(f"wrote {path}: {len(entries)} explained differences", file=sys.stderr)
    for item in left:
        print("UNEXPLAINED", json.dumps(item)[:400], file=sys.stderr)
    return 1 if left else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--karapace-venv", type=Path, help="start Kafka + Karapace from this virtualenv")
    p.add_argument("--registry", help="URL of a running reference registry")
    p.add_argument("--rest", help="URL of a running reference REST proxy")
    p.add_argument("--bootstrap", help="Kafka bootstrap address of the running reference")
    p.add_argument("--only", choices=sorted(transcripts.TRANSCRIPTS), action="append")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--label", default=None, help="implementation name written into the file")
    p.add_argument("--draft-known", type=Path, metavar="FILE",
                   help="replay the recordings against a fresh kbroker and draft the known list")
    args = p.parse_args(argv)
    if args.draft_known:
        return draft_known(args.draft_known)
    names = args.only or list(transcripts.TRANSCRIPTS)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    if args.karapace_venv:
        from compat_tests.kafka_runner import kafka_version
        from compat_tests.reference_http.karapace import KarapaceStack, karapace_version
        version = karapace_version(args.karapace_venv / "bin" / "python")
        for name in names:
            with tempfile.TemporaryDirectory(prefix=f"karapace-{name}-") as tmp:
                stack = KarapaceStack(Path(tmp), args.karapace_venv, rest=(name == "rest"))
                try:
                    stack.start()
                    reference = {"implementation": "Karapace", "version": version,
                                 "kafka": kafka_version(), "recorded": stamp,
                                 "how": "tools/record_reference_http.py --karapace-venv"}
                    data = record(name, {"registry": stack.registry_url, "rest": stack.rest_url},
                                  stack.kafka.bootstrap_servers, reference)
                finally:
                    stack.stop()
            write(args.out, name, data)
        return 0
    if not (args.registry or args.rest):
        p.error("give --karapace-venv, or --registry/--rest URLs")
    for name in names:
        reference = {"implementation": args.label or "unnamed", "recorded": stamp,
                     "how": "tools/record_reference_http.py --registry/--rest"}
        data = record(name, {"registry": args.registry, "rest": args.rest}, args.bootstrap,
                      reference)
        write(args.out, name, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
