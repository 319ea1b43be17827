"""Consumer groups and committed offsets, durable in ``__consumer_offsets``.

- :mod:`.state`    — a classic group: states, members, protocol selection (pure data).
- :mod:`.manager`  — the coordinator's decisions over all groups as a pure state machine:
  events with ``now_ms`` in; records to append, replies, deadlines out.
- :mod:`.records`  — the key/value format of ``__consumer_offsets`` and group → partition.
- :mod:`.timers`   — the keyed deadline table the manager schedules into.
- :mod:`.service`  — the trio driver (``GroupCoordinator``): parks JoinGroup/SyncGroup
  requests, runs the timers, appends records and replays them at start-up.
"""
