"""Shared plumbing of the client commands: connection options, confluent-kafka clients that
fail fast, output.

Nothing here imports confluent-kafka at module level (start-up time): ``Connection.admin()``
and friends import it when a command runs.

Failing fast: librdkafka retries an unreachable or refusing broker until a request's
timeout. ``Connection.wait`` polls the client while it waits on a result and ends the
command as soon as librdkafka reports, through ``error_cb``, that authentication or TLS
failed, or that every broker is down (after ``DOWN_GRACE`` seconds, so that a bootstrap name
with several addresses gets to try the next one) — one sentence naming the address or
principal (``kbroker.tools.errors``). ``--timeout`` (default 15 s) bounds every wait.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Sequence

from kbroker.tools.client_config import DEFAULT_BOOTSTRAP, UsageError, key_value, resolve
from kbroker.tools.errors import CommandError, sentence

__all__ = ["CommandError", "UsageError", "Connection", "common_parent", "emit", "table",
           "key_values", "parse_time_ms", "connect"]

DEFAULT_TIMEOUT = 15.0
DOWN_GRACE = 0.3


def common_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--bootstrap-server", "--bootstrap-servers", "-b", metavar="HOST:PORT[,...]",
                   default=None,
                   help="brokers to bootstrap from (default: the profile's, else "
                        f"$KBROKER_BOOTSTRAP_SERVERS, else {DEFAULT_BOOTSTRAP})")
    p.add_argument("--command-config", metavar="FILE",
                   help="a Kafka client properties file (security.protocol, sasl.mechanism, "
                        "sasl.jaas.config, ssl.truststore.location, ...), as Kafka's tools take")
    p.add_argument("-X", "--property", action="append", default=[], metavar="KEY=VALUE",
                   help="one Kafka client property (repeatable; wins over --command-config)")
    p.add_argument("--profile", metavar="NAME",
                   help="connection settings from ~/.config/kbroker/profiles.toml "
                        "(default $KBROKER_PROFILE)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"give up waiting on the cluster after this long (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


class Connection:
    """Where and how a command connects, and the clients it makes (confluent-kafka)."""

    def __init__(self, args):
        self.bootstrap, self.props = resolve(args)
        self.timeout = float(getattr(args, "timeout", None) or DEFAULT_TIMEOUT)
        if self.timeout <= 0:
            raise UsageError("--timeout must be positive")
        self.errors: list[tuple[float, Any]] = []
        self._rdk: dict | None = None

    # --- clients ------------------------------------------------------------------------
    def _on_error(self, err) -> None:
        self.errors.append((time.monotonic(), err))

    def config(self, **extra) -> dict:
        if self._rdk is None:
            from kbroker.tools.client_config import librdkafka_config
            self._rdk = librdkafka_config(self.props)
        conf = {"bootstrap.servers": self.bootstrap, "client.id": "kbroker-cli", "log_level": 0,
                "socket.connection.setup.timeout.ms": int(min(self.timeout, 10.0) * 1000),
                "error_cb": self._on_error}
        conf.update(self._rdk)
        conf.update(extra)
        return conf

    def _make(self, cls, conf):
        from confluent_kafka import KafkaException
        try:
            return cls(conf)
        except KafkaException as e:
            raise UsageError(f"client settings: {e.args[0].str() if e.args else e}") from None
        except (TypeError, ValueError) as e:
            raise UsageError(f"client settings: {e}") from None

    def admin(self):
        from confluent_kafka.admin import AdminClient
        return self._make(AdminClient, self.config())

    def producer(self, **extra):
        from confluent_kafka import Producer
        return self._make(Producer, self.config(**extra))

    def consumer(self, **extra):
        from confluent_kafka import Consumer
        return self._make(Consumer, self.config(**extra))

    # --- waiting --------------------------------------------------------------------------
    def check(self, what: str) -> None:
        """Raise CommandError if librdkafka has reported a failure the command cannot outlive."""
        now = time.monotonic()
        for at, err in self.errors:
            code = err.code()
            if code in (-169, -181, 58):   # _AUTHENTICATION, _SSL, SASL_AUTHENTICATION_FAILED
                raise CommandError(sentence(err, what, self))
            if code == -187 and now - at >= DOWN_GRACE:   # _ALL_BROKERS_DOWN
                # the transport error before it names the reason (refused, unresolvable ...)
                cause = next((e for _, e in reversed(self.errors) if e.code() in (-195, -193)), err)
                raise CommandError(sentence(cause, what, self))

    @staticmethod
    def _drain(client) -> None:
        """Serve pending callbacks (error_cb). Called before a consumer has an assignment, so
        its poll takes no record."""
        try:
            client.poll(0)
        except Exception:  # noqa: BLE001 - only a best effort to collect the cause
            pass

    def deadline(self) -> float:
        return time.monotonic() + self.timeout

    def wait(self, future, what: str, client=None):
        """The result of a confluent-kafka future; a failure is CommandError (one sentence)."""
        from confluent_kafka import KafkaException
        end = self.deadline()
        while not future.done():
            if client is not None:
                client.poll(0.05)
            else:
                try:
                    future.result(timeout=0.05)
                except Exception:  # noqa: BLE001 - read again below, after done()
                    pass
            self.check(what)
            if time.monotonic() >= end:
                future.cancel()
                raise CommandError(f"{what}: no answer from {self.bootstrap} within "
                                   f"{self.timeout:g} s (--timeout)")
        try:
            return future.result()
        except KafkaException as e:
            raise CommandError(sentence(e, what, self)) from None

    def wait_all(self, futures: dict, what, client=None) -> dict:
        """``{key: result or KafkaError}`` of a dict of futures (per-resource errors kept)."""
        from confluent_kafka import KafkaException
        out = {}
        for key, f in futures.items():
            label = what(key) if callable(what) else what
            end = self.deadline()
            while not f.done():
                if client is not None:
                    client.poll(0.05)
                else:
                    try:
                        f.result(timeout=0.05)
                    except Exception:  # noqa: BLE001 - read below
                        pass
                self.check(label)
                if time.monotonic() >= end:
                    raise CommandError(f"{label}: no answer from {self.bootstrap} within "
                                       f"{self.timeout:g} s (--timeout)")
            try:
                out[key] = f.result()
            except KafkaException as e:
                err = e.args[0] if e.args else e
                if hasattr(err, "code") and err.code() in (-195, -187, -185, -169, -181, -193):
                    raise CommandError(sentence(err, label, self)) from None
                out[key] = err
        return out

    def fail(self, err, what: str) -> CommandError:
        return CommandError(sentence(err, what, self))

    def metadata(self, client, topic: str | None = None):
        """ClusterMetadata (one topic or all), failing fast like ``wait``: a transport error
        is retried (librdkafka reconnects) until ``check`` finds the brokers down for good."""
        from confluent_kafka import KafkaException
        what = "read the cluster's metadata"
        end = self.deadline()
        last = None
        while True:
            step = min(0.2, max(0.05, end - time.monotonic()))
            try:
                return client.list_topics(topic, timeout=step)
            except KafkaException as e:
                err = e.args[0] if e.args else None
                if err is None or err.code() not in (-185, -195, -187, -193):
                    raise CommandError(sentence(err or e, what, self)) from None
                if err.code() != -185:
                    last = err
                    time.sleep(0.05)
            self._drain(client)
            self.check(what)
            if time.monotonic() >= end:
                if last is not None:
                    cause = next((x for _, x in reversed(self.errors) if x.code() in (-195, -193)), last)
                    raise CommandError(sentence(cause, what, self))
                raise CommandError(f"no answer from {self.bootstrap} within {self.timeout:g} s "
                                   "(--timeout)")


def connect(args) -> Connection:
    return Connection(args)


def key_values(items, what: str) -> dict[str, str]:
    out = {}
    for item in items or ():
        key, value = key_value(item, what)
        out[key] = value
    return out


# --- output ------------------------------------------------------------------------------

def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "-"
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
        raise UsageError(f"not a timestamp (ms) or ISO-8601 date-time: {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)
