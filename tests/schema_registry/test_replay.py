"""The registry's state is the ``_schemas`` topic: a restarted broker serves every
schema, id, config and deletion it had, and hands out no id twice."""
from __future__ import annotations

from .conftest import avro_record, start_registry


def test_restart_rebuilds_the_state_from_the_topic(tmp_path):
    reg = start_registry(tmp_path / "data")
    try:
        ids = [reg.call("POST", f"/subjects/s{i}/versions",
                        {"schema": avro_record(f"R{i}", ("x", "int"))})[1]["id"] for i in range(3)]
        assert reg.call("PUT", "/config/s1", {"compatibility": "NONE"})[0] == 200
        assert reg.call("DELETE", "/subjects/s2")[0] == 200
        reg.broker.stop()
        reg.broker.start()
        assert reg.call("GET", "/subjects")[1] == ["s0", "s1"]
        assert reg.call("GET", "/subjects?deleted=true")[1] == ["s0", "s1", "s2"]
        assert reg.call("GET", f"/schemas/ids/{ids[1]}")[0] == 200
        assert reg.call("GET", "/config/s1")[1] == {"compatibilityLevel": "NONE"}
        status, body = reg.call("POST", "/subjects/s3/versions",
                                {"schema": avro_record("R3", ("x", "int"))})
        assert status == 200 and body["id"] > max(ids)
    finally:
        reg.broker.stop()
