"""Plays one transcript of HTTP steps against a base URL and answers what came back.

A step is a dict (see `transcripts.py`): ``name``, ``method``, ``path``, and optionally
``json`` (a body sent as JSON), ``raw`` (a body sent as given text: malformed input),
``content_type``, ``accept``, ``capture`` (variables to take from the answer's JSON body:
``{"var": "dotted.path"}``), ``until`` (repeat the request, at most ``until.tries`` times, until
the body is a list of at least ``until.min_items`` items: polls of a consumer whose fetch has
not caught up yet), and ``service`` (``registry`` or ``rest``: which base URL it goes to).
``retry_status`` (repeat, at most 20 times, while the status is one of these: the
reference's consumer assignment is applied asynchronously, so a seek right after an assign
can answer 409 for a moment; the steady answer is the one recorded and compared).
``${var}`` in a path or anywhere in a body is replaced by a captured value, so that ids the
server hands out (schema ids, cluster ids) flow into later requests on both sides alike.

Rules kept: only the standard library (the recorder runs in any Python); one connection per
request (no keep-alive state differs between servers); the body is decoded as JSON when it is
JSON, kept as text otherwise, and an empty body is ``None``.
"""
from __future__ import annotations

import copy
import http.client
import json
import time
import urllib.parse

VAR_OPEN = "${"


def substitute(value, variables: dict):
    """``value`` (a str, or JSON data) with every ``${name}`` replaced by its variable. A string
    that is exactly one ``${name}`` becomes the variable's value with its type (an int id)."""
    if isinstance(value, str):
        if value.startswith(VAR_OPEN) and value.endswith("}") and value.count(VAR_OPEN) == 1:
            name = value[2:-1]
            if name in variables:
                return variables[name]
        for name, v in variables.items():
            value = value.replace(VAR_OPEN + name + "}", str(v))
        return value
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value


def dig(body, dotted: str):
    """The value at a dotted path (``data.0.cluster_id``) of a JSON body, or None."""
    cur = body
    for part in dotted.split("."):
        if isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return None
        elif isinstance(cur, dict):
            cur = cur.get(part)
        else:
            return None
    return cur


def request(base_url: str, method: str, path: str, *, body: bytes | None = None,
            content_type: str | None = None, accept: str | None = None,
            timeout: float = 60.0) -> dict:
    """One HTTP request; answers ``{"status", "content_type", "body"}``."""
    url = urllib.parse.urlsplit(base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    try:
        headers = {}
        if content_type:
            headers["Content-Type"] = content_type
        if accept:
            headers["Accept"] = accept
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        ctype = resp.getheader("Content-Type")
        status = resp.status
    finally:
        conn.close()
    return {"status": status, "content_type": ctype, "body": decode(data)}


def decode(data: bytes):
    if not data:
        return None
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def encode_body(step: dict, variables: dict) -> bytes | None:
    if "raw" in step:
        return substitute(step["raw"], variables).encode()
    if "json" in step:
        return json.dumps(substitute(copy.deepcopy(step["json"]), variables)).encode()
    return None


def play_step(step: dict, urls: dict, variables: dict) -> dict:
    """Sends one step (repeating it while ``until`` is not met) and takes its captures into
    ``variables``; answers the last response."""
    base = urls[step.get("service", "registry")]
    path = substitute(step["path"], variables)
    body = encode_body(step, variables)
    until = step.get("until")
    retry = step.get("retry_status") or []
    tries = until["tries"] if until else (20 if retry else 1)
    for attempt in range(tries):
        answer = request(base, step["method"], path, body=body,
                         content_type=step.get("content_type"), accept=step.get("accept"))
        if retry and answer["status"] in retry:
            time.sleep(0.2)
            continue
        if not until:
            break
        got = answer["body"]
        if isinstance(got, list) and len(got) >= until["min_items"]:
            break
        if answer["status"] >= 400:
            break
        time.sleep(until.get("pause", 0.2))
    for name, dotted in step.get("capture", {}).items():
        value = dig(answer["body"], dotted)
        if value is not None:
            variables[name] = value
    return answer


def play(steps: list[dict], urls: dict, variables: dict | None = None):
    """Plays every step in order; yields ``(step, answer, path_sent)``."""
    variables = {} if variables is None else variables
    for step in steps:
        sent_path = substitute(step["path"], variables)
        answer = play_step(step, urls, variables)
        yield step, answer, sent_path
