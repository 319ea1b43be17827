"""Node wiring: the ``Broker`` object that ties a running node together, and the broker's
hot-path counters (``stats``) that the server writes and the metrics endpoint reads."""
