"""``__share_group_state`` on a single node with Kafka's defaults
(``share.coordinator.state.topic.replication.factor`` 3, ``.min.isr`` 2): both brokers
refuse to create it with three replicas on one node, so the share coordinator is not
available (FindCoordinator key type 2, KIP-932) and the topic is not created. That is why
kbroker keeps Kafka's defaults here and ``--dev`` (or the operator) sets 1 and 1 on one node,
unlike ``offsets.topic.replication.factor``/``transaction.state.log.*``, which default to 1
in kbroker (README "Configuration")."""
from __future__ import annotations

import time

from compat_tests.differential.common import Connection
from compat_tests.helpers import create_topic
from kbroker.raft.control import uuid_to_kafka
from kbroker.wire import messages as M

CLIENT = "hand-built"
COORDINATOR_NOT_AVAILABLE = 15
KAFKA_DEFAULTS = {"share.coordinator.state.topic.replication.factor": "3",
                  "share.coordinator.state.topic.min.isr": "2"}


def test_share_coordinator_unavailable_on_one_node_with_kafkas_defaults(broker_factory, topic_name):
    b = broker_factory(**KAFKA_DEFAULTS)
    create_topic(b.bootstrap_servers, topic_name, partitions=1)
    host, port = b.bootstrap_servers.rsplit(":", 1)
    conn = Connection((host, int(port)), timeout=30)
    try:
        md = conn.request(3, 12, M.MetadataRequest(topics=[M.MetadataRequest.MetadataRequestTopic(name=topic_name)],
                                                   allow_auto_topic_creation=False))
        key = f"g-{topic_name}:{uuid_to_kafka(md.topics[0].topic_id)}:0"
        codes = []
        for _ in range(5):              # asked again, as a share consumer keeps asking
            fc = conn.request(10, 6, M.FindCoordinatorRequest(key_type=2, coordinator_keys=[key]))
            codes.append(fc.coordinators[0].error_code)
            time.sleep(0.5)
        assert codes == [COORDINATOR_NOT_AVAILABLE] * 5, codes
        md = conn.request(3, 12, M.MetadataRequest(
            topics=[M.MetadataRequest.MetadataRequestTopic(name="__share_group_state")],
            allow_auto_topic_creation=False))
        assert md.topics[0].error_code == 3          # UNKNOWN_TOPIC_OR_PARTITION: never created
    finally:
        conn.close()
