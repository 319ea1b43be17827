"""Jepsen-style histories of a Kafka workload: the pure checker (``model``, ``checker``,
``graph``: a history in, anomalies out, no broker, clock or socket) and the only parts that
talk to brokers (``workload``: the recording clients, ``run``: clusters, faults, the make
targets). See README "Safety under faults"."""
