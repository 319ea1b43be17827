"""Node wiring: the ``Broker`` object that ties a running node together, and the broker-wide
state it owns that belongs to no single layer (incremental fetch sessions, hot-path counters)."""
