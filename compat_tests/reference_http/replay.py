"""Replays a recorded transcript against another server and checks it against the known list.

`load(name)` reads ``recorded/<name>.json``; `replay(recorded, urls, bootstrap)` creates the
transcript's topics, plays the recorded requests in order (the same captures, so ids handed
out by the server flow into later requests) and answers, per step, the differences that
`compare.compare` finds. `unexplained(...)` keeps the differences that
``known_differences.json`` does not list with the same two values (``"kbroker": "<any>"``
where the reference serves nothing to compare with and kbroker's answer is volatile); `stale(...)` the listed
ones that did not happen (a known difference that went away must leave the list).
"""
from __future__ import annotations

import json
from pathlib import Path

from compat_tests.reference_http import compare, play

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "recorded"
KNOWN = HERE / "known_differences.json"
# kbroker's value of a known difference whose reference has no counterpart at all (an endpoint
# it does not serve) and whose kbroker answer holds volatile values (cluster id, listener)
ANY = "<any>"


def load(name: str) -> dict:
    return json.loads((RECORDED / f"{name}.json").read_text())


def known_differences() -> list[dict]:
    return json.loads(KNOWN.read_text())["differences"]


def replay(recorded: dict, urls: dict, bootstrap: str | None = None) -> dict[str, dict]:
    """Per step name: ``{"step", "reference", "kbroker", "diffs"}`` (diffs as lists)."""
    if recorded.get("setup_topics"):
        from kbroker.testing.processes import Admin
        admin = Admin(bootstrap)
        for topic, partitions in recorded["setup_topics"].items():
            admin.create_topic(topic, partitions=partitions)
            admin.wait_topic(topic, partitions)
    binders = (compare.Binder(), compare.Binder())
    variables: dict = {}
    results = {}
    for step in recorded["steps"]:
        answer = play.play_step(step, urls, variables)
        diffs = compare.compare(recorded["transcript"], step, step["response"], answer, binders)
        results[step["name"]] = {"step": step, "reference": step["response"], "kbroker": answer,
                                 "diffs": [list(d) for d in diffs]}
    return results


def _matches(entry: dict, transcript: str, step: str, d: list) -> bool:
    return (entry["transcript"] == transcript and entry["step"] == step
            and entry["field"] == d[0] and entry["reference"] == d[1]
            and (entry["kbroker"] == d[2] or entry["kbroker"] == ANY))


def unexplained(transcript: str, step: str, diffs: list, known: list[dict]) -> list:
    return [d for d in diffs if not any(_matches(e, transcript, step, d) for e in known)]


def stale(transcript: str, results: dict, known: list[dict]) -> list[dict]:
    out = []
    for e in known:
        if e["transcript"] != transcript:
            continue
        r = results.get(e["step"])
        if r is None or not any(_matches(e, transcript, e["step"], d) for d in r["diffs"]):
            out.append(e)
    return out
