"""``cordoned.log.dirs`` (KIP-1066) on a real broker process with two log dirs: new partitions
go to the other dir, DescribeLogDirs v5 reports the cordoned one (a dynamic per-broker value
moves both at the next heartbeat), every dir cordoned (``*``)
leaves the controller no broker to place a new topic on (the heartbeats carried them), and an
entry that is not one of ``log.dirs`` stops the start."""
from kafka.admin import KafkaAdminClient, NewTopic

from kbroker.wire import messages as w
from tests.cluster.support import call, wait_for
from tests.support.broker_proc import BrokerProcess

INVALID_REPLICATION_FACTOR = 38


class _TwoDirs(BrokerProcess):
    """A broker on two log directories (``--data-dir`` would set one)."""

    def __init__(self, d1, d2, **overrides):
        super().__init__(d1, overrides={"log.dirs": f"{d1},{d2}", **overrides})

    def command(self) -> list[str]:
        cmd = super().command()
        i = cmd.index("--data-dir")
        return cmd[:i] + cmd[i + 2:]


def _log_dirs(port, topic) -> dict[str, tuple[bool, list[int]]]:
    """{log dir: (is_cordoned, [partitions of ``topic`` there])} from DescribeLogDirs v5."""
    R = w.DescribeLogDirsRequest
    r = call(port, 35, 5, R(topics=None))
    return {d.log_dir: (d.is_cordoned, sorted(p.partition_index for t in d.topics if t.name == topic
                                               for p in t.partitions)) for d in r.results}


def _create(port, name, partitions):
    R = w.CreateTopicsRequest
    resp = call(port, 19, 5, R(topics=[R.CreatableTopic(name=name, num_partitions=partitions,
                                                        replication_factor=1, assignments=[], configs=[])],
                               timeout_ms=30_000, validate_only=False))
    return resp.topics[0]


def test_new_partitions_avoid_the_cordoned_dir(tmp_path):
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    broker = _TwoDirs(d1, d2, **{"cordoned.log.dirs": str(d2)})
    broker.start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("spread", num_partitions=4, replication_factor=1)])
        admin.close()
        dirs = wait_for(lambda: (lambda d: d if d.get(str(d1), (0, []))[1] == [0, 1, 2, 3] else None)(
            _log_dirs(broker.port, "spread")), what="the partitions in the uncordoned dir")
        assert dirs == {str(d1): (False, [0, 1, 2, 3]), str(d2): (True, [])}
        # a dynamic per-broker value (kafka-configs --entity-type brokers --entity-name 1)
        R = w.IncrementalAlterConfigsRequest
        resp = call(broker.port, 44, 1, R(resources=[R.AlterConfigsResource(
            resource_type=4, resource_name="1", configs=[R.AlterableConfig(
                name="cordoned.log.dirs", config_operation=0, value=str(d1))])], validate_only=False))
        assert resp.responses[0].error_code == 0, resp.responses[0]
        wait_for(lambda: _log_dirs(broker.port, "spread") == {str(d1): (True, [0, 1, 2, 3]),
                                                              str(d2): (False, [])} or None,
                 what="d1 cordoned instead of d2")
        assert _create(broker.port, "moved", 2).error_code == 0
        assert wait_for(lambda: _log_dirs(broker.port, "moved")[str(d2)][1] == [0, 1] or None,
                        what="the new partitions in d2")
    finally:
        assert broker.stop() == 0


def test_every_dir_cordoned_takes_no_new_topic(tmp_path):
    broker = _TwoDirs(tmp_path / "d1", tmp_path / "d2", **{"cordoned.log.dirs": "*"})
    broker.start()
    try:
        assert all(c for c, _ in _log_dirs(broker.port, "x").values())
        # the heartbeats carried the cordoned dirs to the controller before it unfenced the broker
        res = _create(broker.port, "nowhere", 1)
        assert (res.error_code, res.error_message) == (
            INVALID_REPLICATION_FACTOR,
            "Unable to replicate the partition 1 time(s): All brokers are currently fenced, or have all "
            "their log directories cordoned.")
    finally:
        assert broker.stop() == 0


def test_an_unknown_cordoned_dir_stops_the_start(tmp_path):
    broker = _TwoDirs(tmp_path / "d1", tmp_path / "d2", **{"cordoned.log.dirs": str(tmp_path / "d3")})
    try:
        broker.start()
    except RuntimeError as e:
        assert "cordoned.log.dirs" in str(e) and "is not one of log.dirs" in str(e), str(e)
    else:
        broker.stop()
        raise AssertionError("the broker started with a cordoned dir outside log.dirs")
