"""Broker-side task assignors of streams groups (KIP-1357, Kafka 4.4): the broker's
``group.streams.assignors`` (built-in names and Kafka's class names, refused as Kafka refuses
them), the GROUP config ``streams.assignor.name`` (validated against the broker's list,
described with the default), how a group picks its assignor, the fallback when its choice is
gone, and ``mock`` — Kafka's ``MockAssignor``, which never moves a task."""
from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from kbroker.config.broker import BrokerConfig, ConfigError
from kbroker.group.streams.assignor import AssignorMember, assign_mock
from kbroker.metadata import group_configs

from tests.streams.test_streams_protocol import StreamsHarness, active_of, all_topics

MOCK = "org.apache.kafka.coordinator.group.streams.assignor.MockAssignor"
STICKY = "org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor"


@pytest.mark.parametrize("value, names, error", [
    (None, ["sticky"], None),
    ("sticky", ["sticky"], None),
    (f"{MOCK},sticky", [MOCK, "sticky"], None),
    ("com.example.MyAssignor", None, "Class cannot be found"),
    ("mock", None, "Class cannot be found"),          # not a built-in name: a class name
    ("sticky,sticky", None, "values must not be duplicated"),
    (f"sticky,{STICKY}", None, "Assignor name 'sticky' is already registered"),
    ("", None, "must not be empty"),
])
def test_broker_list_of_assignors(value, names, error):
    raw = {} if value is None else {"group.streams.assignors": value}
    if error is None:
        assert BrokerConfig.from_dict(raw).values["group.streams.assignors"] == names
    else:
        with pytest.raises(ConfigError, match=error):
            BrokerConfig.from_dict(raw)


def test_group_config_names_a_registered_assignor():
    broker = {"group.streams.assignors": ["sticky", MOCK]}.get
    assert group_configs.validate("g", {"streams.assignor.name": "mock"}, broker) == (0, None)
    assert group_configs.validate("g", {"streams.assignor.name": "range"}, broker) == (
        40, "streams.assignor.name 'range' is not a registered task assignor. Registered "
            "assignors are: [sticky, mock].")
    assert group_configs.validate("g", {"streams.assignor.name": "mock"}, {}.get)[0] == 40
    # the warm-up settings (internal keys of Kafka) and their broker bounds
    assert group_configs.validate("g", {"streams.num.warmup.replicas": "21"}, {}.get) == (
        40, "streams.num.warmup.replicas must be less than or equal to 20")
    assert group_configs.validate("g", {"streams.task.offset.interval.ms": "1000"}, {}.get) == (
        40, "streams.task.offset.interval.ms must be greater than or equal to 15000")
    assert group_configs.validate("g", {"streams.acceptable.recovery.lag": "-1"}, {}.get)[0] == 40
    assert group_configs.validate("g", {"streams.acceptable.recovery.lag": str(1 << 40)},
                                  {}.get) == (0, None)


def test_describe_shows_the_default_assignor_and_internal_keys_only_when_set():
    broker = {"group.streams.assignors": [MOCK, "sticky"]}.get
    entries = {e.name: e for e in group_configs.describe({}, broker)}
    assert entries["streams.assignor.name"].value == "mock"
    assert "streams.num.warmup.replicas" not in entries
    entries = {e.name: e for e in group_configs.describe(
        {"streams.num.warmup.replicas": "3", "streams.assignor.name": "sticky"}, broker)}
    assert entries["streams.num.warmup.replicas"].value == "3"
    assert (entries["streams.assignor.name"].value, entries["streams.assignor.name"].source) == (
        "sticky", group_configs.GROUP_CONFIG_SOURCE)


def test_mock_assignor_keeps_every_task_where_it_is():
    held = [AssignorMember("a", "p1", frozenset({("0", 0), ("0", 1), ("0", 2)})),
            AssignorMember("b", "p2"), AssignorMember("c", "p3", frozenset({("0", 3)}))]
    out = assign_mock({"0": 6}, held, num_standby_replicas=1)
    assert {m: sorted(t.active) for m, t in out.items()} == {
        "a": [("0", 0), ("0", 1), ("0", 2)], "b": [("0", 4), ("0", 5)], "c": [("0", 3)]}
    assert all(not t.standby for t in out.values())


def test_a_group_uses_its_assignor_and_falls_back_to_the_default(caplog):
    h = StreamsHarness(all_topics(), standby=1)
    cfg = h.mgr.streams.streams_config
    h.mgr.streams.streams_config = replace(cfg, assignors=("sticky", "mock"))
    overrides = {"streams.assignor.name": "mock"}
    h.mgr.streams.group_configs = lambda gid: overrides
    assert h.mgr.streams.streams_describe("g").error != 0
    a = h.shb("a", 0)
    assert active_of(a) == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    assert h.mgr.streams.streams_describe("g").assignor_name == "mock"
    b = h.shb("b", 0)
    # mock: a keeps every task, b gets none and no standby task either
    g = h.group()
    assert g.target["b"].is_empty() and not g.target["a"].standby
    # the assignor changes to the broker's default: no rebalance until the next epoch bump
    overrides["streams.assignor.name"] = "sticky"
    epoch = g.group_epoch
    h.shb("b", b.member_epoch, active={}, standby={})
    assert g.group_epoch == epoch and g.target["b"].is_empty()
    assert h.mgr.streams.streams_describe("g").assignor_name == "sticky"
    h.shb("c", 0)                         # a new member: the sticky assignor shares the tasks
    assert not g.target["b"].is_empty() and g.target["a"].standby
    # a name the broker no longer has: the default, and a warning
    h.mgr.streams.streams_config = replace(cfg, assignors=("sticky",))
    overrides["streams.assignor.name"] = "mock"
    with caplog.at_level(logging.WARNING):
        h.shb("d", 0)
    assert "The configured task assignor 'mock' is not available; falling back to the default " \
           "assignor 'sticky'." in caplog.text
    assert h.mgr.streams.streams_describe("g").assignor_name == "sticky"


def test_rack_aware_assignment_tags_rebalance_and_missing_client_tags():
    from kbroker.group.streams.protocol import StreamsHeartbeatRequest
    from kbroker.group.streams.topology import MISSING_CLIENT_TAGS
    from tests.streams.test_streams_protocol import TOPO
    assert group_configs.validate("g", {"streams.rack.aware.assignment.tags": "zone, zone"},
                                  {}.get) == (
        40, "streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
    assert group_configs.validate("g", {"streams.rack.aware.assignment.tags": "zone,rack"},
                                  {}.get) == (0, None)
    entries = {e.name: e for e in group_configs.describe(
        {}, {"group.streams.rack.aware.assignment.tags": ["zone", "rack"]}.get)}
    assert entries["streams.rack.aware.assignment.tags"].value == "zone,rack"
    with pytest.raises(ConfigError, match="must not be duplicated"):
        BrokerConfig.from_dict({"group.streams.rack.aware.assignment.tags": "a,a"})

    h = StreamsHarness(all_topics())
    overrides: dict = {}
    h.mgr.streams.group_configs = lambda gid: overrides

    def join(member, tags, version=1):
        return h.drive(h.mgr.streams_group_heartbeat(StreamsHeartbeatRequest(
            group_id="g", member_id=member, member_epoch=0, rebalance_timeout_ms=1000,
            topology=TOPO, active={}, standby={}, warmup={}, process_id="p-" + member,
            client_tags=tags, api_version=version), h.now, h.mono))

    assert join("a", [("zone", "z1")]).status == []
    epoch = h.group().group_epoch
    # the tags are an assignment config: setting them starts a rebalance
    overrides["streams.rack.aware.assignment.tags"] = "zone,rack"
    r = join("a", [("zone", "z1")])
    assert h.group().group_epoch == epoch + 1
    assert h.group().last_assignment_configs == (("num.standby.replicas", "0"),
                                                 ("rack.aware.assignment.tags", "zone,rack"))
    assert [(c, d) for c, d in r.status if c == MISSING_CLIENT_TAGS] == [(
        MISSING_CLIENT_TAGS, "Missing required client tags for rack-aware standby assignment: "
        "[rack]. Configure them via 'client.tag.<tagKey>' in your Streams config.")]
    # a v0 member is not told; a member with every tag neither
    assert not [c for c, _ in join("b", [], version=0).status if c == MISSING_CLIENT_TAGS]
    assert not [c for c, _ in join("c", [("rack", "r"), ("zone", "z")]).status
                if c == MISSING_CLIENT_TAGS]
