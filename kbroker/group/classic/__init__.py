"""The classic group protocol: :mod:`.state` (a ClassicGroup and its members, pure data
and local rules) and :mod:`.protocol` (JoinGroup/SyncGroup/Heartbeat/LeaveGroup
decisions, the group's ``GroupMetadataValue`` snapshot)."""
