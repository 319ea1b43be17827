"""JSON Schema schemas: parsing, references and canonical forms.

Parsing: the text must be JSON; the schema is checked against its draft's meta-schema
with the ``jsonschema`` package (drafts 4, 6, 7, 2019-09 and 2020-12, chosen by
``$schema``, draft 7 when absent, as Confluent's registry defaults); every ``$ref`` must
resolve, inside the document (``#/definitions/x``, ``#/$defs/x``) or to one of the
references handed over (keyed by the URL the ``$ref`` names, optionally with a
``#/pointer``).

The compatibility rules are Confluent's ``SchemaDiff``: :mod:`.json_model` reads a schema
into the kinds that diff tells apart, :mod:`.json_diff` walks two of them and holds the
pairwise ``can_read`` the levels use (both import this module, never the other way).

Pure code: no I/O (remote ``$ref`` URLs are never fetched), no clock.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urldefrag, urljoin

from jsonschema import exceptions as js_exceptions
from jsonschema import validators

from .base import ParsedSchema, SchemaError

_SUPPORTED_DRAFTS = {
    validators.Draft4Validator, validators.Draft6Validator, validators.Draft7Validator,
    validators.Draft201909Validator, validators.Draft202012Validator,
}
_MODERN = {validators.Draft201909Validator, validators.Draft202012Validator}


def _load_json(text: str, what: str) -> Any:
    if not isinstance(text, str):
        raise SchemaError(f"Invalid schema{what}: not a string")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise SchemaError(f"Invalid schema{what}: {e}") from None


def _validator_for(raw: Any, what: str):
    if not isinstance(raw, (dict, bool)):
        raise SchemaError(f"Invalid schema{what}: a JSON Schema is an object or a boolean")
    cls = validators.validator_for(raw, default=validators.Draft7Validator)
    if cls not in _SUPPORTED_DRAFTS:
        raise SchemaError(f"Invalid schema{what}: unsupported $schema {raw.get('$schema')!r}")
    try:
        cls.check_schema(raw)
    except js_exceptions.SchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        raise SchemaError(f"Invalid schema{what}: {e.message} at #/{where}") from None
    return cls


class JsonSchema(ParsedSchema):
    """A parsed JSON Schema: ``raw`` is the document, ``documents`` every document in
    reach by URL (this one under "" and its ``$id``, the references under their keys)."""

    schema_type = "JSON"

    def __init__(self, text: str, references: dict[str, str] | None = None) -> None:
        super().__init__(text, references)
        self.raw = _load_json(text, "")
        self.draft = _validator_for(self.raw, "")
        self.documents: dict[str, Any] = {}
        for url, ref_text in self.references.items():
            doc = _load_json(ref_text, f" reference {url!r}")
            _validator_for(doc, f" reference {url!r}")
            self.documents[urldefrag(url)[0]] = doc
            if isinstance(doc, dict) and isinstance(doc.get("$id"), str):
                self.documents.setdefault(urldefrag(doc["$id"])[0], doc)
        self.documents[""] = self.raw
        if isinstance(self.raw, dict) and isinstance(self.raw.get("$id"), str):
            self.documents.setdefault(urldefrag(self.raw["$id"])[0], self.raw)
        self._check_refs()
        self._canonical = json.dumps(self.raw, separators=(",", ":"), ensure_ascii=False)
        self._normalized = json.dumps(
            self.raw, separators=(",", ":"), ensure_ascii=False, sort_keys=True
        )

    def _check_refs(self) -> None:
        seen: set[int] = set()
        todo = [(self.raw, "")]
        while todo:
            node, base = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, list):
                todo.extend((n, base) for n in node)
                continue
            if not isinstance(node, dict):
                continue
            if isinstance(node.get("$id"), str) and node is not self.raw:
                base = urljoin(base, node["$id"]) if base else node["$id"]
            ref = node.get("$ref")
            if isinstance(ref, str):
                target, target_base = self.resolve(ref, base)
                self._check_ref_chain(node, target, target_base)
                todo.append((target, target_base))
            for key, value in node.items():
                if key not in ("enum", "const", "default", "examples") and isinstance(value, (dict, list)):
                    todo.append((value, base))

    def _check_ref_chain(self, start: dict, target: Any, base: str) -> None:
        """A ``$ref`` whose chain of references (a schema that is itself a ``$ref``, and so
        on) comes back to a schema of the chain names no schema at all (``{"$ref": "#"}``):
        refused here, as nothing can be validated or compared against it."""
        chain = {id(start)}
        while isinstance(target, dict) and isinstance(target.get("$ref"), str):
            if id(target) in chain:
                raise SchemaError("Invalid schema: $ref cycle without a schema")
            chain.add(id(target))
            if isinstance(target.get("$id"), str) and target is not self.raw:
                base = urljoin(base, target["$id"]) if base else target["$id"]
            target, base = self.resolve(target["$ref"], base)

    def resolve(self, ref: str, base: str = "") -> tuple[Any, str]:
        """The schema ``ref`` points at, and the base URL to resolve refs inside it.
        Raises ``SchemaError`` for a reference that is neither in the document nor among
        the references given."""
        url, fragment = urldefrag(ref)
        doc_url = url
        if url and url not in self.documents and base:
            doc_url = urldefrag(urljoin(base, url))[0]
        if not url:
            doc_url = urldefrag(base)[0] if base in self.documents else ""
        doc = self.documents.get(doc_url)
        if doc is None and url:
            # a reference registered under its bare name ("address.json") but reached
            # through a relative URL ("./address.json" or a full $id-based URL)
            tail = url.rsplit("/", 1)[-1]
            doc = self.documents.get(tail)
        if doc is None:
            raise SchemaError(f"Invalid schema: unknown reference {ref!r}")
        node = doc
        if fragment and fragment.startswith("/"):
            for part in fragment[1:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(node, dict) and part in node:
                    node = node[part]
                elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                else:
                    raise SchemaError(f"Invalid schema: unknown reference {ref!r}")
        elif fragment:
            node = _find_anchor(doc, fragment)
            if node is None:
                raise SchemaError(f"Invalid schema: unknown reference {ref!r}")
        return node, doc_url

    def canonical(self) -> str:
        # Confluent's canonicalString: the document as compact JSON, keys as written
        return self._canonical

    def normalized(self) -> str:
        # keys sorted at every level
        return self._normalized


def _find_anchor(doc: Any, name: str) -> Any:
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("$anchor") == name or node.get("$id") == "#" + name:
                return node
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend(node)
    return None


def parse(text: str, references: dict[str, str] | None = None) -> JsonSchema:
    return JsonSchema(text, references)
