"""The controller plane: the CONTROLLER listener(s) of a voter of the metadata quorum.

Kafka runs the KRaft RPCs and the controller APIs on the listeners named in
``controller.listener.names``, separate from client listeners; so does kbroker. This
package has its own registry (``registry.CONTROLLER_REGISTRY``; one module per API, each
registering itself with ``@controller_api``) and reuses the client plane's
``kbroker.server.connection.Connection`` (framing, in-order answers, error handling, and
TLS/SASL when ``listener.security.protocol.map`` gives the controller listener SSL,
SASL_PLAINTEXT or SASL_SSL).

Served here:

====  ======================  =====================================================
key   API                     module
====  ======================  =====================================================
1     Fetch                   ``fetch`` — ``__cluster_metadata`` from replicas only
18    ApiVersions             ``api_versions`` — this registry's keys
19    CreateTopics            ``forwarded`` — brokers forward admin writes here
20    DeleteTopics            ``forwarded``
30    CreateAcls              ``forwarded``
31    DeleteAcls              ``forwarded``
33    AlterConfigs            ``forwarded``
37    CreatePartitions        ``forwarded``
43    ElectLeaders            ``forwarded``
44    IncrementalAlterConfigs ``forwarded``
45    AlterPartitionReassign. ``forwarded``
46    ListPartitionReassign.  ``forwarded``
52    Vote                    ``vote``
53    BeginQuorumEpoch        ``begin_quorum_epoch``
54    EndQuorumEpoch          ``end_quorum_epoch``
55    DescribeQuorum          ``describe_quorum`` (also on client listeners)
56    AlterPartition          ``alter_partition`` — leaders change ISRs (replication)
57    UpdateFeatures          ``forwarded``
58    Envelope                ``envelope`` — delegation-token writes with the caller's principal
59    FetchSnapshot           ``fetch_snapshot``
60    DescribeCluster         ``describe_cluster`` (``--bootstrap-controller`` clients)
62    BrokerRegistration      ``broker_registration``
63    BrokerHeartbeat         ``broker_heartbeat``
64    UnregisterBroker        ``forwarded``
67    AllocateProducerIds     ``allocate_producer_ids``
====  ======================  =====================================================

A request a non-active controller cannot serve closes the connection (admin writes) or is
answered ``NOT_CONTROLLER``; the caller retries against the leader it learns from Raft.
"""
from __future__ import annotations

import logging

import trio

from kbroker.security.credentials import Credentials
from kbroker.server.bind import open_tcp_listeners
from kbroker.server.connection import Connection

from .registry import CONTROLLER_REGISTRY, load_all

log = logging.getLogger("kbroker.controller_server")

__all__ = ["ControllerPlane", "ControllerServer", "CONTROLLER_REGISTRY"]


class ControllerPlane:
    """What controller-plane handlers see as ``ctx.broker``."""

    def __init__(self, broker, quorum, controller):
        self.broker = broker
        self.config = broker.config
        self.node_id = broker.config.node_id
        self.quorum = quorum
        self.controller = controller          # the local QuorumController
        self.cluster_id = quorum.cluster_id
        # the node's StandardAuthorizer, over this plane's image: a direct request is
        # authorized for the connection's principal (a broker's own), a forwarded one for
        # the client principal its Envelope carries (``envelope``, KIP-590)
        self.authorizer = getattr(broker, "authorizer", None)

    @property
    def metadata(self):
        return self.quorum.image


class ControllerServer:
    """Accepts connections on the controller listeners until cancelled."""

    def __init__(self, plane: ControllerPlane, listeners):
        self.plane = plane
        self.broker = plane                   # Connection builds RequestContext(server.broker, ...)
        self.listeners = listeners
        self.registry = load_all()
        cfg = plane.config
        self.max_frame = cfg.get("socket.request.max.bytes")
        self.idle_timeout_s = cfg.get("connections.max.idle.ms") / 1000
        self.draining = False
        self.bound = []
        # TLS/SASL of the controller listeners (kbroker.security), as on client listeners
        self.listener_security = getattr(cfg, "controller_listener_security", None) or {}
        self.credentials = Credentials(lambda: plane.metadata,
                                       lambda: cfg.get("delegation.token.secret.key"),
                                       lambda: plane.broker.clock.now_ms())

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        socks = []
        try:
            for l in self.listeners:
                ss = await open_tcp_listeners(l.port, l.host)
                socks.append((l, ss))
                self.bound.append((l.name, l.host, ss[0].socket.getsockname()[1]))
            async with trio.open_nursery() as nursery:
                for l, ss in socks:
                    for s in ss:
                        nursery.start_soon(self._accept_loop, s, l.name, nursery)
                log.info("controller listener(s) %s", ", ".join(f"{n}://{h}:{p}" for n, h, p in self.bound))
                task_status.started(self)
        finally:
            self.draining = True
            with trio.CancelScope(shield=True):
                for _, ss in socks:
                    for s in ss:
                        await trio.aclose_forcefully(s)

    async def _accept_loop(self, sock, name: str, nursery: trio.Nursery) -> None:
        while True:
            try:
                stream = await sock.accept()
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                return
            except OSError as e:
                log.error("accept failed on %s: %s", name, e)
                await trio.sleep(0.1)
                continue
            nursery.start_soon(Connection(self, stream, name).run)
