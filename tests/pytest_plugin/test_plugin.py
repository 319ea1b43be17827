"""The pytest plugin (``kbroker.testing.pytest_plugin``) as its users meet it: inner pytest runs
(pytester, in child processes) of small projects that use only the plugin, plus the example
project under ``examples/pytest_plugin``.

The plugin is passed with ``-p kbroker.testing.pytest_plugin``: the shared development environment
may not have (re)installed the package with its ``pytest11`` entry point, and the entry
point's name equals the module's, so both together never load it twice.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
PLUGIN = ("-p", "kbroker.testing.pytest_plugin")


@pytest.fixture(autouse=True)
def _inner_env(monkeypatch):
    # inner runs import this tree's kbroker and must not pick up this project's settings
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(REPO), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]))


def run(pytester, *args):
    return pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider", *args, timeout=240)


def test_fixtures_give_a_broker_and_fresh_topics(pytester):
    pytester.makepyfile(test_inner="""
        import pytest
        from confluent_kafka import Consumer, Producer, TopicPartition
        from confluent_kafka.admin import AdminClient

        seen = []

        def partitions(kbroker, topic):
            md = AdminClient({"bootstrap.servers": kbroker.bootstrap_servers}).list_topics(timeout=10)
            return len(md.topics[topic].partitions)

        @pytest.mark.kafka_topic(partitions=3)
        def test_marker_sets_partitions(kbroker, kafka_topic):
            seen.append(kafka_topic)
            assert partitions(kbroker, kafka_topic) == 3
            p = Producer({"bootstrap.servers": kbroker.bootstrap_servers})
            p.produce(kafka_topic, b"one", partition=2)
            assert p.flush(10) == 0

        def test_default_is_one_partition_and_empty(kbroker, kafka_topic):
            seen.append(kafka_topic)
            assert partitions(kbroker, kafka_topic) == 1
            c = Consumer({"bootstrap.servers": kbroker.bootstrap_servers, "group.id": "x"})
            assert c.get_watermark_offsets(TopicPartition(kafka_topic, 0), timeout=10) == (0, 0)
            c.close()

        def test_topics_are_per_test_and_deleted_after(kbroker):
            assert len(set(seen)) == 2
            assert not set(seen) & set(kbroker.list_topics())

        def test_factory(kbroker, kafka_topic_factory):
            a = kafka_topic_factory(partitions=2, config={"retention.ms": "1000"})
            b = kafka_topic_factory(name="explicit-name")
            assert b == "explicit-name" and a != b
            assert {a, b} <= set(kbroker.list_topics())
            assert partitions(kbroker, a) == 2

        def test_reset_deletes_topics_and_groups(kbroker):
            kbroker.create_topic("left-over")
            c = Consumer({"bootstrap.servers": kbroker.bootstrap_servers, "group.id": "old-group",
                          "auto.offset.reset": "earliest"})
            c.subscribe(["left-over"])
            c.poll(3)
            c.close()
            assert "old-group" in kbroker.admin.list_groups()

        def test_kbroker_reset(kbroker_reset):
            assert kbroker_reset.list_topics() == []
            assert kbroker_reset.admin.list_groups() == {}

        def test_one_broker_per_session(kbroker, request):
            # the same object, started once
            assert request.getfixturevalue("kbroker") is kbroker
            assert kbroker.metrics_url and kbroker.log_path.exists()
    """)
    result = run(pytester, "-v")
    result.assert_outcomes(passed=7)
    assert result.stdout.str().count("kbroker ready") == 0   # the broker logs to its file


def test_plugin_is_inert_in_projects_that_do_not_use_it(pytester):
    """No autouse fixture, no broker, no heavy imports unless a fixture is requested."""
    pytester.makepyfile(test_plain="""
        import sys

        def test_nothing_of_the_plugin_runs(request):
            names = set(request.fixturenames)
            assert not names & {"kbroker", "kafka_topic", "kafka_topic_factory",
                                "kbroker_cluster", "kbroker_reset"}
            for mod in ("kbroker.testing.processes", "kbroker.wire", "kbroker.server", "kbroker.node.broker"):
                assert mod not in sys.modules, mod
            assert "kbroker.testing.pytest_plugin" in sys.modules
    """)
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert not list(Path(pytester.path).rglob("kbroker*.log"))
    help_text = run(pytester, "--help").stdout.str()
    options = [w for w in help_text.split() if w.startswith("--kbroker")]
    assert {"--kbroker-bootstrap=HOST:PORT", "--kbroker-override=KEY=VALUE",
            "--kbroker-keep-topics"} <= set(options)


def test_a_project_fixture_named_kbroker_wins(pytester):
    pytester.makeconftest("""
        import pytest

        @pytest.fixture(scope="session")
        def kbroker():
            return "the project's own"
    """)
    pytester.makepyfile(test_own="""
        def test_own(kbroker):
            assert kbroker == "the project's own"
    """)
    run(pytester).assert_outcomes(passed=1)


def test_bootstrap_option_uses_a_running_broker(pytester, tmp_path):
    from kbroker.testing.processes import KbrokerProcess
    outer = KbrokerProcess(tmp_path / "outer").start()
    try:
        pytester.makepyfile(test_ext="""
            def test_topic_on_the_external_broker(kbroker, kafka_topic):
                assert kbroker.bootstrap_servers == "%s"
                assert kafka_topic in kbroker.list_topics()
        """ % outer.bootstrap_servers)
        run(pytester, "--kbroker-bootstrap", outer.bootstrap_servers).assert_outcomes(passed=1)
    finally:
        assert outer.stop() == 0


def test_bad_marker_and_override_are_reported(pytester):
    pytester.makepyfile(test_bad="""
        import pytest

        @pytest.mark.kafka_topic(partitons=3)
        def test_typo(kafka_topic):
            pass
    """)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown argument(s)*partitons*"])
    result = run(pytester, "--kbroker-override", "no.such.key=1")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no.such.key*"])


def test_cluster_fixture(pytester):
    pytester.makepyfile(test_cluster="""
        from confluent_kafka import Consumer, Producer
        from confluent_kafka.admin import AdminClient

        def test_three_nodes_and_a_replicated_topic(kbroker_cluster, kafka_topic_factory):
            boot = kbroker_cluster.bootstrap_servers
            assert len(boot.split(",")) == 3
            topic = kafka_topic_factory(partitions=2, replication_factor=3, broker=kbroker_cluster)
            md = AdminClient({"bootstrap.servers": boot}).list_topics(timeout=10)
            assert sorted(md.brokers) == [1, 2, 3]
            assert all(len(p.replicas) == 3 for p in md.topics[topic].partitions.values())
            p = Producer({"bootstrap.servers": boot, "acks": "all"})
            p.produce(topic, b"replicated", partition=0)
            assert p.flush(30) == 0
            c = Consumer({"bootstrap.servers": boot, "group.id": "g", "auto.offset.reset": "earliest"})
            c.subscribe([topic])
            msg = None
            for _ in range(30):
                msg = c.poll(1)
                if msg is not None and msg.error() is None:
                    break
            c.close()
            assert msg is not None and msg.value() == b"replicated"
            # a node stopped and started again keeps its address
            kbroker_cluster.stop_node(3)
            assert not kbroker_cluster.nodes[3].running
            kbroker_cluster.start_node(3)
            assert kbroker_cluster.bootstrap_servers == boot
            md = AdminClient({"bootstrap.servers": boot}).list_topics(timeout=10)
            assert sorted(md.brokers) == [1, 2, 3]
    """)
    run(pytester).assert_outcomes(passed=1)


def test_example_project_suite_passes_with_only_the_plugin():
    """``examples/pytest_plugin``: its own pytest configuration, no conftest, the plugin."""
    example = REPO / "examples" / "pytest_plugin"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", *PLUGIN, "-W", "ignore::DeprecationWarning"],
                       cwd=example, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "5 passed" in r.stdout, r.stdout[-2000:]
