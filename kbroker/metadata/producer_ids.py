"""Producer ids for idempotent producers: handed out from blocks the controller reserves.

Kafka's ``ProducerIdManager``: the broker asks the controller for a block
(``ProducerIdsRecord``: the next id not yet reserved) and serves ids from it. A block is
durable in the metadata log before any of its ids is used, so ids never repeat across
restarts (ids of an unfinished block are skipped, as in Kafka). One lock: concurrent
callers never get the same id.
"""
from __future__ import annotations

import trio

BLOCK_SIZE = 1000


class ProducerIdManager:
    def __init__(self, controller, block_size: int = BLOCK_SIZE):
        self.controller = controller
        self.block_size = block_size
        self._next = 0
        self._end = 0          # exclusive end of the current block
        self._lock = trio.Lock()
        self.blocks_allocated = 0

    async def generate(self) -> int:
        async with self._lock:
            if self._next >= self._end:
                first, count = await self.controller.allocate_producer_ids(self.block_size)
                self._next, self._end = first, first + count
                self.blocks_allocated += 1
            pid = self._next
            self._next += 1
            return pid

    def statistics(self) -> dict:
        return {"next": self._next, "block_end": self._end, "blocks": self.blocks_allocated}
