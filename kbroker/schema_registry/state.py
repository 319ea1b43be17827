"""The registry's state: what a replay of the ``_schemas`` topic says, and nothing else.

Pure (no trio, no I/O, no clock): :meth:`RegistryState.apply` takes one record (offset, key
bytes, value bytes) in log order and returns whether it took effect; every node replays the
same log and so reaches the same state, and a writer learns whether its record won by
applying what the log returned (``kbroker/schema_registry/store.py``).

Rules of the replay (Confluent's ``KafkaStoreMessageHandler`` semantics, plus the two
conflict rules that make concurrent writers on different nodes safe):

- SCHEMA value: the version ``(subject, version)`` now holds it; ``deleted`` marks it
  soft-deleted. A record is *refused* (not applied) when that version already holds another
  id, or when its id already names a different schema (another canonical form, type or
  references): two nodes that picked the same version or id concurrently — the later record
  in the log loses, everywhere.
- SCHEMA tombstone: the version is gone (permanent delete); the id stays reserved.
- DELETE_SUBJECT: every version up to the value's version is soft-deleted.
- CLEAR_SUBJECT: the subject's soft-deleted versions are forgotten.
- CONFIG / MODE: the subject's (null subject: the global) level or mode; a tombstone
  removes it.
- NOOP and unreadable records change nothing.

Ids are never reused: ``max_id`` only grows, also when versions are deleted.
"""
from __future__ import annotations

import logging
from dataclasses import replace

from . import records as rec
from .records import Reference, SchemaValue

log = logging.getLogger("kbroker.schema_registry")

DEFAULT_LEVEL = "BACKWARD"
DEFAULT_MODE = "READWRITE"
LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
          "FULL", "FULL_TRANSITIVE")
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")


class RegistryState:
    """Subjects, versions, ids, configs and modes, as replayed; ``next_offset`` is the
    offset of the next record to apply. ``canonical(value)`` is supplied by the caller (the
    schema types' canonical form, with the text itself when it does not parse) so that the
    state stays independent of the parsers."""

    def __init__(self, canonical=None):
        self.next_offset = 0
        self.subjects: dict[str, dict[int, SchemaValue]] = {}
        self.ids: dict[int, SchemaValue] = {}               # id -> the first value naming it
        self.id_users: dict[int, set[tuple[str, int]]] = {}  # id -> (subject, version)s
        self.by_identity: dict[tuple, int] = {}              # (type, canonical, refs) -> id
        self.max_id = 0
        self.configs: dict[str | None, str] = {}
        self.modes: dict[str | None, str] = {}
        self.stats = {"records": 0, "refused": 0, "unreadable": 0}
        self._canonical = canonical or (lambda value: value.schema)

    # ------------------------------------------------------------------ replay
    def identity(self, value: SchemaValue) -> tuple:
        return (value.schema_type, self._canonical(value), value.references)

    def apply(self, offset: int, key: bytes | None, value: bytes | None) -> bool:
        """Apply the record at ``offset``; False when it was unreadable or refused."""
        self.next_offset = max(self.next_offset, offset + 1)
        self.stats["records"] += 1
        try:
            k = rec.decode_key(key)
            v = rec.decode_value(k, value)
        except rec.BadRecord as e:
            self.stats["unreadable"] += 1
            log.warning("_schemas record at offset %d skipped: %s", offset, e)
            return False
        if k.keytype == rec.SCHEMA:
            ok = self._apply_schema(k, v)
        elif k.keytype == rec.CONFIG:
            self._set(self.configs, k.subject, v)
            ok = True
        elif k.keytype == rec.MODE:
            self._set(self.modes, k.subject, v)
            ok = True
        elif k.keytype == rec.DELETE_SUBJECT:
            for n, sv in list(self.subjects.get(k.subject, {}).items()):
                if v is not None and n <= v and not sv.deleted:
                    self.subjects[k.subject][n] = replace(sv, deleted=True)
            ok = True
        elif k.keytype == rec.CLEAR_SUBJECT:
            for n, sv in list(self.subjects.get(k.subject, {}).items()):
                if sv.deleted:
                    self._remove(k.subject, n)
            ok = True
        else:
            ok = True
        if not ok:
            self.stats["refused"] += 1
        return ok

    @staticmethod
    def _set(table: dict, subject, value) -> None:
        if value is None:
            table.pop(subject, None)
        else:
            table[subject] = value

    def _apply_schema(self, k: rec.Key, v: SchemaValue | None) -> bool:
        if v is None:
            self._remove(k.subject, k.version)
            return True
        if v.subject != k.subject or v.version != k.version:
            v = replace(v, subject=k.subject, version=k.version)
        held = self.subjects.get(k.subject, {}).get(k.version)
        if held is not None and held.id != v.id:
            log.warning("_schemas: %s version %d already holds id %d; record with id %d refused",
                        k.subject, k.version, held.id, v.id)
            return False
        first = self.ids.get(v.id)
        ident = self.identity(v)
        if first is not None and self.identity(first) != ident:
            log.warning("_schemas: id %d already names another schema; record for %s version %d "
                        "refused", v.id, k.subject, k.version)
            return False
        self.subjects.setdefault(k.subject, {})[k.version] = v
        if first is None:
            self.ids[v.id] = v
            self.by_identity.setdefault(ident, v.id)
        self.id_users.setdefault(v.id, set()).add((k.subject, k.version))
        self.max_id = max(self.max_id, v.id)
        return True

    def _remove(self, subject: str, version: int) -> None:
        versions = self.subjects.get(subject)
        sv = versions.pop(version, None) if versions is not None else None
        if versions is not None and not versions:
            del self.subjects[subject]
        if sv is None:
            return
        users = self.id_users.get(sv.id, set())
        users.discard((subject, version))
        if not users:
            # the id is no longer served; it stays reserved (max_id) and never comes back
            self.id_users.pop(sv.id, None)
            first = self.ids.pop(sv.id, None)
            if first is not None and self.by_identity.get(self.identity(first)) == sv.id:
                del self.by_identity[self.identity(first)]

    # ------------------------------------------------------------------ queries
    def subject_names(self, *, deleted: bool = False) -> list[str]:
        return sorted(s for s, vs in self.subjects.items()
                      if deleted or any(not v.deleted for v in vs.values()))

    def versions(self, subject: str, *, deleted: bool = False) -> list[SchemaValue]:
        """The subject's versions, oldest first (soft-deleted ones only with ``deleted``)."""
        vs = self.subjects.get(subject, {})
        return [vs[n] for n in sorted(vs) if deleted or not vs[n].deleted]

    def has_subject(self, subject: str, *, deleted: bool = False) -> bool:
        return bool(self.versions(subject, deleted=deleted))

    def version(self, subject: str, version: int) -> SchemaValue | None:
        return self.subjects.get(subject, {}).get(version)

    def latest_version_number(self, subject: str) -> int:
        """The highest version number ever held by the subject (deleted ones included)."""
        return max(self.subjects.get(subject, {}) or [0])

    def schema_by_id(self, schema_id: int) -> SchemaValue | None:
        return self.ids.get(schema_id)

    def users_of(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        out = []
        for s, n in sorted(self.id_users.get(schema_id, ())):
            sv = self.version(s, n)
            if sv is not None and (deleted or not sv.deleted):
                out.append((s, n))
        return out

    def id_for(self, value: SchemaValue) -> int | None:
        return self.by_identity.get(self.identity(value))

    def find_in_subject(self, subject: str, value: SchemaValue, *,
                        deleted: bool = False) -> SchemaValue | None:
        ident = self.identity(value)
        for sv in reversed(self.versions(subject, deleted=deleted)):
            if sv.schema_type == value.schema_type and self.identity(sv) == ident:
                return sv
        return None

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of the live versions whose references name ``subject`` ``version``."""
        out = set()
        for vs in self.subjects.values():
            for sv in vs.values():
                if not sv.deleted and any(r.subject == subject and r.version == version
                                          for r in sv.references):
                    out.add(sv.id)
        return sorted(out)

    def level(self, subject: str | None) -> str | None:
        return self.configs.get(subject)

    def effective_level(self, subject: str | None) -> str:
        return self.configs.get(subject) or self.configs.get(None) or DEFAULT_LEVEL

    def mode(self, subject: str | None) -> str | None:
        return self.modes.get(subject)

    def effective_mode(self, subject: str | None) -> str:
        return self.modes.get(subject) or self.modes.get(None) or DEFAULT_MODE

    def statistics(self) -> dict:
        return {"next_offset": self.next_offset, "subjects": len(self.subject_names()),
                "versions": sum(len(v) for v in self.subjects.values()),
                "schemas": len(self.ids), "max_id": self.max_id, **self.stats}


__all__ = ["RegistryState", "Reference", "SchemaValue", "LEVELS", "MODES", "DEFAULT_LEVEL",
           "DEFAULT_MODE"]
