"""The broker side of KIP-631's broker lifecycle (Kafka's ``BrokerLifecycleManager``).

After the node has caught up with the metadata log, the broker registers with the active
controller (``BrokerRegistration``: its advertised listeners, rack, a fresh incarnation
id and the directory ids of its online log dirs; the answer is its broker epoch) and then heartbeats every
``broker.heartbeat.interval.ms`` with the offset it has applied. It starts fenced; the
controller unfences it once that offset reaches its registration, and ``wait_unfenced``
returns — only then does the node serve clients (the ready line). Heartbeats come faster
while fenced. A ``STALE_BROKER_EPOCH`` answer (the controller lost the registration)
registers again.

``shutdown`` is Kafka's controlled shutdown (the ``PENDING_CONTROLLED_SHUTDOWN`` state): from
then on every heartbeat carries ``want_shut_down`` (never again a request to be unfenced),
the next one goes at once and the following ones every 50 ms, until the controller answers
``should_shut_down`` — it has moved this broker's leaderships, taken it out of every ISR
and the other brokers have seen that — or the timeout passes. Then heartbeats stop.

Every heartbeat names the log dirs that went offline since start (``OfflineLogDirs``,
KIP-858), as Kafka's ``BrokerLifecycleManager`` does; the controller reads which replicas
they held from the partition records.

Every heartbeat also names the cordoned log dirs (``CordonedLogDirs``, v2, KIP-1066), the
first one included -- Kafka's brokers send null until their RECOVERY state, but kbroker's
logs are loaded before it registers -- so the controller knows them before it unfences the
broker and places no new replica on a broker whose dirs are all cordoned.

Every registration carries ``PreviousBrokerEpoch`` (v3+, KIP-966): the broker epoch the
log dirs' clean-shutdown markers remember (``kbroker.log.clean_shutdown``), -1 after a crash.
The controller keeps a cleanly stopped broker's replicas as eligible leaders and takes an
uncleanly stopped one's out of every ELR.
"""
from __future__ import annotations

import logging

import trio

from kbroker.wire.error_codes import ErrorCode as E

log = logging.getLogger("kbroker.lifecycle")


class BrokerLifecycle:
    def __init__(self, config, channel, quorum, incarnation_id, listeners, rack):
        self.config = config
        self.channel = channel
        self.quorum = quorum
        self.incarnation_id = incarnation_id
        self.listeners = listeners
        self.rack = rack
        self.broker_epoch = -1
        self.previous_broker_epoch = -1          # from the clean-shutdown markers (KIP-966)
        self.fenced = True
        self._unfenced = trio.Event()
        self.shutting_down = False
        self._may_shut_down = trio.Event()       # the controller answered should_shut_down
        self._wake = trio.Event()
        # () -> directory ids: set by the broker (KIP-858); the online ones go with each
        # registration, the offline ones with every heartbeat
        self.offline_log_dirs = lambda: ()
        self.online_log_dirs = lambda: []
        self.cordoned_log_dirs = lambda: []      # KIP-1066: directory ids, read per heartbeat
        self.stats = {"registrations": 0, "heartbeats": 0, "heartbeat_errors": 0}

    async def wait_unfenced(self) -> None:
        await self._unfenced.wait()

    def _offset(self) -> int:
        return self.quorum.driver.applied_offset - 1

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        interval = self.config.get("broker.heartbeat.interval.ms") / 1000
        task_status.started(self)
        while True:
            code, epoch = await self.channel.register_broker(
                self.incarnation_id, self.listeners, self.rack, log_dirs=self.online_log_dirs(),
                previous_broker_epoch=self.previous_broker_epoch)
            if code:
                log.warning("broker registration failed: %s; retrying", E(code).name)
                await trio.sleep(min(interval, 0.5))
                continue
            self.broker_epoch = epoch
            self.stats["registrations"] += 1
            while True:
                shutting_down = self.shutting_down
                code, caught_up, fenced, should_shut_down = await self.channel.heartbeat(
                    epoch, self._offset(), want_shut_down=shutting_down,
                    offline_dirs=self.offline_log_dirs(),
                    cordoned_dirs=self.cordoned_log_dirs())
                self.stats["heartbeats"] += 1
                if code == E.STALE_BROKER_EPOCH:
                    if shutting_down:
                        self._may_shut_down.set()     # the controller has forgotten us already
                        return
                    log.warning("broker epoch %d is stale; registering again", epoch)
                    break
                if code:
                    self.stats["heartbeat_errors"] += 1
                else:
                    if self.fenced and not fenced:
                        log.info("broker %d unfenced (epoch %d)", self.config.node_id, epoch)
                    self.fenced = fenced
                    if not fenced:
                        self._unfenced.set()
                    if shutting_down and should_shut_down:
                        log.info("broker %d: the controller granted the controlled shutdown",
                                 self.config.node_id)
                        self._may_shut_down.set()
                        return
                if self.shutting_down:
                    if shutting_down:            # asked already: poll fast (Kafka: 50 ms)
                        await trio.sleep(0.05)
                elif self.fenced:
                    with trio.move_on_after(min(interval, 0.05) if caught_up else min(interval, 0.2)):
                        await self.quorum.driver.wait_applied_change()
                else:
                    with trio.move_on_after(interval):
                        await self._wake.wait()
                    if self._wake.is_set():
                        self._wake = trio.Event()

    def wake(self) -> None:
        """Heartbeat now (a log dir went offline)."""
        self._wake.set()

    async def shutdown(self, timeout: float = 5.0) -> bool:
        """Controlled shutdown: returns once the controller let this broker go (True), or
        after ``timeout`` seconds (False). A broker that never registered returns at once."""
        if self.broker_epoch < 0:
            return True
        if not self.shutting_down:
            log.info("broker %d: beginning controlled shutdown", self.config.node_id)
            self.shutting_down = True
            self._wake.set()
        with trio.move_on_after(timeout):
            await self._may_shut_down.wait()
            return True
        log.warning("broker %d: no controlled shutdown granted within %.1f s; shutting down anyway",
                    self.config.node_id, timeout)
        return False
