"""Idempotent and transactional producers (KIP-98).

* ``producer_state`` -- per-partition producer state (sequences, epochs, open
  transactions) with ``.snapshot`` files; owned by each ``PartitionLog``;
* ``records`` -- the ``__transaction_state`` key/value records;
* ``metadata`` -- one transactional id's state machine (pure);
* ``coordinator`` -- the transaction coordinator (trio driver: log, replay, timeouts);
* ``service`` -- the broker's coordinator, made at start only when the node leads a
  ``__transaction_state`` partition, else on first use;
* ``markers`` -- writing commit/abort markers to the partitions of a transaction;
* ``expiry`` -- which transactional ids expire (``transactional.id.expiration.ms``) and
  their ``__transaction_state`` tombstones (pure).
"""
