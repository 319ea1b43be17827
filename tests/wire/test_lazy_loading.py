"""What a broker process loads before its first request: no compression codec library and
only the message specs the API registry needs (start-up cost; see benchmarks/README.md).
Checked in a fresh interpreter, since this test session has loaded everything already."""
import subprocess
import sys

import pytest

CODECS = ("lz4", "snappy", "zstandard")


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60).stdout.strip()


def test_a_started_broker_has_loaded_no_codec_and_built_few_message_specs(tmp_path):
    out = _fresh(
        "import sys, trio\n"
        "from kbroker.config.broker import BrokerConfig\n"
        "from kbroker.server import serve\n"
        "from kbroker.wire import messages\n"
        "async def main():\n"
        "    async with trio.open_nursery() as n:\n"
        "        server = await n.start(serve, BrokerConfig.from_dict({\n"
        f"            'listeners': 'PLAINTEXT://127.0.0.1:0', 'log.dirs': {str(tmp_path)!r}}}))\n"
        f"        print(sorted(m for m in {CODECS!r} if m in sys.modules))\n"
        "        print(len(messages._SPECS), len(messages._RAW), len(server.registry))\n"
        "        server.request_shutdown(force=True)\n"
        "trio.run(main)\n")
    codecs, counts = out.splitlines()
    assert codecs == "[]"
    built, known, apis = map(int, counts.split())
    assert apis > 30
    assert built < known / 2, f"{built} of {known} message specs built by starting a broker"


@pytest.mark.parametrize("codec", [2, 3, 4])
def test_a_codec_loads_on_first_use(codec):
    out = _fresh(
        "import sys\n"
        "from kbroker.wire import compression as c\n"
        f"before = sorted(m for m in {CODECS!r} if m in sys.modules)\n"
        f"data = c.compress({codec}, b'abc' * 100)\n"
        f"assert c.decompress({codec}, data) == b'abc' * 100\n"
        f"print(before, sorted(m for m in {CODECS!r} if m in sys.modules))\n")
    assert out == f"[] ['{ {2: 'snappy', 3: 'lz4', 4: 'zstandard'}[codec] }']"


@pytest.mark.parametrize("codec", [2, 4])
def test_a_codec_library_error_is_corrupt_record_when_loaded_lazily(codec):
    """snappy's and zstd's own exceptions still become CorruptRecord (decompress is the first
    use of the library in this interpreter)."""
    out = _fresh(
        "from kbroker.wire import compression as c\n"
        "from kbroker.wire.errors import CorruptRecord\n"
        "try:\n"
        f"    c.decompress({codec}, b'\\x05garbage-garbage-garbage')\n"
        "except CorruptRecord as e:\n"
        "    print('corrupt')\n")
    assert out == "corrupt"


def test_generated_init_is_compiled_on_first_construction_and_behaves_the_same():
    out = _fresh(
        "from kbroker.wire import messages\n"
        "R = messages.get('DescribeClusterResponse')\n"
        "lazy = R.__dict__['__init__']\n"
        "try:\n"
        "    R(no_such_field=1)\n"
        "except TypeError:\n"
        "    print('unknown field refused')\n"
        "try:\n"
        "    R(5)\n"
        "except TypeError:\n"
        "    print('positional refused')\n"
        "r = R(cluster_id='c', brokers=[R.DescribeClusterBroker(broker_id=3)])\n"
        "print(R.__dict__['__init__'] is not lazy, r.cluster_id, r.brokers[0].broker_id,\n"
        "      r.brokers[0].port, r.controller_id, R().brokers == [], R().brokers is not R().brokers)\n")
    assert out.splitlines() == ["unknown field refused", "positional refused",
                                "True c 3 0 -1 True True"]
