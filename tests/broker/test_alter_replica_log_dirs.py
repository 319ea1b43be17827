"""AlterReplicaLogDirs (34) moving a replica between two log.dirs (JBOD) of a real broker
process: records produced before and after the move are all consumed, DescribeLogDirs shows
the partition in its new directory, and a restart finds it there with every record."""
from kafka import KafkaConsumer, KafkaProducer

from kbroker.wire import messages as w
from tests.cluster.support import call
from tests.support.broker_proc import BrokerProcess

TOPIC = "jbod"


class _TwoDirs(BrokerProcess):
    """A broker on two log directories (``--data-dir`` would set one)."""

    def __init__(self, d1, d2):
        super().__init__(d1, overrides={"log.dirs": f"{d1},{d2}"})

    def command(self) -> list[str]:
        cmd = super().command()
        i = cmd.index("--data-dir")
        return cmd[:i] + cmd[i + 2:]


def _consume(bootstrap, n):
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=15_000)
    values = []
    for msg in consumer:
        values.append(msg.value)
        if len(values) == n:
            break
    consumer.close()
    return values


def _dir_of(port) -> str:
    R = w.DescribeLogDirsRequest
    r = call(port, 35, 4, R(topics=[R.DescribableLogDirTopic(topic=TOPIC, partitions=[0])]))
    return next(d.log_dir for d in r.results for t in d.topics if t.name == TOPIC and t.partitions)


def _move(port, dest) -> int:
    R = w.AlterReplicaLogDirsRequest
    r = call(port, 34, 2, R(dirs=[R.AlterReplicaLogDir(path=str(dest), topics=[
        R.AlterReplicaLogDirTopic(name=TOPIC, partitions=[0])])]))
    return r.results[0].partitions[0].error_code


def test_move_a_replica_between_log_dirs(tmp_path):
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    broker = _TwoDirs(d1, d2)
    broker.start()
    try:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        for i in range(20):
            producer.send(TOPIC, b"before-%d" % i, partition=0)
        producer.flush(30)
        src = _dir_of(broker.port)
        dst = str(d2 if src == str(d1) else d1)
        assert _move(broker.port, tmp_path / "elsewhere") == 57          # LOG_DIR_NOT_FOUND
        assert _move(broker.port, src) == 0                              # already there
        assert _move(broker.port, dst) == 0
        assert _dir_of(broker.port) == dst
        for i in range(20):
            producer.send(TOPIC, b"after-%d" % i, partition=0)
        producer.flush(30)
        producer.close()
        expected = [b"before-%d" % i for i in range(20)] + [b"after-%d" % i for i in range(20)]
        assert _consume(broker.bootstrap, 40) == expected
    finally:
        assert broker.stop() == 0
    broker.start()
    try:
        assert _dir_of(broker.port) == dst
        assert _consume(broker.bootstrap, 40) == expected
    finally:
        broker.stop()
