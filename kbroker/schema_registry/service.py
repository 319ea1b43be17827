"""The registry's operations, one method per REST resource: Confluent's rules and answers.

Reads first replay the ``_schemas`` log up to its high watermark (``store.catch_up``), so a
node answers with everything any node has written and acknowledged. Writes take the node's
write lock, replay, decide against the state (modes, compatibility, ids, versions), write
the records and then learn from the replay whether they took effect (``store.write``); a
record refused because another node won a race is decided again from the new state.

Rules kept (Confluent Schema Registry 7.x behaviour, Karapace agrees):

- A schema is identified by its type, canonical form and references: registering one that
  a live version of the subject already holds answers that version's id and writes
  nothing; one another subject holds gets the same id in a new version.
- New versions are checked against the live versions at the subject's level (its own, else
  the global one, else BACKWARD); the plain levels look at the latest, ``_TRANSITIVE`` ones
  at all. IMPORT mode skips the check and takes the request's ``id`` (and ``version``).
- READONLY / READONLY_OVERRIDE refuse writes to the subject (42205).
- Soft delete marks versions deleted (they stay readable with ``deleted=true`` and keep
  their ids); permanent delete needs a soft delete first (40405/40407) and writes
  tombstones. A version another live schema references cannot be deleted (42206).
- ``normalize=true`` stores and compares the type's normalized text.
- ``format=serialized`` on a PROTOBUF schema answers the base64 ``FileDescriptorProto``
  (``types/protobuf_serialized.py``), what confluent-kafka's ProtobufDeserializer asks for.

Not done here: Confluent's data contracts (``metadata``, ``ruleSet``), contexts, tags and the
``/schemas`` paging options beyond ``subjectPrefix``/``deleted``/``latestOnly``.
"""
from __future__ import annotations

import logging
from dataclasses import replace

from . import errors
from . import records as rec
from .records import Reference, SchemaValue
from .state import LEVELS, MODES, RegistryState
from .store import SchemaStore
from .types import SCHEMA_TYPES, SchemaError, check_compatibility, parse
from .types import protobuf_serialized

log = logging.getLogger("kbroker.schema_registry")

MAX_VERSION = 2**31 - 1
WRITE_ATTEMPTS = 10


def parse_version(text, *, allow_latest: bool = True) -> int | None:
    """A path's version: a number in [1, 2^31-1], or ``latest``/``-1`` (None). Else 42202."""
    s = str(text).strip()
    if allow_latest and s.lower() in ("latest", "-1"):
        return None
    try:
        n = int(s)
    except ValueError:
        raise errors.invalid_version(text) from None
    if not 1 <= n <= MAX_VERSION:
        raise errors.invalid_version(text)
    return n


class SchemaRequest:
    """A request body naming a schema: ``schema``, ``schemaType``, ``references`` (and, for
    IMPORT mode, ``id`` and ``version``). Unknown fields (``metadata``, ``ruleSet``...) are
    ignored, as by Confluent's registry."""

    def __init__(self, body):
        if not isinstance(body, dict):
            raise errors.unprocessable("Request body must be a JSON object")
        schema = body.get("schema")
        if schema is None or schema == "":
            raise errors.invalid_schema("Empty schema")
        if not isinstance(schema, str):
            raise errors.unprocessable("Field 'schema' must be a string")
        stype = body.get("schemaType") or "AVRO"
        if not isinstance(stype, str) or stype.upper() not in SCHEMA_TYPES:
            raise errors.RegistryError(422, 42201, f"Invalid schema type {stype}")
        refs = body.get("references") or []
        if not isinstance(refs, list):
            raise errors.unprocessable("Field 'references' must be a list")
        out = []
        for r in refs:
            if not isinstance(r, dict) or not isinstance(r.get("name"), str) \
                    or not isinstance(r.get("subject"), str) or not isinstance(r.get("version"), int):
                raise errors.unprocessable("A reference has a name, a subject and a version")
            out.append(Reference(r["name"], r["subject"], r["version"]))
        for f in ("id", "version"):
            if body.get(f) is not None and (not isinstance(body.get(f), int) or isinstance(body.get(f), bool)):
                raise errors.unprocessable(f"Field '{f}' must be an integer")
        self.schema = schema
        self.schema_type = stype.upper()
        self.references = tuple(out)
        self.id = body.get("id") if body.get("id") not in (None, -1, 0) else None
        self.version = body.get("version") if body.get("version") not in (None, -1, 0) else None


def schema_json(sv: SchemaValue, *, with_subject: bool = True) -> dict:
    """A version as Confluent answers it (``schemaType`` only for non-Avro, ``references``
    only when there are some)."""
    out: dict = {}
    if with_subject:
        out.update(subject=sv.subject, version=sv.version)
    out["id"] = sv.id
    if sv.schema_type != "AVRO":
        out["schemaType"] = sv.schema_type
    if sv.references:
        out["references"] = [r.to_json() for r in sv.references]
    out["schema"] = sv.schema
    return out


class RegistryService:
    """The operations of one node's registry over its store."""

    def __init__(self, broker, *, replication_factor: int = 3, timeout_s: float = 30.0):
        self._parsed: dict[tuple, object] = {}
        self.state = RegistryState(canonical=self._canonical)
        self.store = SchemaStore(broker, self.state, replication_factor=replication_factor,
                                 timeout_s=timeout_s)
        self.stats = {"registered": 0, "write_retries": 0}

    # ------------------------------------------------------------------ parsing
    def _resolve(self, refs) -> dict[str, str]:
        """name -> text of every schema ``refs`` reach (references of references too)."""
        out: dict[str, str] = {}
        todo = list(refs)
        seen = set()
        while todo:
            r = todo.pop()
            if (r.name, r.subject, r.version) in seen:
                continue
            seen.add((r.name, r.subject, r.version))
            sv = self.state.version(r.subject, r.version)
            if r.version == -1:
                live = self.state.versions(r.subject)
                sv = live[-1] if live else None
            if sv is None:
                raise SchemaError(f"Reference {r.name} (subject {r.subject!r} version "
                                  f"{r.version}) not found")
            out.setdefault(r.name, sv.schema)
            todo.extend(sv.references)
        return out

    def _parse_value(self, sv: SchemaValue, *, validate: bool = False):
        """The parsed schema of ``sv`` (cached). ``validate`` for a schema being registered;
        stored ones are read back as Confluent does for a schema that is not new."""
        key = (sv.schema_type, sv.schema, sv.references, validate)
        got = self._parsed.get(key)
        if got is None:
            got = parse(sv.schema_type, sv.schema, self._resolve(sv.references), validate=validate)
            if len(self._parsed) > 10_000:
                self._parsed.clear()
            self._parsed[key] = got
        return got

    def _canonical(self, sv: SchemaValue) -> str:
        try:
            return self._parse_value(sv).canonical()
        except Exception:  # noqa: BLE001 - a record we cannot parse compares by its text
            return sv.schema

    def _parse_request(self, req: SchemaRequest, *, normalize: bool) -> SchemaValue:
        probe = SchemaValue(subject="", version=0, id=0, schema=req.schema,
                            schema_type=req.schema_type, references=req.references)
        try:
            parsed = self._parse_value(probe, validate=True)
        except SchemaError as e:
            raise errors.invalid_schema(str(e)) from None
        except Exception as e:  # noqa: BLE001 - a parser's own error is still bad input
            log.info("schema of type %s did not parse: %r", req.schema_type, e)
            raise errors.invalid_schema(str(e) or type(e).__name__) from None
        # stored and answered as Confluent does: the type's canonical text (Avro's
        # Schema.toString()), or its normalized one when the request asks for it
        return replace(probe, schema=parsed.normalized() if normalize else parsed.canonical())

    # ------------------------------------------------------------------ reads
    async def fresh(self) -> RegistryState:
        await self.store.catch_up()
        return self.state

    async def _read(self, answer):
        """``answer(state)`` after a replay; a not-found answer on a node that does not lead
        ``_schemas`` is checked again against the leader's log, so what one node wrote
        (acks=all) is found on any other at once (read-your-writes across nodes)."""
        st = await self.fresh()
        try:
            return answer(st)
        except errors.RegistryError as e:
            if e.status != 404 or self.store.is_leader() or self.store.leader() < 0:
                raise
        try:
            await self.store.catch_up(from_leader=True)
        except errors.RegistryError as e:
            log.info("schema registry: the leader's log could not be read: %s", e.message)
        return answer(self.state)

    async def subjects(self, *, deleted: bool = False, prefix: str = "") -> list[str]:
        st = await self.fresh()
        return [s for s in st.subject_names(deleted=deleted) if s.startswith(prefix)]

    def _live_or_404(self, st: RegistryState, subject: str, *, deleted: bool = False):
        versions = st.versions(subject, deleted=deleted)
        if not versions:
            raise errors.subject_not_found(subject)
        return versions

    async def versions(self, subject: str, *, deleted: bool = False) -> list[int]:
        return await self._read(lambda st: [
            v.version for v in self._live_or_404(st, subject, deleted=deleted)])

    def _version(self, st: RegistryState, subject: str, version_text, *,
                 deleted: bool = False) -> SchemaValue:
        n = parse_version(version_text)
        versions = self._live_or_404(st, subject, deleted=deleted)
        if n is None:
            return versions[-1]
        sv = st.version(subject, n)
        if sv is None or (sv.deleted and not deleted):
            raise errors.version_not_found(n)
        return sv

    async def get_version(self, subject: str, version_text, *, deleted: bool = False,
                          fmt: str | None = None) -> dict:
        def answer(st: RegistryState):
            sv = self._version(st, subject, version_text, deleted=deleted)
            return self._formatted(sv, schema_json(sv), fmt)
        return await self._read(answer)

    def _formatted(self, sv: SchemaValue, out: dict, fmt: str | None) -> dict:
        """``out`` with its schema in the ``format`` a request asks for: ``serialized``
        turns a PROTOBUF schema into the base64 of its FileDescriptorProto (Confluent's
        answer); other formats, and other schema types, answer the stored text."""
        if fmt == "serialized" and sv.schema_type == "PROTOBUF":
            try:
                out["schema"] = protobuf_serialized.serialized(self._parse_value(sv))
            except SchemaError as e:
                raise errors.RegistryError(500, 50001, f"Error serializing schema {sv.id}: {e}") from None
        return out

    async def parsed_by_id(self, schema_id: int):
        """(type, parsed schema) of a registered id, references resolved (the REST
        gateway's schema-based formats read and write records with it)."""
        def answer(st: RegistryState):
            sv = st.schema_by_id(schema_id)
            if sv is None:
                raise errors.schema_not_found(schema_id)
            return sv.schema_type, self._parse_value(sv)
        return await self._read(answer)

    async def get_version_schema(self, subject: str, version_text, *, deleted: bool = False,
                                 fmt: str | None = None) -> str:
        def answer(st: RegistryState):
            sv = self._version(st, subject, version_text, deleted=deleted)
            return self._formatted(sv, {"schema": sv.schema}, fmt)["schema"]
        return await self._read(answer)

    async def referenced_by(self, subject: str, version_text) -> list[int]:
        return await self._read(lambda st: st.referenced_by(
            subject, self._version(st, subject, version_text).version))

    async def schema_by_id(self, schema_id: int, *, subject: str | None = None,
                           fetch_max_id: bool = False, fmt: str | None = None) -> dict:
        return await self._read(lambda st: self._schema_by_id(st, schema_id, subject,
                                                              fetch_max_id, fmt))

    def _schema_by_id(self, st: RegistryState, schema_id: int, subject, fetch_max_id,
                      fmt: str | None = None) -> dict:
        # ``subject`` names the schema context to look in (Confluent: the id is looked up in
        # the subject's context, not in the subject itself); there is one context here, the
        # default, so it does not narrow the lookup: deserializers pass their topic's subject
        sv = st.schema_by_id(schema_id)
        if sv is None:
            raise errors.schema_not_found(schema_id)
        out = self._formatted(sv, schema_json(sv, with_subject=False), fmt)
        del out["id"]
        if fetch_max_id:
            out["maxId"] = st.max_id
        return out

    async def id_versions(self, schema_id: int, *, deleted: bool = False) -> list[dict]:
        def answer(st: RegistryState):
            if st.schema_by_id(schema_id) is None:
                raise errors.schema_not_found(schema_id)
            return [{"subject": s, "version": n} for s, n in st.users_of(schema_id, deleted=deleted)]
        return await self._read(answer)

    async def id_subjects(self, schema_id: int, *, deleted: bool = False) -> list[str]:
        return sorted({d["subject"] for d in await self.id_versions(schema_id, deleted=deleted)})

    async def list_schemas(self, *, prefix: str = "", deleted: bool = False,
                           latest_only: bool = False) -> list[dict]:
        st = await self.fresh()
        out = []
        for s in st.subject_names(deleted=deleted):
            if not s.startswith(prefix):
                continue
            vs = st.versions(s, deleted=deleted)
            out.extend(schema_json(v) for v in (vs[-1:] if latest_only else vs))
        return out

    async def lookup(self, subject: str, body, *, normalize: bool = False,
                     deleted: bool = False) -> dict:
        req = SchemaRequest(body)

        def answer(st: RegistryState):
            # as Confluent: a subject with no version to look in (a soft-deleted one without
            # deleted=true) is not found; a subject that has versions but not this schema,
            # the schema is not
            if not st.has_subject(subject, deleted=deleted):
                raise errors.subject_not_found(subject)
            probe = self._parse_request(req, normalize=normalize)
            sv = st.find_in_subject(subject, probe, deleted=deleted)
            if sv is None:
                raise errors.schema_not_found()
            return schema_json(sv)
        return await self._read(answer)

    # ------------------------------------------------------------------ writes
    def _check_writable(self, st: RegistryState, subject: str | None) -> str:
        mode = st.effective_mode(subject)
        if mode in ("READONLY", "READONLY_OVERRIDE"):
            raise errors.not_permitted(f"Subject {subject} is in read-only mode"
                                       if subject else "The registry is in read-only mode")
        return mode

    async def _write(self, decide) -> object:
        """Run ``decide(state) -> (records, answer)`` under the write lock until its records
        took effect (another node may win a race: then decide again)."""
        async with self.store.write_lock:
            for attempt in range(WRITE_ATTEMPTS):
                # decide on the leader's log: the freshest state, the fewest lost races
                await self.store.catch_up(from_leader=True)
                records, answer = decide(self.state)
                if not records:
                    return answer
                verdicts = await self.store.write(records)
                if all(verdicts):
                    return answer
                self.stats["write_retries"] += 1
                log.info("_schemas write lost a race with another node; deciding again")
                repairs = self._repairs([r for r, ok in zip(records, verdicts) if not ok])
                if repairs:
                    await self.store.write(repairs)
            raise errors.store_error("gave up after concurrent writes from other nodes")

    def _repairs(self, refused: list[tuple[bytes, bytes | None]]) -> list[tuple[bytes, bytes | None]]:
        """Records that make the log's *last* record of each refused key the one that won:
        compaction keeps only the last record of a key, and the refused one came later. The
        winner's value is written again (the replay takes it as the same version). A
        refused key that holds nothing gets no tombstone (another node may be filling it
        right now); the retry usually writes that key itself, and the replay refuses the
        stray record again, compacted or not."""
        out = []
        for key, _ in refused:
            k = rec.decode_key(key)
            held = self.state.version(k.subject, k.version) if k.keytype == rec.SCHEMA else None
            if held is not None:
                out.append((key, held.encode()))
        return out

    async def register(self, subject: str, body, *, normalize: bool = False) -> dict:
        req = SchemaRequest(body)
        if not subject or "\x00" in subject:
            raise errors.invalid_subject(subject)

        def decide(st: RegistryState):
            mode = self._check_writable(st, subject)
            if req.id is not None and mode != "IMPORT":
                raise errors.not_permitted(f"Subject {subject} is not in import mode")
            probe = self._parse_request(req, normalize=normalize)
            existing = st.find_in_subject(subject, probe)
            if existing is not None and (req.id is None or req.id == existing.id):
                return [], {"id": existing.id}
            live = st.versions(subject)
            if mode != "IMPORT" and live:
                level = st.effective_level(subject)
                try:
                    olds = [self._parse_value(v) for v in live]
                    new = self._parse_value(probe, validate=True)
                    reasons = check_compatibility(level, new, olds, [v.version for v in live])
                except SchemaError as e:
                    raise errors.invalid_schema(str(e)) from None
                if reasons:
                    raise errors.incompatible(subject, reasons)
            if req.id is not None:
                held = st.schema_by_id(req.id)
                if held is not None and st.identity(held) != st.identity(probe):
                    raise errors.id_conflict(req.id)
                schema_id = req.id
            else:
                schema_id = st.id_for(probe) or st.max_id + 1
            version = st.latest_version_number(subject) + 1
            if req.version is not None and mode == "IMPORT":
                if st.version(subject, req.version) is not None:
                    raise errors.not_permitted(f"Version {req.version} of subject {subject} "
                                               "already exists")
                version = req.version
            value = replace(probe, subject=subject, version=version, id=schema_id)
            return [(rec.Key(rec.SCHEMA, subject, version).encode(), value.encode())], {"id": schema_id}

        answer = await self._write(decide)
        self.stats["registered"] += 1
        return answer

    async def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        def decide(st: RegistryState):
            self._check_writable(st, subject)
            every = st.versions(subject, deleted=True)
            if not every:
                raise errors.subject_not_found(subject)
            live = [v for v in every if not v.deleted]
            if permanent:
                if live:
                    raise errors.subject_not_soft_deleted(subject)
                for v in every:
                    if st.referenced_by(subject, v.version):
                        raise errors.reference_exists(subject, v.version)
                return ([(rec.Key(rec.SCHEMA, subject, v.version).encode(), None) for v in every],
                        [v.version for v in every])
            if not live:
                raise errors.subject_soft_deleted(subject)
            for v in live:
                if st.referenced_by(subject, v.version):
                    raise errors.reference_exists(subject, v.version)
            out = [(rec.Key(rec.DELETE_SUBJECT, subject).encode(),
                    rec.encode_delete_subject(subject, live[-1].version))]
            # as Confluent: a soft-deleted subject keeps no subject-level config or mode
            if st.level(subject) is not None:
                out.append((rec.Key(rec.CONFIG, subject).encode(), None))
            if st.mode(subject) is not None:
                out.append((rec.Key(rec.MODE, subject).encode(), None))
            return out, [v.version for v in live]

        return await self._write(decide)

    async def delete_version(self, subject: str, version_text, *, permanent: bool = False) -> int:
        n = parse_version(version_text)

        def decide(st: RegistryState):
            self._check_writable(st, subject)
            every = st.versions(subject, deleted=True)
            if not every:
                raise errors.subject_not_found(subject)
            if n is None:
                sv = (every if permanent else [v for v in every if not v.deleted] or every)[-1]
            else:
                sv = st.version(subject, n)
                if sv is None:
                    raise errors.version_not_found(n)
            if permanent:
                if not sv.deleted:
                    raise errors.version_not_soft_deleted(subject, sv.version)
                if st.referenced_by(subject, sv.version):
                    raise errors.reference_exists(subject, sv.version)
                return [(rec.Key(rec.SCHEMA, subject, sv.version).encode(), None)], sv.version
            if sv.deleted:
                raise errors.version_soft_deleted(subject, sv.version)
            if st.referenced_by(subject, sv.version):
                raise errors.reference_exists(subject, sv.version)
            value = replace(sv, deleted=True)
            return [(rec.Key(rec.SCHEMA, subject, sv.version).encode(), value.encode())], sv.version

        return await self._write(decide)

    # ------------------------------------------------------------------ config and mode
    async def get_config(self, subject: str | None, *, default_to_global: bool = False) -> dict:
        st = await self.fresh()
        if subject is None:
            return {"compatibilityLevel": st.effective_level(None)}
        level = st.level(subject)
        if level is None:
            if not default_to_global:
                raise errors.subject_config_not_found(subject)
            level = st.effective_level(None)
        return {"compatibilityLevel": level}

    async def set_config(self, subject: str | None, body) -> dict:
        level = body.get("compatibility") if isinstance(body, dict) else None
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise errors.invalid_level()
        level = level.upper()

        def decide(st: RegistryState):
            return [(rec.Key(rec.CONFIG, subject).encode(), rec.encode_config(level))], \
                {"compatibility": level}

        return await self._write(decide)

    async def delete_config(self, subject: str | None) -> dict:
        def decide(st: RegistryState):
            if subject is not None and not st.has_subject(subject, deleted=True) \
                    and st.level(subject) is None:
                raise errors.subject_not_found(subject)
            old = st.level(subject) if subject is not None else st.effective_level(None)
            records = [] if st.level(subject) is None else [(rec.Key(rec.CONFIG, subject).encode(), None)]
            return records, {"compatibilityLevel": old or st.effective_level(None)}

        return await self._write(decide)

    async def get_mode(self, subject: str | None, *, default_to_global: bool = False) -> dict:
        st = await self.fresh()
        if subject is None:
            return {"mode": st.effective_mode(None)}
        mode = st.mode(subject)
        if mode is None:
            if not default_to_global:
                raise errors.subject_mode_not_found(subject)
            mode = st.effective_mode(None)
        return {"mode": mode}

    async def set_mode(self, subject: str | None, body, *, force: bool = False) -> dict:
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode(mode)
        mode = mode.upper()

        def decide(st: RegistryState):
            if mode == "IMPORT" and not force:
                busy = st.has_subject(subject) if subject is not None else bool(st.subject_names())
                if busy and st.effective_mode(subject) != "IMPORT":
                    raise errors.not_permitted("Cannot import since found existing subjects")
            return [(rec.Key(rec.MODE, subject).encode(), rec.encode_mode(mode))], {"mode": mode}

        return await self._write(decide)

    async def delete_mode(self, subject: str) -> dict:
        def decide(st: RegistryState):
            old = st.mode(subject)
            if old is None and not st.has_subject(subject, deleted=True):
                raise errors.subject_not_found(subject)
            records = [] if old is None else [(rec.Key(rec.MODE, subject).encode(), None)]
            return records, {"mode": old or st.effective_mode(None)}

        return await self._write(decide)

    # ------------------------------------------------------------------ compatibility
    async def check(self, subject: str, version_text, body, *, verbose: bool = False,
                    normalize: bool = False) -> dict:
        """POST /compatibility/subjects/{s}/versions/{v} (``version_text`` None: every
        version the level looks at)."""
        req = SchemaRequest(body)
        st = await self.fresh()
        probe = self._parse_request(req, normalize=normalize)
        level = st.effective_level(subject)
        live = st.versions(subject)
        if version_text is None:
            against = live
        else:
            n = parse_version(version_text)
            if n is None:
                # Confluent (since 7.0): ``latest`` of a subject without live versions is
                # checked against nothing, so it is compatible; a numbered one is 40402
                against = live[-1:]
            else:
                sv = st.version(subject, n)
                if sv is None or sv.deleted:
                    raise errors.version_not_found(n)
                against = [sv]
            if level.endswith("_TRANSITIVE"):
                against = live
        try:
            reasons = check_compatibility(level, self._parse_value(probe, validate=True),
                                          [self._parse_value(v) for v in against],
                                          [v.version for v in against]) if against else []
        except SchemaError as e:
            raise errors.invalid_schema(str(e)) from None
        out: dict = {"is_compatible": not reasons}
        if verbose:
            out["messages"] = reasons
        return out

    def statistics(self) -> dict:
        return {**self.state.statistics(), **self.store.statistics(), **self.stats}
