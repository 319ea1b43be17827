"""Share-partitions (KIP-932): the in-flight records of one share group on one topic
partition, kept by the partition's leader.

- :mod:`.partition` — ``SharePartition``: start/end offsets, record states, acquisition
  locks, delivery counts, acknowledgements; a pure state machine (``now_ms`` in).
- :mod:`.sessions`  — share sessions (ShareFetch/ShareAcknowledge session epochs).
- :mod:`.manager`   — the trio-side ``SharePartitionManager``: one SharePartition per
  (group, topic id, partition), reads the log, runs the lock timers.
"""
