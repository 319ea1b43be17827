"""Small helpers shared by compat test modules (no client-specific logic beyond topic set-up)."""

from __future__ import annotations

import time

from tests.support.waiting import wait_for

# The CreateTime base for tests that check timestamps: one hour before the session started,
# on a whole second. Recent on purpose: the shared brokers keep the default 7-day retention,
# and a retention pass would delete records stamped further in the past in the middle of a
# test (on Kafka and kbroker alike).
T0_MS = (int(time.time()) - 3600) * 1000


def wait_until(predicate, timeout: float = 20.0, interval: float = 0.1, what: str = "condition"):
    """Poll `predicate()` until it returns a truthy value, which is returned
    (:func:`tests.support.waiting.wait_for` with the compat suite's bound)."""
    return wait_for(predicate, timeout, interval, what)


def read_until(read, shows, timeout: float = 20.0, interval: float = 0.1, *, at_once: bool = False):
    """Call `read()` until `shows(value)` is true or `timeout` seconds passed; return the last
    value either way, for the caller's assertions (which then fail if the change never showed).

    For a read after a write that went through the controller: Kafka's brokers apply a
    committed metadata change (configs, ACLs, quotas, SCRAM credentials, features, topics)
    when their metadata log catches up, after the controller answered. A single kbroker node
    applies its own write before it answers: with `at_once` (the test passes
    ``target == "kbroker"``) the first read must show it, so that stays checked."""
    if at_once:
        value = read()
        assert shows(value), f"the first read after the write does not show it: {value!r}"
        return value
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if shows(value) or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    """Create a topic (replication factor 1) with kafka-python's admin client and wait until
    every partition has a leader that answers as one. Used by modules whose client cannot
    create topics (kcat) or that then speak raw requests.

    The metadata can name a new partition's leader before Kafka's broker leads it (a
    produce then gets NOT_LEADER_OR_FOLLOWER, once in a fresh-clone run): each partition's
    end offset is asked of its leader (ListOffsets, which kafka-python asks again until it
    is answered), the same check a produce meets."""
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-setup",
                             request_timeout_ms=20000)
    try:
        admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1}},
                            wait_for_metadata=True)
    finally:
        admin.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="compat-setup",
                             request_timeout_ms=20000)
    try:
        consumer.end_offsets([TopicPartition(name, p) for p in range(partitions)])
    finally:
        consumer.close()


def wait_for_sole_owner(bootstrap: str, group: str, topic: str, partitions: int) -> dict:
    """Wait until the classic consumer group `group` is Stable with exactly one member, which
    owns all `partitions` partitions of `topic` (as DescribeGroups shows the assignment the
    leader sent); return that description. A rebalance test waits on this before a second
    member joins, so that the second join really is a rebalance away from a sole owner."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-group-watch",
                             request_timeout_ms=20000)

    def owned():
        try:
            info = admin.describe_groups([group])[group]
        except KafkaError as e:
            if e.retriable:     # e.g. Kafka creating __consumer_offsets on the first lookup
                return None
            raise
        members = info["members"]
        if info["group_state"] != "Stable" or len(members) != 1:
            return None
        assignment = members[0]["member_assignment"]
        if not isinstance(assignment, dict):       # not a consumer-protocol assignment
            return None
        mine = {t["topic"]: sorted(t["partitions"]) for t in assignment["assigned_partitions"]}
        return info if mine == {topic: list(range(partitions))} else None
    try:
        return wait_until(owned, what=f"one member of {group} owning {topic}'s {partitions} partitions")
    finally:
        admin.close()
