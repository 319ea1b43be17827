"""The listener ports handed to test brokers (kbroker/testing/processes.py): a pytest-xdist
worker, or a process given KBROKER_PORT_BLOCK, takes them from its own block below the
kernel's ephemeral range, so two suites running side by side never pick the same port."""
import subprocess
import sys

import pytest


def _ports(env: dict, n: int = 20) -> list[int]:
    code = ("from kbroker.testing.processes import free_ports\n"
            f"print(' '.join(str(free_ports(2)) for _ in range({n})))")
    base = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, check=True,
                         capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _ephemeral_start() -> int:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        return int(f.read().split()[0])


@pytest.mark.parametrize("env,block", [
    ({"PYTEST_XDIST_WORKER": "gw1"}, 1),
    ({"KBROKER_PORT_BLOCK": "9"}, 9),
    ({"PYTEST_XDIST_WORKER": "gw0", "KBROKER_PORT_BLOCK": "9"}, 0),   # xdist's worker wins
])
def test_a_worker_or_a_named_block_takes_its_ports_from_its_block(env, block):
    blocks = (_ephemeral_start() - 12000) // 2000
    if blocks < 10:
        pytest.fail(f"this machine's ephemeral range starts too low for ten blocks ({blocks})")
    lo = 12000 + block * 2000
    ports = _ports(env)
    assert all(lo <= p and p + 1 < lo + 2000 for p in ports), ports
    assert len(set(ports)) == len(ports)


def test_outside_xdist_and_without_a_block_the_kernel_chooses():
    ports = _ports({})
    assert all(p >= _ephemeral_start() for p in ports), ports
