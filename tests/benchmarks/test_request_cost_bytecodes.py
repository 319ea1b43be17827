"""benchmarks/request_cost_bench.py's bytecode counter: a real broker run under the counting
wrapper, switched on and off per phase by signals; the counts are per function and land in
the layer each function belongs to. A count, never a time."""
from __future__ import annotations

import re

from benchmarks.request_cost_bench import layer, main


def test_functions_fall_into_their_layers():
    assert layer("/repo/kbroker/server/connection.py:452:_loop_socket") == "kbroker.server"
    assert layer("/repo/kbroker/__main__.py:1:<module>") == "kbroker"
    assert layer("<kbroker codec ProduceRequest v9>:43:r_ProduceRequest") == "kbroker.wire (generated)"
    assert layer("<string>:12:make") == "kbroker.wire (generated)"
    assert layer("/v/lib/python3.11/site-packages/trio/_core/_run.py:2712:unrolled_run") == "trio"
    assert layer("<attrs generated methods outcome._impl.Value>:12:__init__") == "outcome"
    assert layer("/usr/lib/python3.11/collections/__init__.py:1136:__contains__") == "python stdlib"


def test_each_phase_is_counted_per_function(capsys):
    assert main(["-n", "20", "--counter", "bytecodes", "--phases", "produce-serial,fetch-ready",
                 "--top", "40"]) == 0
    out = capsys.readouterr().out
    per_request = {m[1]: int(m[2].replace(",", "")) for m in
                   re.finditer(r"^\| (produce-serial|fetch-ready) \| 20 \| ([\d,]+) \|", out, re.M)}
    assert set(per_request) == {"produce-serial", "fetch-ready"}
    # a round of fetch-ready is a serial produce and a fetch: more bytecodes than the produce
    assert 0 < per_request["produce-serial"] < per_request["fetch-ready"]
    tables = out.split("\nfetch-ready: ")
    assert len(tables) == 2
    produce_table, fetch_table = tables
    # each phase names its own handler among its functions (run once per request, or resumed
    # once more where a fetch waited), and only its own
    assert re.search(r"^\| `api/produce\.py:\d+:handle` \| [\d.,]+ \| 1\.00 \|$", produce_table, re.M)
    assert "`api/fetch.py" not in produce_table
    assert re.search(r"^\| `api/fetch\.py:\d+:handle` \| [\d.,]+ \| 1\.\d\d \|$", fetch_table, re.M)
    assert re.search(r"^\| kbroker\.server \| [\d,]+ \| ", fetch_table, re.M)
