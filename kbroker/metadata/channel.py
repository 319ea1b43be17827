"""``ControllerChannel``: the broker's way to the active controller (``broker.controller``).

It offers the coroutines of ``Controller`` (``create_topics``, ``maybe_create_topics``,
``delete_topics``, ``create_partitions``, ``alter_configs``, ``incremental_alter_configs``,
``allocate_producer_ids``) plus ``register_broker``/``heartbeat`` for the broker lifecycle,
``alter_partition`` for partition leaders (ISR changes) and ``elect_leaders``,
``alter_partition_reassignments``, ``list_partition_reassignments``,
``alter_user_scram_credentials`` (admin), ``assign_replicas_to_dirs`` (KIP-858, for
``assignments.AssignmentsManager``), and routes
each call:

- when this node is the active controller (a combined node leading the quorum, or the
  one-node quorum of ``make run``): straight to the local ``QuorumController``;
- otherwise it is forwarded to the Raft leader's controller listener as the Kafka request it
  stands for (CreateTopics v7, DeleteTopics v6, CreatePartitions v3, AlterConfigs v2,
  IncrementalAlterConfigs v1, AllocateProducerIds v0, BrokerRegistration v4,
  BrokerHeartbeat v0 (v1 with offline log dirs), AssignReplicasToDirs v0, AlterPartition v3, ElectLeaders v2, AlterPartitionReassignments v1,
  ListPartitionReassignments v0, AlterUserScramCredentials v0); while a client's admin
  request of that API is being served it goes inside an Envelope carrying the client's
  principal and host (``_call``, KIP-590), so the controller authorizes the client, as
  Kafka's brokers forward admin requests; the broker's own requests (heartbeats,
  auto-created topics, AlterPartition) go as they are.

A failed attempt (no leader yet, connection refused or closed, ``NOT_CONTROLLER``, the
local controller losing leadership mid-way) is retried against the current leader until
``request.timeout.ms`` passes; then every entry is answered ``NOT_CONTROLLER`` (retriable for
clients). After a forwarded write the call waits (bounded) until this node's image shows
it, so a client that created a topic through any node sees it there next.
"""
from __future__ import annotations

import logging
import uuid
from typing import Iterable, Sequence

import trio

from kbroker.common.request_scope import CURRENT_REQUEST
from kbroker.config.features import SUPPORTED_FEATURES
from kbroker.wire.envelope import FORWARDED, unwrap, wrap
from kbroker.wire import messages as w
from kbroker.wire.error_codes import ErrorCode as E

from .authz_channel import AuthzChannel
from .controller import PRODUCER_ID_BLOCK, ConfigResult, NewTopic, TopicResult, internal_topic
from .image import ZERO_UUID
from .quorum_controller import AlterPartitionResult, NotController

log = logging.getLogger("kbroker.channel")

RPC_TIMEOUT = 30.0

__all__ = ["ControllerChannel", "AlterPartitionResult"]


class ControllerChannel(AuthzChannel):
    def __init__(self, config, quorum, local=None):
        self.config = config
        self.quorum = quorum
        self.local = local                       # QuorumController on controller nodes
        self.node_id = config.node_id
        self.timeout = config.get("request.timeout.ms") / 1000
        self.stats = {"local": 0, "forwarded": 0, "retries": 0, "gave_up": 0}

    @property
    def image(self):
        return self.quorum.image

    @property
    def store(self):
        return self.quorum.store

    # ------------------------------------------------------------------ routing
    async def _route(self, local_call, remote_call, fallback, *, timeout: float | None = None):
        deadline = trio.current_time() + (self.timeout if timeout is None else timeout)
        while True:
            leader = self.quorum.leader_id
            if self.local is not None and self.quorum.is_active:
                try:
                    result = await local_call(self.local)
                    self.stats["local"] += 1
                    return result
                except NotController:
                    pass
            elif leader >= 0 and leader != self.node_id:
                addr = self.quorum.controller_endpoint(leader)
                if addr is not None:
                    result = await self._while_leader(leader, remote_call, addr)
                    if result is not None:
                        self.stats["forwarded"] += 1
                        return result
            if trio.current_time() >= deadline:
                self.stats["gave_up"] += 1
                return fallback()
            self.stats["retries"] += 1
            await trio.sleep(0.05)

    async def _while_leader(self, leader: int, remote_call, addr):
        """``remote_call(addr)``, abandoned (None: route again) as soon as the quorum's leader
        is no longer ``leader``. A request to a controller that lost its leadership or stopped
        answering (a paused process accepts connections and never replies) would otherwise
        hold the call for RPC_TIMEOUT: a broker heartbeat held that long gets the broker
        fenced by the new controller. Kafka's controller channel likewise drops its
        connection to the old controller when the leader changes and sends again."""
        result = None
        async with trio.open_nursery() as nursery:
            async def call():
                nonlocal result
                result = await remote_call(addr)
                nursery.cancel_scope.cancel()

            async def watch():
                while self.quorum.leader_id == leader:
                    await trio.sleep(0.05)
                nursery.cancel_scope.cancel()
            nursery.start_soon(call)
            nursery.start_soon(watch)
        return result

    async def _call(self, addr, api_key: int, version: int, body):
        """One request to the controller at ``addr``. While a client's admin request of the
        same API is being served, it travels inside an Envelope with the client's
        principal and host (KIP-590) and the controller authorizes the client; None (route
        again) when the envelope itself is refused."""
        ctx = CURRENT_REQUEST.get()
        if ctx is None or ctx.api_key != api_key or api_key not in FORWARDED:
            return await self.quorum.rpc.call_addr(addr, api_key, version, body, RPC_TIMEOUT)
        envelope = wrap(api_key, version, body, ctx.principal, ctx.client_host, self.node_id,
                        bool(ctx.extra.get("token_authenticated")), ctx.client_id)
        resp = await self.quorum.rpc.call_addr(addr, 58, 0, envelope, RPC_TIMEOUT)
        if resp is not None and resp.error_code not in (E.NONE, E.NOT_CONTROLLER):
            log.warning("controller %s refused an envelope (%s): is this broker's principal "
                        "allowed CLUSTER_ACTION?", addr, E(resp.error_code).name)
        return unwrap(api_key, version, resp)

    async def _wait_visible(self, predicate, timeout: float = 5.0) -> None:
        if self.quorum.is_active:
            return
        with trio.move_on_after(timeout):
            while not predicate(self.quorum.image):
                await trio.sleep(0.01)

    # ------------------------------------------------------------------ topics
    async def create_topics(self, topics: Sequence[NewTopic], *, validate_only: bool = False) -> list[TopicResult]:
        R = w.CreateTopicsRequest

        async def remote(addr):
            req = R(timeout_ms=int(self.timeout * 1000), validate_only=validate_only, topics=[
                R.CreatableTopic(
                    name=t.name, num_partitions=t.num_partitions if not t.assignments else -1,
                    replication_factor=t.replication_factor if not t.assignments else -1,
                    assignments=[R.CreatableReplicaAssignment(partition_index=i, broker_ids=list(b))
                                 for i, b in sorted((t.assignments or {}).items())],
                    configs=[R.CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()])
                for t in topics])
            resp = await self._call(addr, 19, 7, req)
            if resp is None or len(resp.topics) != len(topics) or \
                    any(r.error_code == E.NOT_CONTROLLER for r in resp.topics):
                return None
            out = []
            for t, r in zip(topics, resp.topics):
                res = TopicResult(r.name, r.error_code, r.error_message)
                if not r.error_code:
                    res.topic_id = r.topic_id
                    res.num_partitions, res.replication_factor = r.num_partitions, r.replication_factor
                out.append(res)
            created = {r.name: r.topic_id for r in out if not r.error_code and r.topic_id != ZERO_UUID}
            if created and not validate_only:
                await self._wait_visible(lambda img: all(
                    n in img.topics and img.topics[n].topic_id == tid for n, tid in created.items()))
            return out

        return await self._route(
            lambda c: c.create_topics(topics, validate_only=validate_only), remote,
            lambda: [TopicResult(t.name, E.NOT_CONTROLLER, "No active controller.") for t in topics])

    async def maybe_create_topics(self, names: Iterable[str], *, num_partitions: int = -1,
                                  replication_factor: int = -1,
                                  configs: dict[str, str] | None = None) -> list[TopicResult]:
        new = [internal_topic(n, self.config)
               or NewTopic(n, num_partitions, replication_factor, None, dict(configs or {}))
               for n in dict.fromkeys(names) if n not in self.image.topics]
        if not new:
            return []
        return await self.create_topics(new)

    async def delete_topics(self, names: Sequence[str] = (), ids: Sequence[uuid.UUID] = ()):
        R = w.DeleteTopicsRequest

        async def remote(addr):
            req = R(timeout_ms=int(self.timeout * 1000),
                    topics=[R.DeleteTopicState(name=n, topic_id=ZERO_UUID) for n in names]
                    + [R.DeleteTopicState(name=None, topic_id=i) for i in ids])
            resp = await self._call(addr, 20, 6, req)
            if resp is None or any(r.error_code == E.NOT_CONTROLLER for r in resp.responses):
                return None
            out = [(r.name, r.topic_id, r.error_code, r.error_message) for r in resp.responses]
            gone = {tid for _, tid, code, _ in out if not code}
            if gone:
                await self._wait_visible(lambda img: not any(t in img.topics_by_id for t in gone))
            return out

        return await self._route(
            lambda c: c.delete_topics(names, ids), remote,
            lambda: [(n, ZERO_UUID, E.NOT_CONTROLLER, "No active controller.") for n in names]
            + [(None, i, E.NOT_CONTROLLER, "No active controller.") for i in ids])

    async def create_partitions(self, requests, *, validate_only: bool = False):
        R = w.CreatePartitionsRequest

        async def remote(addr):
            req = R(timeout_ms=int(self.timeout * 1000), validate_only=validate_only, topics=[
                R.CreatePartitionsTopic(name=n, count=c, assignments=None if a is None else [
                    R.CreatePartitionsAssignment(broker_ids=list(b)) for b in a])
                for n, c, a in requests])
            resp = await self._call(addr, 37, 3, req)
            if resp is None or any(r.error_code == E.NOT_CONTROLLER for r in resp.results):
                return None
            out = [(r.name, r.error_code, r.error_message) for r in resp.results]
            grown = {n: c for (n, c, _), (_, code, _) in zip(requests, out) if not code}
            if grown and not validate_only:
                await self._wait_visible(lambda img: all(
                    n in img.topics and len(img.topics[n].partitions) >= c for n, c in grown.items()))
            return out

        return await self._route(
            lambda c: c.create_partitions(requests, validate_only=validate_only), remote,
            lambda: [(n, E.NOT_CONTROLLER, "No active controller.") for n, _, _ in requests])

    # ------------------------------------------------------------------ configs
    async def alter_configs(self, resources, *, validate_only: bool = False) -> list[ConfigResult]:
        R = w.AlterConfigsRequest

        async def remote(addr):
            req = R(validate_only=validate_only, resources=[
                R.AlterConfigsResource(resource_type=t, resource_name=n, configs=[
                    R.AlterableConfig(name=k, value=v) for k, v in cfg.items()])
                for t, n, cfg in resources])
            resp = await self._call(addr, 33, 2, req)
            return await self._config_results(resp, validate_only)

        return await self._route(
            lambda c: c.alter_configs(resources, validate_only=validate_only), remote,
            lambda: [ConfigResult(t, n, E.NOT_CONTROLLER, "No active controller.") for t, n, _ in resources])

    async def incremental_alter_configs(self, resources, *, validate_only: bool = False) -> list[ConfigResult]:
        R = w.IncrementalAlterConfigsRequest

        async def remote(addr):
            req = R(validate_only=validate_only, resources=[
                R.AlterConfigsResource(resource_type=t, resource_name=n, configs=[
                    R.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])
                for t, n, ops in resources])
            resp = await self._call(addr, 44, 1, req)
            return await self._config_results(resp, validate_only)

        return await self._route(
            lambda c: c.incremental_alter_configs(resources, validate_only=validate_only), remote,
            lambda: [ConfigResult(t, n, E.NOT_CONTROLLER, "No active controller.") for t, n, _ in resources])

    async def alter_client_quotas(self, entries, *, validate_only: bool = False) -> list:
        R = w.AlterClientQuotasRequest

        async def remote(addr):
            req = R(validate_only=validate_only, entries=[R.EntryData(
                entity=[R.EntryData.EntityData(entity_type=t, entity_name=n) for t, n in pairs],
                ops=[R.EntryData.OpData(key=k, value=v, remove=rm) for k, v, rm in ops])
                for pairs, ops in entries])
            resp = await self._call(addr, 49, 1, req)
            if resp is None or any(e.error_code == E.NOT_CONTROLLER for e in resp.entries):
                return None
            out = [(e.error_code, e.error_message) for e in resp.entries]
            if not validate_only and any(not code for code, _ in out):
                await self.quorum.wait_caught_up_after_now()
            return out

        return await self._route(
            lambda c: c.alter_client_quotas(entries, validate_only=validate_only), remote,
            lambda: [(E.NOT_CONTROLLER, "No active controller.") for _ in entries])

    async def _config_results(self, resp, validate_only: bool):
        if resp is None or any(r.error_code == E.NOT_CONTROLLER for r in resp.responses):
            return None
        out = [ConfigResult(r.resource_type, r.resource_name, r.error_code, r.error_message)
               for r in resp.responses]
        if not validate_only and any(not r.error_code for r in out):
            await self.quorum.wait_caught_up_after_now()
        return out

    # ------------------------------------------------------------------ features
    async def update_features(self, updates, *, validate_only: bool = False) -> tuple[int, str | None]:
        """UpdateFeatures on the active controller (``updates``: ``FeatureUpdate``s);
        ``(error code, message)`` once committed and visible in this node's image."""
        R = w.UpdateFeaturesRequest

        async def remote(addr):
            req = R(timeout_ms=int(self.timeout * 1000), validate_only=validate_only, feature_updates=[
                R.FeatureUpdateKey(feature=u.name, max_version_level=u.level, upgrade_type=u.upgrade_type)
                for u in updates])
            resp = await self._call(addr, 57, 2, req)
            if resp is None or resp.error_code == E.NOT_CONTROLLER:
                return None
            if not resp.error_code and not validate_only:
                await self.quorum.wait_caught_up_after_now()
            return resp.error_code, resp.error_message

        return await self._route(
            lambda c: c.update_features(updates, validate_only=validate_only), remote,
            lambda: (E.NOT_CONTROLLER, "No active controller."))

    async def unregister_broker(self, broker_id: int) -> tuple[int, str | None]:
        """UnregisterBroker on the active controller: ``(error code, message)``."""
        async def remote(addr):
            resp = await self._call(addr, 64, 0, w.UnregisterBrokerRequest(broker_id=broker_id))
            if resp is None or resp.error_code == E.NOT_CONTROLLER:
                return None
            if not resp.error_code:
                await self._wait_visible(lambda img: broker_id not in img.brokers)
            return resp.error_code, resp.error_message

        return await self._route(lambda c: c.unregister_broker(broker_id), remote,
                                 lambda: (E.NOT_CONTROLLER, "No active controller."))

    # ------------------------------------------------------------------ SCRAM credentials
    async def alter_user_scram_credentials(self, deletions, upsertions):
        R = w.AlterUserScramCredentialsRequest

        async def remote(addr):
            req = R(deletions=[R.ScramCredentialDeletion(name=n, mechanism=m) for n, m in deletions],
                    upsertions=[R.ScramCredentialUpsertion(name=n, mechanism=m, iterations=i, salt=s,
                                                           salted_password=p)
                                for n, m, i, s, p in upsertions])
            resp = await self._call(addr, 51, 0, req)
            if resp is None or any(r.error_code == E.NOT_CONTROLLER for r in resp.results):
                return None
            out = [(r.user, r.error_code, r.error_message) for r in resp.results]
            if any(not code for _, code, _ in out):
                await self.quorum.wait_caught_up_after_now()
            return out

        users = list(dict.fromkeys([n for n, _ in deletions] + [u[0] for u in upsertions]))
        return await self._route(
            lambda c: c.alter_user_scram_credentials(deletions, upsertions), remote,
            lambda: [(u, E.NOT_CONTROLLER, "No active controller.") for u in users])

    # ------------------------------------------------------------------ producer ids
    async def allocate_producer_ids(self, count: int = PRODUCER_ID_BLOCK) -> tuple[int, int]:
        async def remote(addr):
            me = self.image.brokers.get(self.node_id)
            req = w.AllocateProducerIdsRequest(broker_id=self.node_id,
                                               broker_epoch=me.broker_epoch if me else -1)
            resp = await self._call(addr, 67, 0, req)
            if resp is None or resp.error_code:
                return None
            return resp.producer_id_start, resp.producer_id_len

        def fail():
            raise RuntimeError("no active controller to allocate producer ids")

        return await self._route(lambda c: c.allocate_producer_ids(count), remote, fail)

    # ------------------------------------------------------------------ broker lifecycle
    async def register_broker(self, incarnation_id, listeners, rack, log_dirs=(),
                              previous_broker_epoch: int = -1) -> tuple[int, int]:
        """BrokerRegistration; ``log_dirs``: the directory ids of this broker's online log
        dirs, in Kafka's order (KIP-858, as Kafka's ``BrokerLifecycleManager`` sends them);
        ``previous_broker_epoch``: the epoch of its last clean shutdown, -1 if unknown (v3+,
        KIP-966)."""
        R = w.BrokerRegistrationRequest

        async def remote(addr):
            req = R(broker_id=self.node_id, cluster_id=self.quorum.cluster_id, incarnation_id=incarnation_id,
                    listeners=[R.Listener(name=n, host=h, port=p, security_protocol=0) for n, h, p in listeners],
                    features=[R.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
                              for n, (lo, hi) in sorted(SUPPORTED_FEATURES.items())],
                    rack=rack, is_migrating_zk_broker=False, log_dirs=list(log_dirs),
                    previous_broker_epoch=previous_broker_epoch)
            resp = await self._call(addr, 62, 4, req)
            if resp is None or resp.error_code == E.NOT_CONTROLLER:
                return None
            return resp.error_code, resp.broker_epoch

        return await self._route(
            lambda c: c.register_broker(self.node_id, self.quorum.cluster_id, incarnation_id, listeners, rack,
                                        log_dirs=list(log_dirs), previous_broker_epoch=previous_broker_epoch),
            remote, lambda: (E.NOT_CONTROLLER, -1))

    async def heartbeat(self, broker_epoch: int, metadata_offset: int, *, want_fence: bool = False,
                        want_shut_down: bool = False, offline_dirs: Sequence = (),
                        cordoned_dirs: Sequence | None = None) -> tuple[int, bool, bool, bool]:
        """BrokerHeartbeat. ``offline_dirs``: directory ids of failed log dirs (v1's
        ``OfflineLogDirs``, KIP-858), in every heartbeat while they are offline, as Kafka's
        brokers send them; ``cordoned_dirs``: those of the cordoned ones (v2's
        ``CordonedLogDirs``, KIP-1066), None before the broker caught up."""
        async def remote(addr):
            version = 2 if cordoned_dirs is not None else 1 if offline_dirs else 0
            req = w.BrokerHeartbeatRequest(broker_id=self.node_id, broker_epoch=broker_epoch,
                                           current_metadata_offset=metadata_offset,
                                           want_fence=want_fence, want_shut_down=want_shut_down)
            if offline_dirs:
                req.offline_log_dirs = list(offline_dirs)
            if cordoned_dirs is not None:
                req.cordoned_log_dirs = list(cordoned_dirs)
            resp = await self._call(addr, 63, version, req)
            if resp is None or resp.error_code == E.NOT_CONTROLLER:
                return None
            return resp.error_code, resp.is_caught_up, resp.is_fenced, resp.should_shut_down

        return await self._route(
            lambda c: c.heartbeat(self.node_id, broker_epoch, metadata_offset, want_fence, want_shut_down,
                                  offline_dirs=tuple(offline_dirs),
                                  cordoned_dirs=None if cordoned_dirs is None else tuple(cordoned_dirs)),
            remote, lambda: (E.NOT_CONTROLLER, False, True, False))

    async def assign_replicas_to_dirs(self, broker_epoch: int, assignments: dict, *,
                                      timeout: float | None = None) -> tuple[int, dict]:
        """AssignReplicasToDirs v0 (KIP-858): ``assignments`` maps a directory id to the
        ``[(topic id, partition)]`` this broker placed there. ``(error code, {(directory id,
        topic id, partition): error code})``; ``NOT_CONTROLLER`` when no controller answered
        within ``timeout`` (default ``request.timeout.ms``)."""
        A = w.AssignReplicasToDirsRequest

        async def remote(addr):
            dirs = []
            for dir_id, replicas in assignments.items():
                topics: dict = {}
                for tid, part in replicas:
                    topics.setdefault(tid, []).append(A.PartitionData(partition_index=part))
                dirs.append(A.DirectoryData(id=dir_id, topics=[
                    A.TopicData(topic_id=tid, partitions=ps) for tid, ps in topics.items()]))
            resp = await self._call(addr, 73, 0, A(broker_id=self.node_id, broker_epoch=broker_epoch,
                                                  directories=dirs))
            if resp is None or resp.error_code == E.NOT_CONTROLLER:
                return None
            return resp.error_code, {(d.id, t.topic_id, p.partition_index): p.error_code
                                     for d in resp.directories for t in d.topics for p in t.partitions}

        return await self._route(
            lambda c: c.assign_replicas_to_dirs(self.node_id, broker_epoch, assignments), remote,
            lambda: (E.NOT_CONTROLLER, {}), timeout=timeout)

    # ------------------------------------------------------------------ replication
    async def alter_partition(self, broker_epoch: int, topic_id: uuid.UUID, partition: int,
                              leader_epoch: int, partition_epoch: int, new_isr: Sequence[int], *,
                              timeout: float | None = None) -> AlterPartitionResult:
        """Ask the active controller to make ``new_isr`` the ISR of a partition this broker
        leads (Kafka's ``AlterPartitionManager``, one partition per call), sent as
        AlterPartition v3 with each ISR member's broker epoch from the current image. The
        answer is the partition's committed state, or an error (``FENCED_LEADER_EPOCH``,
        ``INVALID_UPDATE_VERSION``, ``INELIGIBLE_REPLICA``, ``STALE_BROKER_EPOCH``...; the
        caller waits for the image then). No controller reachable within ``timeout``
        (default ``request.timeout.ms``): ``NOT_CONTROLLER``. After a forwarded change the
        call waits (bounded) until this node's image has the new partition epoch."""
        R = w.AlterPartitionRequest
        brokers = self.image.brokers
        isr = [int(r) for r in new_isr]
        topics = [R.TopicData(topic_id=topic_id, partitions=[R.PartitionData(
            partition_index=partition, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
            leader_recovery_state=0,
            new_isr_with_epochs=[R.BrokerState(broker_id=r, broker_epoch=brokers[r].broker_epoch
                                               if r in brokers else -1) for r in isr])])]

        def pick(code, results) -> AlterPartitionResult:
            if code:
                return AlterPartitionResult(code)
            for _, answers in results:
                for index, r in answers:
                    if index == partition:
                        return r
            return AlterPartitionResult(E.UNKNOWN_SERVER_ERROR)

        async def local(c):
            code, results = await c.alter_partition(self.node_id, broker_epoch, topics, version=3)
            return pick(code, results)

        async def remote(addr):
            resp = await self._call(addr, 56, 3, R(broker_id=self.node_id, broker_epoch=broker_epoch,
                                                   topics=topics))
            if resp is None or resp.error_code == E.NOT_CONTROLLER:
                return None
            if resp.error_code:
                return AlterPartitionResult(resp.error_code)
            found = [p for t in resp.topics if t.topic_id == topic_id for p in t.partitions
                     if p.partition_index == partition]
            if not found or found[0].error_code == E.NOT_CONTROLLER:
                return None            # a stale controller: find the new one
            p = found[0]
            if p.error_code:
                return AlterPartitionResult(p.error_code)
            result = AlterPartitionResult(E.NONE, p.leader_id, p.leader_epoch, tuple(p.isr), p.partition_epoch)

            def visible(img) -> bool:
                t = img.topics_by_id.get(topic_id)
                q = t.partitions.get(partition) if t is not None else None
                return q is None or q.partition_epoch >= result.partition_epoch
            await self._wait_visible(visible, 2.0)
            return result

        limit = self.timeout if timeout is None else timeout
        # the bound covers a controller that accepts the request and then never answers
        with trio.move_on_after(limit + 1.0):
            return await self._route(local, remote, lambda: AlterPartitionResult(E.NOT_CONTROLLER),
                                     timeout=limit)
        self.stats["gave_up"] += 1
        return AlterPartitionResult(E.NOT_CONTROLLER)

    # ------------------------------------------------------------------ elections, reassignment
    async def elect_leaders(self, election_type: int, topics):
        """ElectLeaders on the active controller: ``topics`` ``[(name, [partition])]`` or None
        (every partition); ``(error code, [(topic, [(partition, code, message)])])``."""
        R = w.ElectLeadersRequest

        async def remote(addr):
            req = R(election_type=election_type, timeout_ms=int(self.timeout * 1000),
                    topic_partitions=None if topics is None else [
                        R.TopicPartitions(topic=n, partitions=list(ps)) for n, ps in topics])
            resp = await self._call(addr, 43, 2, req)
            if resp is None or resp.error_code == E.NOT_CONTROLLER:
                return None
            results = [(r.topic, [(p.partition_id, p.error_code, p.error_message) for p in r.partition_result])
                       for r in resp.replica_election_results]
            if any(code == E.NONE for _, ps in results for _, code, _ in ps):
                await self.quorum.wait_caught_up_after_now()
            return resp.error_code, results

        return await self._route(
            lambda c: c.elect_leaders(election_type, topics), remote,
            lambda: (E.NOT_CONTROLLER, [(n, [(i, E.NOT_CONTROLLER, "No active controller.") for i in ps])
                                        for n, ps in topics or ()]))

    async def alter_partition_reassignments(self, topics, allow_replication_factor_change: bool = True):
        """AlterPartitionReassignments on the active controller: ``topics`` ``[(name,
        [(partition, target replicas or None)])]``; ``[(name, [(partition, code, message)])]``."""
        R = w.AlterPartitionReassignmentsRequest

        async def remote(addr):
            req = R(timeout_ms=int(self.timeout * 1000),
                    allow_replication_factor_change=allow_replication_factor_change, topics=[
                R.ReassignableTopic(name=n, partitions=[
                    R.ReassignablePartition(partition_index=i, replicas=None if t is None else list(t))
                    for i, t in ps]) for n, ps in topics])
            resp = await self._call(addr, 45, 1, req)
            if resp is None or resp.error_code == E.NOT_CONTROLLER:
                return None
            out = [(r.name, [(p.partition_index, p.error_code, p.error_message) for p in r.partitions])
                   for r in resp.responses]
            if any(code == E.NONE for _, ps in out for _, code, _ in ps):
                await self.quorum.wait_caught_up_after_now()
            return out

        return await self._route(
            lambda c: c.alter_partition_reassignments(topics, allow_replication_factor_change), remote,
            lambda: [(n, [(i, E.NOT_CONTROLLER, "No active controller.") for i, _ in ps]) for n, ps in topics])

    async def list_partition_reassignments(self, topics):
        """ListPartitionReassignments on the active controller: ``[(name, [(partition,
        replicas, adding, removing)])]``, or ``E.NOT_CONTROLLER`` when none answers."""
        R = w.ListPartitionReassignmentsRequest

        async def local(c):
            return await c.list_partition_reassignments(topics)

        async def remote(addr):
            req = R(timeout_ms=int(self.timeout * 1000), topics=None if topics is None else [
                R.ListPartitionReassignmentsTopics(name=n, partition_indexes=list(ps)) for n, ps in topics])
            resp = await self._call(addr, 46, 0, req)
            if resp is None or resp.error_code == E.NOT_CONTROLLER:
                return None
            return [(t.name, [(p.partition_index, list(p.replicas), list(p.adding_replicas),
                               list(p.removing_replicas)) for p in t.partitions]) for t in resp.topics]

        return await self._route(local, remote, lambda: E.NOT_CONTROLLER)

    def statistics(self) -> dict:
        out = {"channel": dict(self.stats), "image": self.image.statistics()}
        if self.local is not None:
            out["controller"] = self.local.statistics()
        return out
