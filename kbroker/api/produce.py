"""Produce (API key 0): append record batches to partitions this node leads.

Versions: advertised v0–v13, served from v3 (Kafka 4 / KIP-896 behaviour: a v0–v2 request
closes the connection, as Kafka 4 has no definition to parse it with; v0 stays advertised
because librdkafka < 2.11.1 enables compression only when it sees Produce v0, KAFKA-18659).
v12+ is transaction version 2 (KIP-890 part 2, Kafka's ``ProduceRequest`` version > 11): a
producer's first transactional batch on a partition has the leader *add* the partition to
the transaction at the coordinator (the client sends no AddPartitionsToTxn); below v12 the
leader only verifies it (KIP-890 part 1, ``kbroker.txn.verification``). v13 names topics by id
(KIP-516): ids are resolved through the metadata image; an unknown id answers
``UNKNOWN_TOPIC_ID`` for its partitions; answers carry the id.

KIPs: KIP-32 (LogAppendTime → ``log_append_time_ms``), KIP-107 (``log_start_offset``, set on
errors as Kafka's append path does), KIP-467 (``record_errors`` / ``error_message``, v8+, for
records the validation names), KIP-951 (v10+: a NOT_LEADER_OR_FOLLOWER partition carries
``current_leader`` and the answer ``node_endpoints`` with that leader's endpoint on the
request's listener).

acks=0 gets no response, and a failed partition closes the connection (Kafka's
handleProduceRequest: the client's only way to learn of it); acks=1 answers after the
leader's append; acks=-1 (all) answers a
partition once the high watermark passes its last offset (every ISR member has it: Kafka's
DelayedProduce), with REQUEST_TIMED_OUT after ``timeout_ms``, NOT_LEADER_OR_FOLLOWER when
leadership is lost meanwhile and NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
``min.insync.replicas``; the partitions of one request wait concurrently. Validation rules (sizes, CRC, timestamps, keys on compacted topics,
min.insync.replicas) and idempotent/transactional producer checks (KIP-98: duplicates
answered with their first offsets, sequence gaps, fenced epochs) live in
:mod:`kbroker.replica`.

ACLs (``kbroker.authz``): WRITE on the transactional id (else every partition
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), WRITE on each topic (TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

import functools

import trio

from kbroker.api import RequestContext, api
from kbroker.api._authorized import denied_topics
from kbroker.api._topic_ids import topic_names
from kbroker.authz.acls import TRANSACTIONAL_ID, WRITE
from kbroker.replica import ReplicaError
from kbroker.txn.service import transactions
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire.protocol import ResponseStamp

Resp = messages.ProduceResponse
PRODUCE_KEY = 0
SERVED_FROM = 3
TV2_VERSION = 12          # KIP-890 part 2: partitions are added by the leader
ABORTABLE_VERSION = 11    # KIP-890 part 1: the producer knows TRANSACTION_ABORTABLE
ADMIN_CLIENT_ID = "__admin_client"   # Kafka lets only this client id write internal topics


_PartitionResponse = Resp.PartitionProduceResponse


def _partition_response(index: int, error: ReplicaError | int, version: int):
    """An error answer as Kafka's: ``log_start_offset`` as the append path left it,
    ``record_errors`` and ``error_message`` only for record validation (KIP-467's
    RecordValidationException; Kafka sends no message for other errors)."""
    if isinstance(error, ReplicaError):
        code, record_errors = error.error_code, error.record_errors
        log_start = -1 if error.log_start_offset is None else error.log_start_offset
    else:
        code, record_errors, log_start = int(error), [], -1
    pr = Resp.PartitionProduceResponse(index=index, error_code=code, base_offset=-1,
                                       log_append_time_ms=-1, log_start_offset=log_start)
    if version >= 8 and record_errors:
        pr.error_message = error.message
        pr.record_errors = [Resp.BatchIndexAndErrorMessage(batch_index=i,
                                                           batch_index_error_message=m)
                            for i, m in record_errors]
    return pr


async def _wait_replicated(replicas, waits, timeout_ms: int) -> None:
    """acks=all: every waiting partition concurrently, each until replicated, leadership
    lost or ``timeout_ms``. Only the error code changes (Kafka's DelayedProduce): base
    offset and log start offset of the append stay in the answer."""
    async def one(parts, pos, topic, index, required):
        code = await replicas.wait_replicated(topic, index, required, timeout_ms)
        if code:
            parts[pos].error_code = code

    async with trio.open_nursery() as nursery:
        for w in waits:
            nursery.start_soon(one, *w)


@api(0, versions=(0, 13), served_from=SERVED_FROM)
async def handle(ctx: RequestContext, request):
    version = ctx.api_version
    replicas = ctx.broker.replicas
    acks = request.acks
    if acks not in (0, 1, -1):
        error: int | None = ErrorCode.INVALID_REQUIRED_ACKS
    else:
        error = None
    if error is None and request.transactional_id is not None and \
            not ctx.authorize(WRITE, TRANSACTIONAL_ID, request.transactional_id):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    now_ms = ctx.broker.clock.now_ms()
    allow_internal = ctx.client_id == ADMIN_CLIENT_ID
    topics = []
    waits: list = []          # (parts list, position, topic, partition, required offset)
    if version >= 13:
        names = topic_names(ctx.broker)
        for td in request.topic_data:
            td.name = names.get(td.topic_id)        # None: an id the image does not know
    # (no authorizer configured: nothing is denied, and no names are gathered to ask)
    denied = denied_topics(ctx, WRITE, (td.name for td in request.topic_data
                                        if td.name is not None)) \
        if error is None and ctx.authorizer is not None else ()
    # a transactional id: its producer's batches are verified by the transaction
    # coordinator (made with its first use, kbroker.txn.service)
    coordinator = transactions(ctx.broker) if request.transactional_id is not None else None
    verifier = coordinator.verifier if coordinator is not None else None
    if error is None and verifier is not None:
        # KIP-890: ask the transaction coordinator before a producer's first transactional
        # batch on a partition (part 1: is it in the transaction; part 2, v12+: add it);
        # the append consults the verdict
        await verifier.wait_verified(
            request.transactional_id,
            [td for td in request.topic_data if td.name is not None and td.name not in denied],
            add=version >= TV2_VERSION, abortable_ok=version >= ABORTABLE_VERSION)
    stats = ctx.broker.topic_stats
    append = replicas.append
    errors = False            # an answer with an error code (or one that may get one)
    woke = False              # an append woke parked readers of its partition
    for td in request.topic_data:
        parts = []
        name = td.name
        refused = error if error is not None else ErrorCode.UNKNOWN_TOPIC_ID if name is None \
            else ErrorCode.TOPIC_AUTHORIZATION_FAILED if name in denied else None
        if refused is not None:
            errors = True
            for pd in td.partition_data:
                parts.append(_partition_response(pd.index, refused, version))
                if error is not None and name is not None:
                    # refused by the authorizer: not a failed produce (Kafka)
                    stats.produce_failed(name, error, 0)
        else:
            appended = bytes_in = messages_in = 0
            for pd in td.partition_data:
                records = pd.records
                try:
                    res = append(name, pd.index, records, required_acks=acks, now_ms=now_ms,
                                 allow_internal=allow_internal)
                except ReplicaError as exc:
                    errors = True
                    parts.append(_partition_response(pd.index, exc, version))
                    stats.produce_failed(name, exc.error_code, len(records or b""))
                    continue
                appended += 1
                woke = woke or res.woke_readers
                bytes_in += len(records)
                messages_in += res.last_offset - res.base_offset + 1
                # (make: the generated constructor as a plain call; the absent leader is
                # the struct's shared default, a partition that names one gets its own)
                parts.append(_PartitionResponse.make(
                    index=pd.index, base_offset=res.base_offset,
                    log_append_time_ms=res.log_append_time_ms,
                    log_start_offset=res.log_start_offset))
                if acks == -1:
                    required = res.last_offset + 1
                    # as of the append; a duplicate's answer is checked here
                    done = res.replicated if res.replicated is not None else \
                        replicas.check_replicated(name, pd.index, required)
                    if done is None:
                        errors = True
                        waits.append((parts, len(parts) - 1, name, pd.index, required))
                    elif done:
                        errors = True
                        parts[-1].error_code = done
            if appended:
                _meter(stats, name, appended, bytes_in, messages_in)
        topics.append(Resp.TopicProduceResponse.make(name=name or "", partition_responses=parts)
                      if version < 13 else
                      Resp.TopicProduceResponse.make(name=name or "", topic_id=td.topic_id,
                                                     partition_responses=parts))
    if woke:
        # the connection lets the fetches this request woke answer before its own answer
        # goes out, as Kafka completes delayed fetches inside the append
        ctx.extra["readers_woken"] = True
    if waits:
        await _wait_replicated(replicas, waits, request.timeout_ms)
    failed = [(t.name, p.index, p.error_code) for t in topics for p in t.partition_responses
              if p.error_code] if errors else ()
    if acks == 0:
        # No response at all; a failure closes the connection, the only way the client
        # learns of it (it then refreshes its metadata), as Kafka's handleProduceRequest.
        if failed:
            ctx.extra["close_connection"] = (
                f"error during produce request with correlation id {ctx.correlation_id} from "
                f"client id {ctx.client_id} with ack=0: "
                + ", ".join(f"{t}-{i}: {_error_name(c)}" for t, i, c in failed))
        return None
    endpoints = _current_leaders(ctx, topics) if version >= 10 and failed else []
    return Resp.make(responses=topics, throttle_time_ms=0, node_endpoints=endpoints)


RUN_VERSIONS = range(SERVED_FROM, 13)     # v13 names topics by id


def run_key(version: int, request) -> tuple[str, int] | None:
    """The partition of a Produce request that may join a run (:func:`handle_run`): acks=1,
    no transactional id, one topic by name with one partition; else None."""
    if version not in RUN_VERSIONS or request.acks != 1 or request.transactional_id is not None:
        return None
    topics = request.topic_data
    if len(topics) != 1:
        return None
    parts = topics[0].partition_data
    if len(parts) != 1 or not parts[0].records:
        return None
    return topics[0].name, parts[0].index


def handle_run(ctx: RequestContext, name: str, index: int, batches: list) -> list | None:
    """The answers of a connection's run of pipelined Produce requests that all write
    partition ``index`` of topic ``name`` (:func:`run_key`), ``batches`` their records in
    order, appended in one step (:meth:`ReplicaManager.append_run`): each request's (base
    offset, log append time, log start offset), encoded by :func:`run_answers`; what
    :func:`handle` answers for each in turn, with one write, one high-watermark step and
    one wake-up for the run. A producer ahead of its broker sends such runs (librdkafka
    with ``linger.ms=0`` and many requests in flight), and each request's own append was
    most of its cost. ``None`` (nothing appended): an authorizer is configured, or the
    partition or a batch needs the one-by-one path; the caller handles the requests one by
    one."""
    if ctx.authorizer is not None:
        return None
    result = ctx.broker.replicas.append_run(name, index, batches,
                                            now_ms=ctx.broker.clock.now_ms())
    if result is None:
        return None
    answers = result.answers
    _meter(ctx.broker.topic_stats, name, len(answers), sum(map(len, batches)),
           result.last_offset - answers[0][0] + 1)
    if result.woke_readers:
        ctx.extra["readers_woken"] = True
    return answers


# int64 values whose eight bytes all have the high bit set, so that no topic name, index
# or small number in a Produce answer holds them: the fields a run's answers differ in
# (base offset, log append time, log start offset), for :class:`ResponseStamp`
_RUN_MARKERS = tuple(int.from_bytes(bytes(0x80 | (8 * i + k) for k in range(8)), "big",
                                    signed=True) for i in range(3))


def run_answers(name: str, index: int, requests: list, answers: list) -> bytes:
    """The answer frames of a run (:func:`handle_run`'s ``answers``; ``requests``: each
    request's (version, correlation id)), one after another: the bytes :func:`handle`
    gives each request, each stamped from its version's answer encoded once (every answer
    of a run differs only in its correlation id and offsets)."""
    out = bytearray()
    for (version, correlation_id), answer in zip(requests, answers):
        _run_stamp(version, name, index).stamp(out, correlation_id, answer)
    return bytes(out)


@functools.lru_cache(maxsize=1024)
def _run_stamp(version: int, name: str, index: int) -> ResponseStamp:
    markers = _RUN_MARKERS if version >= 5 else _RUN_MARKERS[:2]   # log_start_offset: v5+
    return ResponseStamp(PRODUCE_KEY, version, _run_answer(name, index, *_RUN_MARKERS),
                         markers)


def _run_answer(name: str, index: int, base_offset: int, log_append_time_ms: int,
                log_start_offset: int):
    """A run's answer to one request: no error, one topic and partition."""
    return Resp.make(responses=[Resp.TopicProduceResponse.make(
        name=name, partition_responses=[_PartitionResponse.make(
            index=index, base_offset=base_offset, log_append_time_ms=log_append_time_ms,
            log_start_offset=log_start_offset)])], throttle_time_ms=0, node_endpoints=[])


def _meter(stats, name: str, appended: int, bytes_in: int, messages_in: int) -> None:
    """A topic's produce meters, as Kafka's BrokerTopicStats (bytes as sent, records by
    their offsets), once per topic and request (or run): nothing reads them meanwhile."""
    counters = stats.known(name) or stats.topic(name)
    counters.produce_requests += appended
    counters.bytes_in += bytes_in
    counters.messages_in += messages_in


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _current_leaders(ctx: RequestContext, topics) -> list:
    """KIP-951 (v10+): a NOT_LEADER_OR_FOLLOWER partition names its current leader and
    epoch, and the answer carries that leader's endpoint on the request's listener, so the
    client re-routes without a metadata round trip (Kafka's getCurrentLeader: the local
    replica's view, else the metadata image; the endpoint only for a live broker)."""
    replicas = ctx.broker.replicas
    image = replicas.image
    brokers = getattr(image, "brokers", None) or {}
    nodes: dict[int, object] = {}
    for t in topics:
        for p in t.partition_responses:
            if p.error_code != ErrorCode.NOT_LEADER_OR_FOLLOWER:
                continue
            leader, epoch = replicas.current_leader(t.name, p.index)
            p.current_leader = Resp.TopicProduceResponse.PartitionProduceResponse.LeaderIdAndEpoch(
                leader_id=leader, leader_epoch=epoch)
            b = brokers.get(leader) if leader >= 0 else None
            if b is None or getattr(b, "fenced", False) or leader in nodes:
                continue
            ep = b.endpoint(ctx.listener)
            if ep is not None:
                nodes[leader] = Resp.NodeEndpoint(node_id=leader, host=ep[0], port=ep[1],
                                                  rack=b.rack)
    return [nodes[k] for k in sorted(nodes)]
