"""The model of a JSON Schema that Confluent's compatibility diff works on.

Confluent's registry reads a JSON Schema with the everit library and compares the
resulting schema objects; this module reads a parsed schema into the same kinds: empty
(``{}``/``true``), false, string, number (``integer`` = number requiring integers),
boolean, null, object, array, enum, const, not, combined (allOf/anyOf/oneOf; a schema
with several facets, such as ``type`` plus ``enum``, becomes a synthetic allOf; a list of
types an anyOf) and reference (followed lazily, so recursive schemas become cycles of
nodes, one node per raw schema object). Keywords without a ``type`` imply their type
(``properties`` an object, ``items`` an array, ...), as everit does.

Pure code: no I/O, no clock.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urljoin

from .base import SchemaError
from .json_schema import _MODERN, JsonSchema


_OBJECT_KEYS = {
    "properties", "required", "additionalProperties", "patternProperties", "minProperties",
    "maxProperties", "dependencies", "dependentRequired", "dependentSchemas",
    "propertyNames", "unevaluatedProperties",
}
_ARRAY_KEYS = {
    "items", "additionalItems", "prefixItems", "minItems", "maxItems", "uniqueItems",
    "contains", "minContains", "maxContains", "unevaluatedItems",
}
_STRING_KEYS = {"minLength", "maxLength", "pattern"}
_NUMBER_KEYS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}


class Node:
    """One schema of the model. ``kind`` says which; the other attributes are those of
    that kind (unset ones stay ``None``)."""

    def __init__(self, kind: str, raw: Any) -> None:
        self.kind = kind
        self.raw = raw
        self.attrs: dict[str, Any] = {}
        self.has_default = False

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["attrs"][name]
        except KeyError:
            raise AttributeError(name) from None

    def get(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def __repr__(self) -> str:
        return f"Node({self.kind}, {json.dumps(self.raw)[:50]})"


class _Loader:
    """Builds the model of one schema, lazily through references (so that recursive
    schemas become cyclic graphs of nodes, one node per raw schema object)."""

    def __init__(self, schema: JsonSchema) -> None:
        self.schema = schema
        self.modern = schema.draft in _MODERN
        self.cache: dict[tuple[int, str], Node] = {}

    def load(self, raw: Any, base: str = "") -> Node:
        key = (id(raw), base)
        node = self.cache.get(key)
        if node is None:
            node = self._build(raw, base)
            self.cache[key] = node
        return node

    def _build(self, raw: Any, base: str) -> Node:
        if raw is True:
            return Node("empty", raw)
        if raw is False:
            return Node("false", raw)
        if not isinstance(raw, dict):
            return Node("empty", raw)
        if isinstance(raw.get("$id"), str) and raw is not self.schema.raw:
            base = urljoin(base, raw["$id"]) if base else raw["$id"]
        facets: list[Node] = []
        if isinstance(raw.get("$ref"), str):
            ref = Node("ref", raw)
            ref.attrs.update(ref_value=raw["$ref"], base=base, loader=self)
            if not self.modern:
                return self._common(ref, raw)
            facets.append(ref)
        types = raw.get("type")
        if isinstance(types, str):
            facets.append(self._typed(types, raw, base, True))
        elif isinstance(types, list):
            typed = [self._typed(t, raw, base, True) for t in types]
            facets.append(typed[0] if len(typed) == 1 else self._combined("anyOf", typed, raw))
        else:
            sniffed = [
                t for t, keys in (("object", _OBJECT_KEYS), ("array", _ARRAY_KEYS),
                                  ("string", _STRING_KEYS), ("number", _NUMBER_KEYS))
                if keys & raw.keys()
            ]
            typed = [self._typed(t, raw, base, False) for t in sniffed]
            if len(typed) == 1:
                facets.append(typed[0])
            elif typed:
                facets.append(self._combined("anyOf", typed, raw))
        if "enum" in raw:
            enum = Node("enum", raw)
            enum.attrs["values"] = list(raw["enum"])
            facets.append(enum)
        if "const" in raw:
            const = Node("const", raw)
            const.attrs["value"] = raw["const"]
            facets.append(const)
        for criterion in ("allOf", "anyOf", "oneOf"):
            if isinstance(raw.get(criterion), list):
                subs = [self.load(s, base) for s in raw[criterion]]
                facets.append(self._combined(criterion, subs, raw[criterion]))
        if "not" in raw:
            neg = Node("not", raw)
            neg.attrs["must_not_match"] = self.load(raw["not"], base)
            facets.append(neg)
        if not facets:
            node = Node("empty", raw)
        elif len(facets) == 1:
            node = facets[0]
        else:
            node = self._combined("allOf", facets, raw, synthetic=True)
        return self._common(node, raw)

    @staticmethod
    def _common(node: Node, raw: dict) -> Node:
        for key, attr in (("$id", "id"), ("id", "id"), ("title", "title"),
                          ("description", "description")):
            if isinstance(raw.get(key), str):
                node.attrs.setdefault(attr, raw[key])
        if "default" in raw:
            node.has_default = True
            node.attrs["default"] = raw["default"]
        node.attrs["connect_type"] = raw.get("connect.type")
        return node

    @staticmethod
    def _combined(criterion: str, subs: list[Node], raw: Any, synthetic: bool = False) -> Node:
        node = Node("combined", raw)
        node.attrs.update(criterion=criterion, subschemas=subs, synthetic=synthetic)
        return node

    def _typed(self, typ: str, raw: dict, base: str, required: bool) -> Node:
        if typ == "integer":
            node = Node("number", raw)
            node.attrs["requires_integer"] = True
        elif typ in ("number", "string", "boolean", "null", "object", "array"):
            node = Node(typ, raw)
            node.attrs["requires_integer"] = False
        else:
            raise SchemaError(f"Invalid schema: unknown type {typ!r}")
        if node.kind == "string":
            node.attrs.update(
                max_length=raw.get("maxLength"), min_length=raw.get("minLength"),
                pattern=raw.get("pattern"),
            )
        elif node.kind == "number":
            self._number(node, raw)
        elif node.kind == "object":
            self._object(node, raw, base)
        elif node.kind == "array":
            self._array(node, raw, base)
        return node

    @staticmethod
    def _number(node: Node, raw: dict) -> None:
        maximum, minimum = raw.get("maximum"), raw.get("minimum")
        xmax, xmin = raw.get("exclusiveMaximum"), raw.get("exclusiveMinimum")
        # draft 4 writes exclusiveness as a flag on maximum/minimum
        if isinstance(xmax, bool):
            xmax, maximum = (maximum, None) if xmax else (None, maximum)
        if isinstance(xmin, bool):
            xmin, minimum = (minimum, None) if xmin else (None, minimum)
        node.attrs.update(
            maximum=maximum, minimum=minimum, exclusive_maximum=xmax, exclusive_minimum=xmin,
            multiple_of=raw.get("multipleOf"),
        )

    def _object(self, node: Node, raw: dict, base: str) -> None:
        props = raw.get("properties") if isinstance(raw.get("properties"), dict) else {}
        additional = raw.get("additionalProperties", True)
        deps = dict(raw.get("dependencies") or {})
        deps.update(raw.get("dependentRequired") or {})
        deps.update(raw.get("dependentSchemas") or {})
        node.attrs.update(
            properties={k: self.load(v, base) for k, v in props.items()},
            required=set(raw.get("required") or []),
            permits_additional=additional is not False,
            additional_schema=self.load(additional, base) if isinstance(additional, dict) else None,
            pattern_properties=[
                (re.compile(p), self.load(s, base))
                for p, s in (raw.get("patternProperties") or {}).items()
            ],
            property_deps={k: set(v) for k, v in deps.items() if isinstance(v, list)},
            schema_deps={k: self.load(v, base) for k, v in deps.items() if isinstance(v, (dict, bool))},
            max_properties=raw.get("maxProperties"), min_properties=raw.get("minProperties"),
            unevaluated=(
                self.load(raw["unevaluatedProperties"], base)
                if "unevaluatedProperties" in raw else None
            ),
        )

    def _array(self, node: Node, raw: dict, base: str) -> None:
        items, additional = raw.get("items"), raw.get("additionalItems", True)
        tuple_items = None
        if isinstance(raw.get("prefixItems"), list):
            # 2020-12: prefixItems is the tuple, items the schema of the rest
            tuple_items = raw["prefixItems"]
            additional = items if items is not None else True
            items = None
        elif isinstance(items, list):
            tuple_items = items
            items = None
        elif isinstance(items, bool):
            # items: true/false allows or forbids every item, as additionalItems would
            additional, items = items, None
        node.attrs.update(
            all_items=self.load(items, base) if items is not None else None,
            item_schemas=[self.load(s, base) for s in tuple_items] if tuple_items is not None else None,
            permits_additional_items=additional is not False,
            additional_items_schema=self.load(additional, base) if isinstance(additional, dict) else None,
            max_items=raw.get("maxItems"), min_items=raw.get("minItems"),
            unique_items=bool(raw.get("uniqueItems", False)),
            max_contains=raw.get("maxContains"), min_contains=raw.get("minContains"),
            unevaluated_items=(
                self.load(raw["unevaluatedItems"], base) if "unevaluatedItems" in raw else None
            ),
        )

    def referred(self, node: Node) -> Node:
        target, base = self.schema.resolve(node.ref_value, node.base)
        return self.load(target, base)


def model(schema: JsonSchema) -> Node:
    return _Loader(schema).load(schema.raw)
