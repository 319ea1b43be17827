"""The compose files in docker/ (Debian's docker-compose): one node and three nodes come up
healthy and serve clients on the published ports; `down -v` removes them."""
import pytest

from .conftest import (IMAGE, consume_all, create_topic, free_port, produce, project_name,
                       wait_healthy)


def project_containers(dk, project):
    return dk.containers.list(all=True, filters={"label": f"com.docker.compose.project={project}"})


@pytest.fixture
def project(dk):
    from .conftest import compose
    started = []
    p = project_name()

    def up(file, env):
        started.append((file, env))
        compose(p, file, env, "up", "-d")
        return project_containers(dk, p)

    yield p, up
    for file, env in started:
        compose(p, file, env, "down", "-v", "--remove-orphans")


def test_single_node_compose(project):
    p, up = project
    port = free_port()
    containers = up("compose.single.yml", {"KBROKER_IMAGE": IMAGE, "KBROKER_PORT": str(port),
                                          "KBROKER_ADVERTISED_HOST": "127.0.0.1"})
    assert len(containers) == 1
    wait_healthy(containers[0])
    bootstrap = f"127.0.0.1:{port}"
    create_topic(bootstrap, "c1", partitions=2)
    values = [f"c-{i}".encode() for i in range(100)]
    assert sorted(produce(bootstrap, "c1", values)) == sorted(values)
    assert sorted(consume_all(bootstrap, "c1")) == sorted(values)


def test_three_node_compose(project):
    p, up = project
    ports = [free_port() for _ in range(3)]
    env = {"KBROKER_IMAGE": IMAGE, "KBROKER_ADVERTISED_HOST": "127.0.0.1",
           **{f"KBROKER_PORT_{i}": str(port) for i, port in enumerate(ports, 1)}}
    containers = up("compose.cluster.yml", env)
    assert len(containers) == 3
    for c in containers:
        wait_healthy(c)
    bootstrap = ",".join(f"127.0.0.1:{port}" for port in ports)
    create_topic(bootstrap, "c3", partitions=3, rf=3)
    values = [f"r-{i}".encode() for i in range(300)]
    assert sorted(produce(bootstrap, "c3", values)) == sorted(values)
    # every node serves the whole topic
    for port in ports:
        assert sorted(consume_all(f"127.0.0.1:{port}", "c3")) == sorted(values)
