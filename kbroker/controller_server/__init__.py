"""The controller plane: the CONTROLLER listener(s) of a voter of the metadata quorum.

Kafka runs the KRaft RPCs and the controller APIs on the listeners named in
``controller.listener.names``, separate from client listeners; so does kbroker. This
package has its own registry (``registry.CONTROLLER_REGISTRY``; one module per API, each
registering itself with ``@controller_api``) and reuses the client plane's
``kbroker.server.connection.Connection`` through ``kbroker/server/controller_listener.py``
(which accepts the connections; this package holds the handlers) (framing, in-order answers, error handling, and
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
94    UnregisterController    ``unregister_controller`` (also on client listeners)
====  ======================  =====================================================

A request a non-active controller cannot serve closes the connection (admin writes) or is
answered ``NOT_CONTROLLER``; the caller retries against the leader it learns from Raft.
"""
from __future__ import annotations

from .registry import CONTROLLER_REGISTRY

__all__ = ["ControllerPlane", "CONTROLLER_REGISTRY"]


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
