"""Connection limits on accept (Kafka's ``ConnectionQuotas``, KIP-402 / KIP-612).

What a new connection from ``ip`` meets, in Kafka's order:

1. ``max.connections`` (broker-wide): while that many connections are open, new ones wait
   (the listener stops accepting; they queue in the backlog) — except on the inter-broker
   listener when there are several listeners (Kafka's protected listener);
2. ``connection_creation_rate`` of the ``ip`` quota entity (or the ``<default>`` ip entity):
   the connection is recorded on the IP's sampled rate (``quota.window.num`` windows of
   ``quota.window.size.seconds``); above the quota it is taken back and the connection is
   closed after the throttle time (Kafka's ``ConnectionThrottledException`` and delayed
   close), throttle = Kafka's formula bounded by one window;
3. ``max.connections.per.ip`` / ``max.connections.per.ip.overrides`` (``host:count`` list):
   a connection that finds its IP already at the limit is closed at once
   (``TooManyConnectionsException``).

The settings are read from the effective (dynamic) broker config on every accept, the IP
quotas from the metadata image. Log lines are rate-limited to one per IP and reason per
quota window, so a client hammering the listener does not flood the log. Pure apart from the
injected clock; ``kbroker.server`` does the waiting and closing.
"""
from __future__ import annotations

import ipaddress
import logging
import socket
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Mapping

from .manager import MAX_SENSORS
from .rate import SampledRate, throttle_time_ms

log = logging.getLogger("kbroker.quota.connections")

IP_RATE_KEY = "connection_creation_rate"
INT_MAX = 2 ** 31 - 1


@dataclass(frozen=True)
class Admission:
    """What to do with an accepted connection: ``ok``; ``throttle_ms`` > 0 (close it after
    that long); ``rejected`` (close it now, the IP has ``limit`` connections)."""
    ok: bool
    throttle_ms: int = 0
    rejected: bool = False
    limit: int = 0


ADMITTED = Admission(True)


def parse_overrides(text: str | None) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host-or-ip:count`` pairs, comma separated;
    host names are resolved (Kafka's ``InetAddress.getByName``). Bad entries are skipped
    (the value was validated when it was set)."""
    out: dict[str, int] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep:
            continue
        try:
            n = int(count)
        except ValueError:
            continue
        host = host.strip().strip("[]")
        try:
            ip = str(ipaddress.ip_address(host))
        except ValueError:
            try:
                ip = socket.gethostbyname(host)
            except OSError:
                continue
        out[ip] = n
    return out


class ConnectionQuotas:
    def __init__(self, config, clock_ms: Callable[[], int]):
        self.config = config
        self.clock_ms = clock_ms
        self.samples = config.get("quota.window.num")
        self.window_ms = config.get("quota.window.size.seconds") * 1000
        self.counts: dict[str, int] = {}
        self.total = 0
        self._ip_rates: dict[str | None, float] = {}       # None: the <default> ip entity
        self._source = None
        self._sensors: OrderedDict[str, SampledRate] = OrderedDict()
        self._overrides_text = None
        self._overrides: dict[str, int] = {}
        self._logged: dict[tuple[str, str], int] = {}
        self.stats = {"accepted": 0, "throttled": 0, "rejected": 0, "waited": 0}

    # ------------------------------------------------------------------ settings
    def update(self, client_quotas: Mapping) -> None:
        if client_quotas is self._source:
            return
        self._source = client_quotas
        rates = {}
        for entity, values in client_quotas.items():
            parts = dict(entity)
            if "ip" in parts and IP_RATE_KEY in values:
                rates[parts["ip"]] = values[IP_RATE_KEY]
        self._ip_rates = rates

    def _setting(self, key: str):
        return self.config.effective_values()[key]

    def max_per_ip(self, ip: str) -> int:
        text = self._setting("max.connections.per.ip.overrides")
        if text != self._overrides_text:
            self._overrides_text, self._overrides = text, parse_overrides(text)
        limit = self._overrides.get(ip)
        return limit if limit is not None else self._setting("max.connections.per.ip")

    def ip_rate(self, ip: str) -> float | None:
        rate = self._ip_rates.get(ip, self._ip_rates.get(None))
        return None if rate is None or rate >= INT_MAX else rate

    def slot_available(self, protected: bool = False) -> bool:
        """``max.connections``: may one more connection be accepted now?"""
        return protected or self.total < self._setting("max.connections")

    # ------------------------------------------------------------------ accept / close
    def admit(self, ip: str) -> Admission:
        """Kafka's ``ConnectionQuotas.inc`` after the slot wait: the IP's creation rate, then
        its connection count. An admitted connection must be ``release``d when it closes."""
        rate = self.ip_rate(ip)
        now = self.clock_ms()
        if rate is not None:
            sensor = self._sensor(ip)
            sensor.record(1, now)
            measured = sensor.measure(now)
            if measured > rate:
                sensor.record(-1, now)           # a throttled connection does not count
                throttle = min(throttle_time_ms(measured, rate, sensor.window_size_ms(now)),
                               self.window_ms)
                self.stats["throttled"] += 1
                if self._log_once(ip, "rate", now):
                    log.info("Delaying close of connection from %s for %d ms "
                             "(connection_creation_rate %g exceeded; logged once per window)",
                             ip, throttle, rate)
                return Admission(False, throttle_ms=max(throttle, 1))
        count = self.counts.get(ip, 0)
        self.counts[ip] = count + 1
        self.total += 1
        limit = self.max_per_ip(ip)
        if count >= limit:
            self.release(ip)
            self.stats["rejected"] += 1
            if self._log_once(ip, "max", now):
                log.info("Rejected connection from %s, address already has the configured "
                         "maximum of %d connections (logged once per window)", ip, limit)
            return Admission(False, rejected=True, limit=limit)
        self.stats["accepted"] += 1
        return ADMITTED

    def release(self, ip: str) -> None:
        count = self.counts.get(ip, 0) - 1
        if count <= 0:
            self.counts.pop(ip, None)
        else:
            self.counts[ip] = count
        self.total = max(0, self.total - 1)

    def _sensor(self, ip: str) -> SampledRate:
        s = self._sensors.get(ip)
        if s is None:
            s = self._sensors[ip] = SampledRate(self.samples, self.window_ms)
            if len(self._sensors) > MAX_SENSORS:
                self._sensors.popitem(last=False)
        else:
            self._sensors.move_to_end(ip)
        return s

    def _log_once(self, ip: str, reason: str, now: int) -> bool:
        key = (ip, reason)
        last = self._logged.get(key)
        if last is not None and now - last < self.window_ms:
            return False
        if len(self._logged) > MAX_SENSORS:
            self._logged.clear()
        self._logged[key] = now
        return True

    def statistics(self) -> dict:
        return {**self.stats, "open": self.total, "ips": len(self.counts),
                "ip_quotas": len(self._ip_rates)}
