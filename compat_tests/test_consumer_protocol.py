"""The KIP-848 consumer group protocol on both targets: librdkafka members with
``group.protocol=consumer`` join and leave while a producer runs and every record is consumed
exactly once with commits; Kafka's Java console consumer with the same protocol;
``kafka-consumer-groups`` describes the group the same way (columns, epochs, assignor,
state, type); GROUP config resources through ``kafka-configs`` (set, describe, Kafka's
validation messages)."""

from __future__ import annotations

import re
import threading
import time

from confluent_kafka import Producer

from compat_tests.cli import run_tool
from compat_tests.helpers import create_topic, read_until, wait_until
from tests.support.kip848 import Member as _Member

CLIENT = "consumer-protocol"
FAST_HEARTBEATS = {"group.consumer.heartbeat.interval.ms": "500",
                   "group.consumer.min.heartbeat.interval.ms": "100"}


def Member(bootstrap, group, topic, seen, lock):
    """A KIP-848 librdkafka member (tests/support/kip848.py) under this suite's client id."""
    return _Member(bootstrap, group, topic, seen, lock, **{"client.id": "compat-kip848"})



def _table(stdout: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in stdout.splitlines() if line.strip()]
    return lines[0].split(), [line.split() for line in lines[1:]]


def test_members_join_and_leave_exactly_once_and_tools_describe(broker_factory, topic_name,
                                                                kafka_dist):
    broker = broker_factory(**FAST_HEARTBEATS)
    bootstrap = broker.bootstrap_servers
    topic, group, P, N = topic_name, f"g-{topic_name}", 6, 2000
    create_topic(bootstrap, topic, P)
    produced: list[tuple[int, int]] = []

    def producer():
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(N):
            p.produce(topic, str(i).encode(), partition=i % P,
                      on_delivery=lambda err, msg: produced.append((msg.partition(), msg.offset()))
                      if err is None else None)
            p.poll(0)
            if i % 100 == 0:
                time.sleep(0.05)
        p.flush(30)

    seen: list[tuple[int, int]] = []
    lock = threading.Lock()
    prod = threading.Thread(target=producer)
    prod.start()
    members = [Member(bootstrap, group, topic, seen, lock)]
    try:
        wait_until(lambda: members[0].assignment == set(range(P)), 60, what="one member owns all")
        members += [Member(bootstrap, group, topic, seen, lock) for _ in range(2)]
        wait_until(lambda: all(m.assignment for m in members)
                   and sum(len(m.assignment) for m in members) == P, 60, what="3-way split")
        members.pop(1).close()
        wait_until(lambda: sum(len(m.assignment) for m in members) == P, 60, what="hand-over")
        members.append(Member(bootstrap, group, topic, seen, lock))
        wait_until(lambda: members[-1].assignment, 60, what="the new member gets partitions")
        prod.join(60)
        assert len(produced) == N
        wait_until(lambda: len(set(seen)) >= N, 60, what="everything consumed")
        # the tools see a consumer-protocol group, Stable once the members have reconciled:
        # the newest member got partitions while the others could still be giving theirs up
        # (Kafka's group was still Reconciling at the first look in a run under load)
        tables = {}

        def described() -> bool:
            for name, extra in (("state", ["--state"]), ("verbose", ["--members", "--verbose"])):
                out = run_tool("kafka-consumer-groups", ["--bootstrap-server", bootstrap,
                                                         "--describe", "--group", group, *extra]).check()
                tables[name] = _table(out.stdout)
            rows = tables["state"][1]
            return bool(rows) and rows[0][-2] == "Stable"
        wait_until(described, 60, what="the group Stable after the last join")
        header, rows = tables["state"]
        assert header == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        assert rows[0][-3:] == ["uniform", "Stable", "3"]
        header, rows = tables["verbose"]
        assert header == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                          "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        assert len(rows) == 3 and sum(int(r[4]) for r in rows) == P
        for r in rows:
            assert r[5] == r[7] and r[6] == r[8]          # reconciled: current == target
        listed = run_tool("kafka-consumer-groups", ["--bootstrap-server", bootstrap, "--list",
                                                     "--type"]).check()
        assert re.search(rf"^{re.escape(group)}\s+Consumer\s*$", listed.stdout, re.M)
    finally:
        prod.join(60)
        for m in members:
            if m.t.is_alive():
                m.close()
    assert sorted(seen) == sorted(produced), "a record was consumed twice or never"
    offsets = run_tool("kafka-consumer-groups", ["--bootstrap-server", bootstrap, "--describe",
                                                  "--group", group]).check()
    header, rows = _table(offsets.stdout)
    lag = {int(r[2]): (int(r[3]), int(r[4])) for r in rows if r[1] == topic}
    assert all(cur == end for cur, end in lag.values()) and len(lag) == P

    # Kafka's Java console consumer with the consumer protocol, in a second group
    out = run_tool("kafka-console-consumer", [
        "--bootstrap-server", bootstrap, "--topic", topic, "--group", f"{group}-java",
        "--from-beginning", "--max-messages", str(N), "--timeout-ms", "60000",
        "--consumer-property", "group.protocol=consumer"], timeout=120).check()
    assert sorted(int(x) for x in out.lines if x.isdigit()) == list(range(N))


def test_group_configs_with_kafka_configs(bootstrap, topic_name, kafka_dist, target):
    group = f"g-{topic_name}"
    base = ["--bootstrap-server", bootstrap, "--entity-type", "groups", "--entity-name", group]
    run_tool("kafka-configs", [*base, "--alter", "--add-config",
                               "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000"]).check()
    # Kafka's broker applies a group config change when its metadata log catches up, after the
    # controller answered: describe until it shows (kbroker shows it at once)
    described = read_until(lambda: run_tool("kafka-configs", [*base, "--describe"]).check().stdout,
                           lambda out: "consumer.heartbeat.interval.ms=6000" in out
                           and "consumer.session.timeout.ms=50000" in out, at_once=target == "kbroker")
    assert "consumer.session.timeout.ms=50000" in described
    assert "DYNAMIC_GROUP_CONFIG:consumer.heartbeat.interval.ms=6000" in described
    everything = run_tool("kafka-configs", [*base, "--describe", "--all"]).check().stdout
    keys = sorted(re.findall(r"^\s+([a-z.]+)=", everything, re.M))
    assert {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms",
            "share.auto.offset.reset", "share.record.lock.duration.ms",
            "streams.session.timeout.ms"} <= set(keys)
    for bad, message in [
        ("consumer.session.timeout.ms=1000",
         "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
        ("consumer.heartbeat.interval.ms=20000",
         "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."),
        ("nope.config=1", "Unknown group config name: nope.config"),
    ]:
        r = run_tool("kafka-configs", [*base, "--alter", "--add-config", bad])
        assert r.returncode != 0 and message in r.stdout + r.stderr, (bad, r.stdout, r.stderr)
    run_tool("kafka-configs", [*base, "--alter", "--delete-config",
                               "consumer.heartbeat.interval.ms"]).check()
    described = read_until(lambda: run_tool("kafka-configs", [*base, "--describe"]).check().stdout,
                           lambda out: "consumer.heartbeat.interval.ms" not in out,
                           at_once=target == "kbroker")
    assert "consumer.heartbeat.interval.ms" not in described


def _ask(bootstrap: str, api_key: int, version: int, body):
    """One request to the (single) broker, its decoded answer."""
    from kbroker.wire.protocol import decode_response, encode_request
    from tests.support.raw_wire import exchange
    frame = exchange(bootstrap.split(",")[0], encode_request(api_key, version, 7, "compat-raw", body))
    return decode_response(memoryview(frame)[4:], api_key, version)[1]


def test_describe_groups_and_consumer_group_describe_on_a_consumer_group(broker_factory,
                                                                          topic_name):
    """DescribeGroups v5/v6 (KIP-1043: GROUP_ID_NOT_FOUND from v6) on a consumer-protocol
    group and on an unknown group; ConsumerGroupDescribe v1 (KIP-1099 MemberType)."""
    from kbroker.wire import messages
    broker = broker_factory(**FAST_HEARTBEATS)
    bootstrap = broker.bootstrap_servers
    topic, group = topic_name, f"g-{topic_name}"
    create_topic(bootstrap, topic, 2)
    seen, lock = [], threading.Lock()
    m = Member(bootstrap, group, topic, seen, lock)
    try:
        wait_until(lambda: m.assignment == {0, 1}, 60, what="assignment")
        answers = {}
        for v in (5, 6):
            r = _ask(bootstrap, 15, v, messages.DescribeGroupsRequest(
                groups=[group, "no-such-group"], include_authorized_operations=False))
            # (Kafka answers in the order its coordinator shards complete: sorted here)
            answers[v] = sorted(((g.group_id == group, g.error_code,
                                  getattr(g, "error_message", None), g.group_state,
                                  g.protocol_type, g.protocol_data, len(g.members))
                                 for g in r.groups), reverse=True)
        r = _ask(bootstrap, 69, 1, messages.ConsumerGroupDescribeRequest(
            group_ids=[group], include_authorized_operations=False))
        d = r.groups[0]
        cgd = (d.error_code, d.group_state, [x.member_type for x in d.members])
    finally:
        m.close()
    no_classic = f"Group {group} is not a classic group."
    assert answers[5] == [(True, 0, None, "Dead", "", "", 0), (False, 0, None, "Dead", "", "", 0)]
    assert answers[6] == [(True, 69, no_classic, "Dead", "", "", 0),
                          (False, 69, "Group no-such-group not found.", "Dead", "", "", 0)]
    assert cgd == (0, "Stable", [1])


def _group_type(bootstrap, group) -> str:
    listed = run_tool("kafka-consumer-groups", ["--bootstrap-server", bootstrap, "--list",
                                                 "--type"]).check()
    m = re.search(rf"^{re.escape(group)}\s+(\w+)\s*$", listed.stdout, re.M)
    return m.group(1) if m else ""


def test_classic_members_in_a_consumer_group_upgrade_and_downgrade(broker_factory, topic_name,
                                                                    kafka_dist):
    """Mixed members (KIP-848 migration): a classic librdkafka group is converted when a
    consumer-protocol member joins, the classic member is served inside the consumer group
    (ConsumerGroupDescribe v1 MemberType 0), and the group is a classic one again once the
    consumer-protocol member left; no record lost on the way."""
    from kbroker.wire import messages
    broker = broker_factory(**FAST_HEARTBEATS)
    bootstrap = broker.bootstrap_servers
    topic, group, P = topic_name, f"g-{topic_name}", 4
    create_topic(bootstrap, topic, P)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(400):
        p.produce(topic, str(i).encode(), partition=i % P)
    p.flush(30)
    seen, lock = [], threading.Lock()

    def covered(ms):
        return lambda: (all(m.assignment for m in ms)
                        and sorted(x for m in ms for x in m.assignment) == list(range(P)))
    classic = _Member(bootstrap, group, topic, seen, lock, tolerate_commit_errors=True,
                      **{"client.id": "compat-classic", "group.protocol": "classic",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    members = [classic]
    try:
        wait_until(covered(members), 60, what="the classic member owns everything")
        assert _group_type(bootstrap, group) == "Classic"
        modern = Member(bootstrap, group, topic, seen, lock)
        members.append(modern)
        wait_until(covered(members), 90, what="mixed split after the upgrade")
        assert _group_type(bootstrap, group) == "Consumer"
        r = _ask(bootstrap, 69, 1, messages.ConsumerGroupDescribeRequest(
            group_ids=[group], include_authorized_operations=False))
        assert sorted(x.member_type for x in r.groups[0].members) == [0, 1]
        assert sorted(x.client_id for x in r.groups[0].members) == ["compat-classic",
                                                                     "compat-kip848"]
        members.remove(modern)
        modern.close()                         # the last consumer-protocol member: downgrade
        wait_until(lambda: _group_type(bootstrap, group) == "Classic", 60, what="downgrade")
        wait_until(covered(members), 60, what="the classic member owns everything again")
        r = _ask(bootstrap, 15, 6, messages.DescribeGroupsRequest(
            groups=[group], include_authorized_operations=False))
        g = r.groups[0]
        assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data, len(g.members)) \
            == (0, "Stable", "consumer", "range", 1)
        wait_until(lambda: len(set(seen)) >= 400, 60, what="everything consumed")
    finally:
        for m in members:
            if m.t.is_alive():
                m.close()
    assert len(set(seen)) == 400
