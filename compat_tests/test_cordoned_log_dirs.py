"""``cordoned.log.dirs`` (KIP-1066) on a single node of each target, formatted at the
default level (4.4-IV2, which records cordoned dirs): with its only log dir cordoned (``*``)
DescribeLogDirs v5 reports it cordoned, and CreateTopics has no broker to place a partition
on -- the same error and message on both."""
from __future__ import annotations

from compat_tests.differential.common import Connection
from kbroker.wire import messages as M

CLIENT = "hand-built"
INVALID_REPLICATION_FACTOR = 38


def test_a_cordoned_node_takes_no_new_partition(broker_factory, topic_name):
    b = broker_factory(**{"cordoned.log.dirs": "*"})
    c = Connection((b.host, b.port), timeout=30)
    try:
        dirs = c.request(35, 5, M.DescribeLogDirsRequest(topics=None))
        assert dirs.error_code == 0
        assert [(r.error_code, r.is_cordoned) for r in dirs.results] == [(0, True)]
        R = M.CreateTopicsRequest
        resp = c.request(19, 7, R(topics=[R.CreatableTopic(name=topic_name, num_partitions=1, replication_factor=1,
                                                           assignments=[], configs=[])],
                                  timeout_ms=30_000, validate_only=False))
        [t] = resp.topics
        assert (t.error_code, t.error_message) == (
            INVALID_REPLICATION_FACTOR,
            "Unable to replicate the partition 1 time(s): All brokers are currently fenced, or have all "
            "their log directories cordoned.")
    finally:
        c.close()
