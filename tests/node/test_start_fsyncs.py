"""The waits of a fresh single node's start (issue 32, start-up): every fsync a broker makes
from its start to its ready line, by the name of the file or directory synced (counted on
the real ``os.fsync``, which still runs), and the metadata log that start writes -- its
batches and their records in Kafka's order: the leader's epoch-start ``LeaderChange``, the
bootstrap records, the broker's registration, its unfencing.

Each fsync is a durability point of its own: ``meta.properties`` and its directory (the
rename, as Kafka's ``PropertiesUtils``); the quorum state, the
metadata log's first append -- the epoch's LeaderChange with the bootstrap records, proposed
before the driver's first Ready -- and its epoch checkpoint, with one fsync of
``__cluster_metadata-0`` for the renames and the new segment; then the registration's
append and the unfencing's, each waited for before the next step (the unfencing needs the
broker to have applied its registration, as in Kafka)."""
from __future__ import annotations

import pytest
import trio

from kbroker.config.broker import BrokerConfig
from kbroker.metadata.store import decode_record
from kbroker.raft.wire_map import batches_to_entries
from kbroker.server import serve
from tests.support.fsyncs import record_fsyncs

DIR = "__cluster_metadata-0"
SEGMENT = "00000000000000000000.log"


@pytest.fixture
def synced(monkeypatch) -> list[str]:
    """Names (file or directory basename) of every fsync, in order; the fsync still runs."""
    return record_fsyncs(monkeypatch)


def metadata_batches(broker) -> list[list[str]]:
    """The metadata log as batches of record names (control records by their kind)."""
    out = []
    for header, data in broker.metadata_log.log.batches(0):
        names = []
        for e in batches_to_entries(data):
            names.append("LeaderChange" if e.control else type(decode_record(e.payload)).__name__)
        out.append(names)
    return out


async def test_a_fresh_node_syncs_each_file_once_and_its_metadata_directory_once(tmp_path, synced):
    config = BrokerConfig.from_dict({"listeners": "PLAINTEXT://127.0.0.1:0",
                                     "log.dirs": str(tmp_path / "data")})
    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve, config)       # returns at the ready line
        at_ready = list(synced)
        batches = metadata_batches(server.broker)
        server.request_shutdown()
    assert at_ready == ["meta.properties.tmp", "data",
                        "quorum-state.tmp", SEGMENT, "leader-epoch-checkpoint.tmp", DIR,
                        SEGMENT, SEGMENT], at_ready
    assert batches[0] == ["LeaderChange"]
    assert batches[1][0] == "FeatureLevelRecord" and set(batches[1]) <= {"FeatureLevelRecord", "ConfigRecord"}
    assert batches[2:] == [["RegisterBrokerRecord"], ["BrokerRegistrationChangeRecord"]], batches
