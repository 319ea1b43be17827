"""A scripted driver for the consumer group protocol of the pure coordinator shard:
a mock clock (``now`` wall, ``mono`` monotonic, as in :mod:`tests.group.harness`), a topics table, and helpers that send ConsumerGroupHeartbeats
the way a KIP-848 client does. Records are appended "successfully" at once (the test
``fail_next_append`` makes the next append fail) and kept, so a test can replay them
into a fresh shard."""
from __future__ import annotations

import uuid

from kbroker.group.config import GroupConfig
from kbroker.group.consumer.protocol import HeartbeatRequest
from kbroker.group.consumer.topics import TopicsView
from kbroker.group.manager import GroupManager

from tests.group.harness import advance_clocks

TOPIC_IDS: dict[str, uuid.UUID] = {}


def tid(name: str) -> uuid.UUID:
    if name not in TOPIC_IDS:
        TOPIC_IDS[name] = uuid.uuid5(uuid.NAMESPACE_DNS, name)
    return TOPIC_IDS[name]


class ConsumerHarness:
    def __init__(self, topics: dict[str, int] | None = None, config: GroupConfig | None = None,
                 **cfg) -> None:
        cfg.setdefault("consumer_assignment_interval_ms", 0)   # every bump assigned at once
        self.config = config or GroupConfig(num_partitions=1, **cfg)
        self.mgr = GroupManager(self.config)
        self.now = 1_000_000              # a wall clock is never 0 (0 = "no assignment yet")
        self.mono = self.now              # apart once a test steps the wall clock
        self.log: list = []                      # every appended record, in order
        self.fail_next_append = 0
        self.topics = dict(topics or {})
        self.version = 0
        self._publish()
        self.mgr.begin_load(0)
        self.drive(self.mgr.complete_load(0, self.now, self.mono))

    def _publish(self) -> None:
        self.version += 1
        self.mgr.set_topics(TopicsView({n: (tid(n), p) for n, p in self.topics.items()},
                                       self.version))

    def set_topic(self, name: str, partitions: int) -> None:
        self.topics[name] = partitions
        self._publish()

    def drive(self, res):
        response = res.response
        while res.records:
            err, self.fail_next_append = self.fail_next_append, 0
            if not err:
                self.log.extend(res.records)
            res = self.mgr.after_append(res, err, self.now, self.mono)
            if res.response is not None:
                response = res.response
        return response

    def advance(self, ms: int) -> None:
        """Let ``ms`` pass (both clocks move), firing timers at their exact deadlines."""
        advance_clocks(self, ms)

    def step_wall(self, ms: int) -> None:
        """Step the wall clock alone by ``ms`` (negative: back); no time passes."""
        self.now += ms

    def hb(self, member: str, epoch: int, *, group: str = "g", topics=None, regex=None,
           owned=None, instance=None, assignor=None, rebalance_timeout=60000,
           rack=None, version=1):
        """One heartbeat; ``owned``: {topic: [partitions]} (None = not sent)."""
        owned_list = None if owned is None else [(tid(t), sorted(ps)) for t, ps in owned.items()]
        req = HeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                               instance_id=instance, rack_id=rack,
                               rebalance_timeout_ms=rebalance_timeout if epoch == 0 or topics is not None else -1,
                               subscribed_topic_names=topics, subscribed_topic_regex=regex,
                               server_assignor=assignor, owned=owned_list,
                               client_id="client-" + member, client_host="/127.0.0.1",
                               api_version=version)
        return self.drive(self.mgr.consumer_group_heartbeat(req, self.now, self.mono))

    def join(self, member: str, topics=None, **kw):
        return self.hb(member, 0, topics=topics if topics is not None or "regex" in kw else [],
                       owned={}, **kw)

    def ep(self, member: str, gid: str = "g") -> int:
        """The member epoch the coordinator holds for ``member`` (what its client sends)."""
        return self.mgr.groups[gid].members[member].member_epoch

    def group(self, gid: str = "g"):
        return self.mgr.groups.get(gid)


def names(assignment) -> dict[str, list[int]]:
    """A response assignment {topic id: partitions} with topic names."""
    if assignment is None:
        return None
    back = {v: k for k, v in TOPIC_IDS.items()}
    return {back[t]: sorted(ps) for t, ps in assignment.items() if ps}
