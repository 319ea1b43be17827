"""Shared plumbing of the client commands: connection options, kafka-python clients, output.

Nothing here imports kafka-python at module level (start-up time); ``admin(args)`` and friends
import it on first use.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Iterable, Sequence

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


class CommandError(Exception):
    """A failure to report as one line on stderr with exit code 1."""


def common_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--bootstrap-server", "-b", metavar="HOST:PORT[,...]",
                   default=os.environ.get("KBROKER_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP),
                   help="brokers to bootstrap from (default $KBROKER_BOOTSTRAP_SERVERS or "
                        f"{DEFAULT_BOOTSTRAP})")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--command-config", metavar="KEY=VALUE", action="append", default=[],
                   help="extra kafka-python client setting, e.g. request_timeout_ms=5000 "
                        "(repeatable)")
    return p


def _client_settings(args) -> dict[str, Any]:
    out: dict[str, Any] = {"bootstrap_servers": args.bootstrap_server.split(",")}
    for item in args.command_config:
        key, sep, value = item.partition("=")
        if not sep:
            raise CommandError(f"--command-config expects key=value, got {item!r}")
        out[key.strip()] = int(value) if value.lstrip("-").isdigit() else value
    return out


def quiet_client_logs() -> None:
    import logging
    logging.getLogger("kafka").setLevel(logging.CRITICAL)


def admin(args):
    """A connected ``KafkaAdminClient``; CommandError when no broker answers."""
    quiet_client_logs()
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError
    try:
        return KafkaAdminClient(client_id="kbroker-cli", **_client_settings(args))
    except KafkaError as e:
        raise CommandError(f"cannot reach {args.bootstrap_server}: {e}") from None


def producer(args, **settings):
    quiet_client_logs()
    from kafka import KafkaProducer
    from kafka.errors import KafkaError
    try:
        return KafkaProducer(client_id="kbroker-cli", **_client_settings(args), **settings)
    except KafkaError as e:
        raise CommandError(f"cannot reach {args.bootstrap_server}: {e}") from None


def consumer(args, **settings):
    quiet_client_logs()
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError
    try:
        return KafkaConsumer(client_id="kbroker-cli", **_client_settings(args), **settings)
    except KafkaError as e:
        raise CommandError(f"cannot reach {args.bootstrap_server}: {e}") from None


def key_values(items: Iterable[str], what: str) -> dict[str, str]:
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CommandError(f"{what} expects key=value, got {item!r}")
        out[key] = value
    return out


def check_error(result: Any, what: str) -> None:
    """Raise CommandError for a kafka-python per-resource error (class, instance or code)."""
    from kafka.errors import KafkaError, NoError, for_code
    err = result
    if isinstance(err, dict):
        err = err.get("error", err.get("error_code"))
    if isinstance(err, int):
        err = for_code(err)
    if err is None or err is NoError or isinstance(err, NoError) or err in ("OK", "NoError", ""):
        return
    if isinstance(err, type) and issubclass(err, KafkaError):
        raise CommandError(f"{what}: {err.__name__}")
    if isinstance(err, KafkaError):
        raise CommandError(f"{what}: {err}")
    if isinstance(err, str) and err:
        raise CommandError(f"{what}: {err}")


# --- output ------------------------------------------------------------------------------

def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def table(rows: Sequence[dict], columns: Sequence[str], out=None) -> None:
    """Print ``rows`` as a whitespace-aligned table with an upper-case header row."""
    out = out or sys.stdout
    header = [c.upper().replace("_", "-") for c in columns]
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(header)]
    for line in [header] + cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() + "\n")


def emit(args, data: Any, rows: Sequence[dict] | None = None, columns: Sequence[str] = ()) -> None:
    """``--json``: ``data`` as JSON; otherwise ``rows`` as a table (``data`` when rows is None)."""
    if args.json:
        json.dump(data, sys.stdout, indent=2, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        table(data if rows is None else rows, columns)


def parse_time_ms(text: str) -> int:
    """Milliseconds since the epoch from an integer or an ISO-8601 date-time (UTC unless the
    text names a zone), as kafka-consumer-groups' ``--to-datetime`` accepts."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    from datetime import datetime, timezone
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(f"not a timestamp (ms) or ISO-8601 date-time: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)
