import pytest

from .support import Cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    c.start_all()
    try:
        yield c
    finally:
        for n in c.nodes.values():
            if n.proc is not None and n.proc.poll() is None:
                n.kill()
