"""Authorization: Kafka's ACL model (``acls``), the StandardAuthorizer's decision rules
(``authorizer``) and delegation tokens (``tokens``).

Everything here is pure: no I/O, no clock. ACLs and tokens live in the metadata image
(replayed from ``AccessControlEntryRecord``/``DelegationTokenRecord``); the API modules ask
through their request context (``ctx.authorize``), never by re-implementing a rule.
"""
