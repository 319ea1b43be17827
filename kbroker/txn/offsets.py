"""TxnOffsetCommit's work: offsets written inside a transaction (KIP-98, KIP-447).

The offset records go to the group's ``__consumer_offsets`` partition in a transactional
batch of the producer (producer id and epoch, no sequence, Kafka's coordinator origin: the
producer epoch is checked against the partition's producer state). They are staged in the
group coordinator and become visible to OffsetFetch only when the transaction's commit
marker reaches that partition (:meth:`TransactionCoordinator.write_markers`); an abort
drops them. OffsetFetch with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT meanwhile.

Transaction version 2 (TxnOffsetCommit v5, KIP-890 part 2): the client sends no
AddOffsetsToTxn; the group's ``__consumer_offsets`` partition is added to the transaction
here first (``add_to_txn``, through :meth:`TxnVerifier.add`). Its errors reach the client
as Kafka's group coordinator maps a failed write: the retriable coordinator troubles
(NOT_ENOUGH_REPLICAS after the produce translation) become COORDINATOR_NOT_AVAILABLE.
"""
from __future__ import annotations

from kbroker.group.manager import OffsetAndMetadata, append_error_to_response_error
from kbroker.group import records as grec
from kbroker.wire import records as wire_records
from kbroker.wire.error_codes import ErrorCode as E

OFFSETS_TOPIC = "__consumer_offsets"


async def txn_offset_commit(broker, *, transactional_id: str, group_id: str, producer_id: int,
                            producer_epoch: int, generation_id: int, member_id: str,
                            group_instance_id: str | None,
                            topics: list[tuple[str, list[tuple[int, int, int, str | None]]]],
                            add_to_txn: bool = False):
    """``topics``: [(topic, [(partition, offset, leader_epoch, metadata)])]. Returns
    [(topic, [(partition, error)])]."""
    def all_failed(code):
        return [(t, [(p[0], int(code)) for p in parts]) for t, parts in topics]

    gc = broker.group_coordinator
    coordinator = broker.transactions
    err = await gc.ensure_offsets_topic()
    if err:
        return all_failed(err)
    manager = gc.manager
    if add_to_txn:
        err = await _add_offsets_partition(coordinator, transactional_id, producer_id,
                                           producer_epoch, manager.partition_for(group_id))
        if err:
            return all_failed(err)
    err = coordinator.check_txn_offset_commit(transactional_id, producer_id, producer_epoch, group_id)
    if err:
        return all_failed(err)
    async with gc._lock:
        err = manager.validate_txn_offset_commit(group_id, member_id, group_instance_id, generation_id)
        if err:
            return all_failed(err)
        now = gc.now_ms()
        part = manager.partition_for(group_id)
        max_meta = manager.config.offset_metadata_max_bytes
        records, staged, response = [], {}, []
        for topic, parts in topics:
            presp = []
            for p, offset, epoch, metadata in parts:
                metadata = "" if metadata is None else metadata
                if len(metadata) > max_meta:
                    presp.append((p, int(E.OFFSET_METADATA_TOO_LARGE)))
                    continue
                r = grec.offset_commit_record(part, group_id, topic, p, offset=offset,
                                              leader_epoch=epoch, metadata=metadata,
                                              commit_timestamp=now, expire_timestamp=None)
                records.append((r.key, r.value, (), now))
                staged[(topic, p)] = OffsetAndMetadata(offset, epoch, metadata, now)
                presp.append((p, int(E.NONE)))
            response.append((topic, presp))
        if not records:
            return response
        batch = wire_records.build_batch(records, producer_id=producer_id,
                                         producer_epoch=producer_epoch, base_sequence=-1,
                                         is_transactional=True)
        try:
            res = broker.replicas.append(OFFSETS_TOPIC, part, batch, required_acks=-1, now_ms=now,
                                         allow_internal=True, origin="coordinator")
            # acks=all: answered once the ISR has the offsets (Kafka's coordinator)
            code = await broker.replicas.wait_replicated(
                OFFSETS_TOPIC, part, res.last_offset + 1,
                int(broker.config.get("offsets.commit.timeout.ms") or 5000))
        except Exception as exc:  # noqa: BLE001 - becomes the client's error
            code = getattr(exc, "error_code", None)
            code = E.UNKNOWN_SERVER_ERROR if code is None else int(code)
        if code:
            code = int(code)
            if code == E.INVALID_PRODUCER_EPOCH:
                code = E.PRODUCER_FENCED
            elif code != E.INVALID_TXN_STATE:
                code = append_error_to_response_error(code)
            return [(t, [(p, code if c == E.NONE else c) for p, c in ps]) for t, ps in response]
        manager.stage_txn_offsets(producer_id, group_id, staged)
        return response


async def _add_offsets_partition(coordinator, transactional_id: str, producer_id: int,
                                 producer_epoch: int, partition: int) -> int:
    """TV2: add ``__consumer_offsets-partition`` to the producer's transaction."""
    from .verification import produce_error
    if not transactional_id:
        return E.INVALID_REQUEST
    errors = await coordinator.verifier.add(transactional_id, producer_id, producer_epoch,
                                            [(OFFSETS_TOPIC, partition)])
    code = produce_error(errors.get((OFFSETS_TOPIC, partition), E.NONE))
    return E.COORDINATOR_NOT_AVAILABLE if code == E.NOT_ENOUGH_REPLICAS else int(code)
