"""Fixtures for the log-store tests (real files under tmp_path)."""
from __future__ import annotations

try:
    import kbroker.wire.records  # noqa: F401
except ImportError:  # pragma: no cover - until the wire engineer's module lands
    from tests.log import _records_shim
    _records_shim.install()
