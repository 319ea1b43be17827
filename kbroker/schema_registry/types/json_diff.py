"""Confluent's compatibility rules for JSON Schema: two schema models walked together.

Data valid under the writer's schema must be valid under the reader's. The rules are
Confluent's ``SchemaDiff`` (json-schema-provider): every difference between the writer's
schema (``original``) and the reader's (``update``) gets one of Confluent's change types
and a JSON path (``#/properties/a/maxLength``); changes in Confluent's strict compatible
set pass, any other is a reason. Kept: open, closed and partially open content models
(``additionalProperties`` true/false/schema, ``patternProperties``,
``unevaluatedProperties``) for properties added and removed; ``required`` added (with or
without a default) and removed; types changed, ``integer`` widened to ``number`` or
narrowed; ``enum`` extended or narrowed; ``const``; string, number, object and array
bounds (``maxLength`` ... ``multipleOf``, ``maxItems``, ``uniqueItems``, ``contains``);
tuple items and ``additionalItems`` (``prefixItems``/``items`` in 2020-12); property and
schema dependencies; ``not``; combined schemas matched branch to branch (maximum
matching), sum types extended or narrowed; ``$ref`` followed, recursion cut as compatible
and re-checked to a fixed point. Not kept: Confluent's LENIENT policy.

Pure code: no I/O, no clock.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .base import SchemaError
from .json_model import Node, model
from .json_schema import JsonSchema


COMPATIBLE_CHANGES = frozenset("""
ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED TYPE_EXTENDED
MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED MIN_LENGTH_REMOVED PATTERN_REMOVED
MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED MINIMUM_REMOVED EXCLUSIVE_MAXIMUM_INCREASED
EXCLUSIVE_MAXIMUM_REMOVED EXCLUSIVE_MINIMUM_DECREASED EXCLUSIVE_MINIMUM_REMOVED
MULTIPLE_OF_REDUCED MULTIPLE_OF_REMOVED REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED
REQUIRED_ATTRIBUTE_REMOVED DEPENDENCY_ARRAY_NARROWED DEPENDENCY_ARRAY_REMOVED
DEPENDENCY_SCHEMA_REMOVED MAX_PROPERTIES_INCREASED MAX_PROPERTIES_REMOVED
MIN_PROPERTIES_DECREASED MIN_PROPERTIES_REMOVED ADDITIONAL_PROPERTIES_ADDED
ADDITIONAL_PROPERTIES_EXTENDED UNEVALUATED_PROPERTIES_ADDED UNEVALUATED_PROPERTIES_EXTENDED
PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL
OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL MAX_ITEMS_INCREASED
MAX_ITEMS_REMOVED MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED MAX_CONTAINS_INCREASED
MAX_CONTAINS_REMOVED MIN_CONTAINS_DECREASED MIN_CONTAINS_REMOVED UNIQUE_ITEMS_REMOVED
ADDITIONAL_ITEMS_ADDED ADDITIONAL_ITEMS_EXTENDED UNEVALUATED_ITEMS_ADDED
UNEVALUATED_ITEMS_EXTENDED ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
ITEM_ADDED_TO_CLOSED_CONTENT_MODEL ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL
ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL ENUM_ARRAY_EXTENDED
COMBINED_TYPE_EXTENDED PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED NOT_TYPE_NARROWED
""".split())


class Difference:
    """One change between the writer's schema (``original``) and the reader's
    (``update``): Confluent's change type and the JSON path where it is."""

    __slots__ = ("kind", "path")

    def __init__(self, kind: str, path: str) -> None:
        self.kind, self.path = kind, path

    @property
    def compatible(self) -> bool:
        return self.kind in COMPATIBLE_CHANGES

    def message(self, reader: str = "reader", writer: str = "writer") -> str:
        reason = _describe(self.kind, self.path).replace("{r}", reader).replace("{w}", writer)
        # Confluent's own quoting, double then single, kept as clients see it
        return f'{{errorType:"{self.kind}", description:"{reason}\'}}'

    def __repr__(self) -> str:
        return f"{self.kind} {self.path}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Difference) and (self.kind, self.path) == (other.kind, other.path)

    def __hash__(self) -> int:
        return hash((self.kind, self.path))


def _describe(kind: str, path: str) -> str:
    p = f"'{path}'"
    if kind.endswith("_ADDED") and kind.split("_ADDED")[0] in _KEYWORDS or kind in _REMOVED_IS_KEYWORD:
        return f"The keyword at path {p} in the {{r}} schema is not present in the {{w}} schema"
    if kind in _INCREASED:
        return f"The value at path {p} in the {{r}} schema is more than its value in the {{w}} schema"
    if kind in _DECREASED:
        return f"The value at path {p} in the {{r}} schema is less than its value in the {{w}} schema"
    if kind in ("PATTERN_CHANGED", "MULTIPLE_OF_CHANGED", "DEPENDENCY_ARRAY_CHANGED"):
        return f"The value at path {p} is different between the {{r}} and {{w}} schema"
    if kind in _NARROWED:
        return (f"An array or combined type at path {p} has fewer elements in the {{r}} schema "
                "than the {w} schema")
    if kind in _EXTENDED:
        return (f"An array or combined type at path {p} has more elements in the {{r}} schema "
                "than the {w} schema")
    if kind in _TYPE_CHANGED:
        return f"A type at path {p} is different between the {{r}} schema and the {{w}} schema"
    if kind in _ADDED_TO_OPEN:
        return (f"The {{r}} schema has an open content model and has a property or item at path "
                f"{p} which is missing in the {{w}} schema")
    if kind == "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL":
        return (f"The {{r}} schema has an unopen content model and has a required property at "
                f"path {p} which is missing in the {{w}} schema")
    if kind in ("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"):
        return (f"The {{r}} has a closed content model and is missing a property or item present "
                f"at path {p} in the {{w}} schema")
    if kind.endswith("_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"):
        return (f"A property or item is missing in the {{r}} schema but present at path {p} in "
                "the {w} schema and is not covered by its partially open content model")
    if kind.endswith("_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"):
        return (f"The {{r}} schema has a property or item at path {p} which is missing in the "
                "{w} schema and is not covered by its partially open content model")
    return ""


_KEYWORDS = {
    "MAXIMUM", "MINIMUM", "EXCLUSIVE_MAXIMUM", "EXCLUSIVE_MINIMUM", "MULTIPLE_OF", "MAX_LENGTH",
    "MIN_LENGTH", "PATTERN", "REQUIRED_ATTRIBUTE", "MAX_PROPERTIES", "MIN_PROPERTIES",
    "DEPENDENCY_ARRAY", "DEPENDENCY_SCHEMA", "MAX_ITEMS", "MIN_ITEMS", "MAX_CONTAINS",
    "MIN_CONTAINS", "UNIQUE_ITEMS",
}
_REMOVED_IS_KEYWORD = {
    "ADDITIONAL_ITEMS_REMOVED", "ADDITIONAL_PROPERTIES_REMOVED", "UNEVALUATED_PROPERTIES_REMOVED",
    "UNEVALUATED_ITEMS_REMOVED",
}
_INCREASED = {
    "MIN_LENGTH_INCREASED", "MINIMUM_INCREASED", "EXCLUSIVE_MINIMUM_INCREASED",
    "MIN_PROPERTIES_INCREASED", "MULTIPLE_OF_EXPANDED", "MIN_ITEMS_INCREASED",
    "MIN_CONTAINS_INCREASED",
}
_DECREASED = {
    "MAX_LENGTH_DECREASED", "MAXIMUM_DECREASED", "MAX_ITEMS_DECREASED", "MAX_CONTAINS_DECREASED",
    "EXCLUSIVE_MAXIMUM_DECREASED", "MAX_PROPERTIES_DECREASED",
}
_NARROWED = {
    "ADDITIONAL_ITEMS_NARROWED", "ENUM_ARRAY_NARROWED", "SUM_TYPE_NARROWED",
    "ADDITIONAL_PROPERTIES_NARROWED", "UNEVALUATED_PROPERTIES_NARROWED",
    "UNEVALUATED_ITEMS_NARROWED",
}
_EXTENDED = {"DEPENDENCY_ARRAY_EXTENDED", "PRODUCT_TYPE_EXTENDED", "SUM_TYPE_EXTENDED", "NOT_TYPE_EXTENDED"}
_TYPE_CHANGED = {
    "TYPE_CHANGED", "TYPE_NARROWED", "COMBINED_TYPE_CHANGED", "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
    "ENUM_ARRAY_CHANGED",
}
_ADDED_TO_OPEN = {
    "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
}


class _Ctx:
    """Where the walk is (a path of segments) and what it found; sub-contexts share the
    memo of compared pairs and the set of pairs in progress (cycles)."""

    def __init__(self, shared: "_Shared", path: list[str] | None = None) -> None:
        self.shared = shared
        self.path = list(path or [])
        self.diffs: list[Difference] = []

    def sub(self) -> "_Ctx":
        return _Ctx(self.shared, self.path)

    def add(self, kind: str, attribute: str | None = None) -> None:
        path = self.path + ([attribute] if attribute is not None else [])
        self.diffs.append(Difference(kind, "#/" + "/".join(path)))

    @property
    def compatible(self) -> bool:
        return all(d.compatible for d in self.diffs)

    def enter(self, segment: str) -> "_Scope":
        return _Scope(self, segment)


class _Scope:
    def __init__(self, ctx: _Ctx, segment: str) -> None:
        self.ctx, self.segment = ctx, segment

    def __enter__(self) -> None:
        self.ctx.path.append(self.segment)

    def __exit__(self, *exc: Any) -> None:
        self.ctx.path.pop()


class _Shared:
    def __init__(self, seed: dict[tuple[int, int], list[Difference]]) -> None:
        self.memo: dict[tuple[int, int], list[Difference]] = {}
        self.in_progress: set[tuple[int, int]] = set()
        self.seed = seed
        self.optimistic = False
        self.keep: list[Node] = []  # nodes of memo keys stay alive (ids stay unique)


def compare(original: Node, update: Node) -> list[Difference]:
    """Every change from the writer's schema to the reader's. A pair met again while
    being compared counts as compatible; when that assumption was used, the walk is
    repeated with the pairs found incompatible fed back, until nothing changes."""
    seed: dict[tuple[int, int], list[Difference]] = {}
    while True:
        shared = _Shared(seed)
        ctx = _Ctx(shared)
        _compare(ctx, original, update)
        bad = {k: v for k, v in shared.memo.items() if not all(d.compatible for d in v)}
        if not shared.optimistic or bad.keys() == seed.keys():
            return ctx.diffs
        seed = bad


def _deref(node: Node) -> Node:
    seen = 0
    while node.kind == "ref":
        node = node.loader.referred(node)
        seen += 1
        if seen > 64:
            raise SchemaError("Invalid schema: $ref cycle without a schema")
    return node


def _compare(ctx: _Ctx, original: Node | None, update: Node | None) -> None:
    if original is None and update is None:
        return
    if original is None:
        ctx.add("SCHEMA_ADDED")
        return
    if update is None:
        ctx.add("SCHEMA_REMOVED")
        return
    original, update = _deref(original), _deref(update)
    key = (id(original), id(update))
    shared = ctx.shared
    found = shared.memo.get(key)
    if found is None:
        if key in shared.in_progress:
            if key in shared.seed:
                found = shared.seed[key]
            else:
                shared.optimistic = True
                found = []
        else:
            shared.in_progress.add(key)
            shared.keep += [original, update]
            try:
                sub = _Ctx(shared)
                _compare_types(sub, original, update)
                found = list(sub.diffs)
                shared.memo[key] = found
            finally:
                shared.in_progress.discard(key)
    prefix = "#/" + "/".join(ctx.path)
    for d in found:
        rel = d.path
        path = prefix if len(rel) <= 2 else (prefix.rstrip("/") + "/" + rel[2:] if ctx.path else rel)
        ctx.diffs.append(Difference(d.kind, path))


def _compare_types(ctx: _Ctx, original: Node, update: Node) -> None:
    if original.kind != "combined" and update.kind == "combined":
        subs = update.subschemas
        if len(subs) == 1:
            sub = ctx.sub()
            _compare(sub, original, subs[0])
            if sub.compatible:
                ctx.diffs += sub.diffs
                return
        elif update.criterion in ("anyOf", "oneOf"):
            for branch in subs:
                sub = ctx.sub()
                _compare(sub, original, branch)
                if sub.compatible:
                    ctx.diffs += sub.diffs
                    ctx.add("SUM_TYPE_EXTENDED")
                    return
    elif original.kind == "combined" and update.kind != "combined":
        subs = original.subschemas
        if len(subs) == 1:
            sub = ctx.sub()
            _compare(sub, subs[0], update)
            if sub.compatible:
                ctx.diffs += sub.diffs
                return
        elif original.criterion == "allOf":
            for branch in subs:
                sub = ctx.sub()
                _compare(sub, branch, update)
                if sub.compatible:
                    ctx.diffs += sub.diffs
                    ctx.add("PRODUCT_TYPE_NARROWED")
                    return
    if original.kind != update.kind:
        if original.kind == "false" or update.kind == "empty":
            return
        if original.get("connect_type") == "bytes" == update.get("connect_type"):
            return
        ctx.add("TYPE_CHANGED")
        return
    for attr, kind in (("id", "ID_CHANGED"), ("title", "TITLE_CHANGED"),
                       ("description", "DESCRIPTION_CHANGED"), ("default", "DEFAULT_CHANGED")):
        if original.get(attr) != update.get(attr):
            ctx.add(kind)
    compare_kind = _BY_KIND.get(original.kind)
    if compare_kind is not None:
        compare_kind(ctx, original, update)


def _bound(ctx: _Ctx, keyword: str, prefix: str, old: Any, new: Any) -> None:
    """ADDED / REMOVED / INCREASED / DECREASED of one numeric keyword."""
    if old == new or (old is not None and new is not None and float(old) == float(new)):
        return
    if old is None:
        ctx.add(f"{prefix}_ADDED", keyword)
    elif new is None:
        ctx.add(f"{prefix}_REMOVED", keyword)
    elif float(old) < float(new):
        ctx.add(f"{prefix}_INCREASED", keyword)
    else:
        ctx.add(f"{prefix}_DECREASED", keyword)


def _string(ctx: _Ctx, original: Node, update: Node) -> None:
    _bound(ctx, "maxLength", "MAX_LENGTH", original.max_length, update.max_length)
    _bound(ctx, "minLength", "MIN_LENGTH", original.min_length, update.min_length)
    if original.pattern is None and update.pattern is not None:
        ctx.add("PATTERN_ADDED", "pattern")
    elif original.pattern is not None and update.pattern is None:
        ctx.add("PATTERN_REMOVED", "pattern")
    elif original.pattern != update.pattern:
        ctx.add("PATTERN_CHANGED", "pattern")


def _number(ctx: _Ctx, original: Node, update: Node) -> None:
    from decimal import Decimal

    _bound(ctx, "maximum", "MAXIMUM", original.maximum, update.maximum)
    _bound(ctx, "minimum", "MINIMUM", original.minimum, update.minimum)
    _bound(ctx, "exclusiveMaximum", "EXCLUSIVE_MAXIMUM", original.exclusive_maximum,
           update.exclusive_maximum)
    _bound(ctx, "exclusiveMinimum", "EXCLUSIVE_MINIMUM", original.exclusive_minimum,
           update.exclusive_minimum)
    old = Decimal(str(original.multiple_of)) if original.multiple_of is not None else None
    new = Decimal(str(update.multiple_of)) if update.multiple_of is not None else None
    if old != new:
        if old is None:
            ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
        elif new is None:
            ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
        elif old != 0 and new % old == 0:
            ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
        elif new != 0 and old % new == 0:
            ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
        else:
            ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")
    if original.requires_integer != update.requires_integer:
        ctx.add("TYPE_EXTENDED" if original.requires_integer else "TYPE_NARROWED")


def _enum(ctx: _Ctx, original: Node, update: Node) -> None:
    old, new = original.values, update.values
    if _same_values(old, new):
        return
    if all(_contains(new, v) for v in old):
        ctx.add("ENUM_ARRAY_EXTENDED", "enum")
    elif all(_contains(old, v) for v in new):
        ctx.add("ENUM_ARRAY_NARROWED", "enum")
    else:
        ctx.add("ENUM_ARRAY_CHANGED", "enum")


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _contains(values: list, value: Any) -> bool:
    return _key(value) in {_key(v) for v in values}


def _same_values(a: list, b: list) -> bool:
    return {_key(v) for v in a} == {_key(v) for v in b}


def _const(ctx: _Ctx, original: Node, update: Node) -> None:
    if _key(original.value) != _key(update.value):
        ctx.add("ENUM_ARRAY_CHANGED", "const")


def _not(ctx: _Ctx, original: Node, update: Node) -> None:
    with ctx.enter("not"):
        sub = ctx.sub()
        _compare(sub, update.must_not_match, original.must_not_match)  # reversed
        ctx.add("NOT_TYPE_NARROWED" if sub.compatible else "NOT_TYPE_EXTENDED")


def _is_open(node: Node) -> bool:
    if not node.permits_additional or node.additional_schema is not None:
        return False
    if node.pattern_properties:
        return False
    return node.unevaluated is None or _deref(node.unevaluated).kind == "empty"


def _partial(node: Node, name: str) -> Node | None:
    for pattern, schema in node.pattern_properties:
        if pattern.search(name):
            return schema
    if node.additional_schema is not None:
        return node.additional_schema
    if node.permits_additional and node.unevaluated is not None:
        kind = _deref(node.unevaluated).kind
        if kind not in ("false", "empty"):
            return node.unevaluated
    return None


def _object(ctx: _Ctx, original: Node, update: Node) -> None:
    with ctx.enter("required"):
        for name in original.properties:
            if name in update.properties:
                was, now = name in original.required, name in update.required
                if was and not now:
                    ctx.add("REQUIRED_ATTRIBUTE_REMOVED", name)
                elif now and not was:
                    ctx.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                            if _deref(update.properties[name]).has_default
                            or update.properties[name].has_default
                            else "REQUIRED_ATTRIBUTE_ADDED", name)
    with ctx.enter("properties"):
        for name in _union_keys(original.properties, update.properties):
            with ctx.enter(name):
                _property(ctx, original, update, name)
    with ctx.enter("dependencies"):
        for name in _union_keys(original.property_deps, update.property_deps):
            old, new = original.property_deps.get(name), update.property_deps.get(name)
            if new is None:
                ctx.add("DEPENDENCY_ARRAY_REMOVED", name)
            elif old is None:
                ctx.add("DEPENDENCY_ARRAY_ADDED", name)
            elif old != new:
                ctx.add("DEPENDENCY_ARRAY_EXTENDED" if new >= old else
                        "DEPENDENCY_ARRAY_NARROWED" if old >= new else
                        "DEPENDENCY_ARRAY_CHANGED", name)
        for name in _union_keys(original.schema_deps, update.schema_deps):
            old, new = original.schema_deps.get(name), update.schema_deps.get(name)
            if new is None:
                ctx.add("DEPENDENCY_SCHEMA_REMOVED", name)
            elif old is None:
                ctx.add("DEPENDENCY_SCHEMA_ADDED", name)
            else:
                with ctx.enter(name):
                    _compare(ctx, old, new)
    with ctx.enter("additionalProperties"):
        if original.permits_additional != update.permits_additional:
            ctx.add("ADDITIONAL_PROPERTIES_ADDED" if update.permits_additional
                    else "ADDITIONAL_PROPERTIES_REMOVED")
        elif original.additional_schema is None and update.additional_schema is not None:
            ctx.add("ADDITIONAL_PROPERTIES_NARROWED")
        elif update.additional_schema is None and original.additional_schema is not None:
            ctx.add("ADDITIONAL_PROPERTIES_EXTENDED")
        else:
            _compare(ctx, original.additional_schema, update.additional_schema)
    _unevaluated(ctx, "unevaluatedProperties", "UNEVALUATED_PROPERTIES", original.unevaluated,
                 update.unevaluated)
    _bound(ctx, "maxProperties", "MAX_PROPERTIES", original.max_properties, update.max_properties)
    _bound(ctx, "minProperties", "MIN_PROPERTIES", original.min_properties, update.min_properties)


def _union_keys(a: dict, b: dict) -> list[str]:
    return list(a) + [k for k in b if k not in a]


def _property(ctx: _Ctx, original: Node, update: Node, name: str) -> None:
    old, new = original.properties.get(name), update.properties.get(name)
    if new is None:
        # only the reader's content model decides whether a property may disappear
        if _is_open(update):
            ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
            return
        partial = _partial(update, name)
        if partial is not None:
            sub = ctx.sub()
            _compare(sub, old, partial)
            ctx.diffs += sub.diffs
            ctx.add("PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub.compatible
                    else "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
        elif _deref(old).kind == "false":
            ctx.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        else:
            ctx.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        return
    if old is None:
        # only the writer's content model decides whether a property may appear
        required = name in update.required
        with_default = new.has_default or _deref(new).has_default
        if _is_open(original):
            if _deref(new).kind == "empty":
                ctx.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
            elif required:
                ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL" if with_default
                        else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
            else:
                ctx.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
            return
        partial = _partial(original, name)
        if partial is not None:
            sub = ctx.sub()
            _compare(sub, partial, new)
            ctx.diffs += sub.diffs
            ctx.add("PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub.compatible
                    else "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
        if required:
            ctx.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL" if with_default
                    else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        else:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
        return
    _compare(ctx, old, new)


def _unevaluated(ctx: _Ctx, keyword: str, prefix: str, old: Node | None, new: Node | None) -> None:
    if old is None and new is None:
        return
    okind = _deref(old).kind if old is not None else None
    nkind = _deref(new).kind if new is not None else None
    with ctx.enter(keyword):
        if old is None:
            ctx.add(f"{prefix}_REMOVED" if nkind == "false" else f"{prefix}_NARROWED")
        elif new is None:
            ctx.add(f"{prefix}_ADDED" if okind == "false" else f"{prefix}_EXTENDED")
        elif okind == "false" and nkind != "false":
            ctx.add(f"{prefix}_ADDED")
        elif okind != "false" and nkind == "false":
            ctx.add(f"{prefix}_REMOVED")
        elif okind == "empty" and nkind != "empty":
            ctx.add(f"{prefix}_NARROWED")
        elif okind != "empty" and nkind == "empty":
            ctx.add(f"{prefix}_EXTENDED")
        else:
            _compare(ctx, old, new)


def _array_open(node: Node) -> bool:
    if not node.permits_additional_items or node.additional_items_schema is not None:
        return False
    return node.unevaluated_items is None or _deref(node.unevaluated_items).kind == "empty"


def _array_partial(node: Node) -> Node | None:
    if node.additional_items_schema is not None:
        return node.additional_items_schema
    if node.permits_additional_items and node.unevaluated_items is not None:
        if _deref(node.unevaluated_items).kind not in ("false", "empty"):
            return node.unevaluated_items
    return None


def _array(ctx: _Ctx, original: Node, update: Node) -> None:
    with ctx.enter("items"):
        _compare(ctx, original.all_items, update.all_items)
    old_items, new_items = original.item_schemas or [], update.item_schemas or []
    common = min(len(old_items), len(new_items))
    for i in range(common):
        with ctx.enter(f"items/{i}"):
            _compare(ctx, old_items[i], new_items[i])
    for i in range(common, len(old_items)):
        with ctx.enter(f"items/{i}"):
            if _array_open(update):
                ctx.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
                continue
            partial = _array_partial(update)
            if partial is not None:
                sub = ctx.sub()
                _compare(sub, old_items[i], partial)
                ctx.diffs += sub.diffs
                ctx.add("ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub.compatible
                        else "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
            elif _deref(old_items[i]).kind == "false":
                ctx.add("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
            else:
                ctx.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    for i in range(common, len(new_items)):
        with ctx.enter(f"items/{i}"):
            if _array_open(original):
                ctx.add("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                        if _deref(new_items[i]).kind == "empty" else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL")
                continue
            partial = _array_partial(original)
            if partial is not None:
                sub = ctx.sub()
                _compare(sub, partial, new_items[i])
                ctx.diffs += sub.diffs
                ctx.add("ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub.compatible
                        else "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
            else:
                ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
    with ctx.enter("additionalItems"):
        if original.permits_additional_items != update.permits_additional_items:
            ctx.add("ADDITIONAL_ITEMS_REMOVED" if original.permits_additional_items
                    else "ADDITIONAL_ITEMS_ADDED")
        elif original.additional_items_schema is None and update.additional_items_schema is not None:
            ctx.add("ADDITIONAL_ITEMS_NARROWED")
        elif update.additional_items_schema is None and original.additional_items_schema is not None:
            ctx.add("ADDITIONAL_ITEMS_EXTENDED")
        else:
            _compare(ctx, original.additional_items_schema, update.additional_items_schema)
    _unevaluated(ctx, "unevaluatedItems", "UNEVALUATED_ITEMS", original.unevaluated_items,
                 update.unevaluated_items)
    _bound(ctx, "maxItems", "MAX_ITEMS", original.max_items, update.max_items)
    _bound(ctx, "minItems", "MIN_ITEMS", original.min_items, update.min_items)
    if original.unique_items != update.unique_items:
        ctx.add("UNIQUE_ITEMS_REMOVED" if original.unique_items else "UNIQUE_ITEMS_ADDED",
                "uniqueItems")
    _bound(ctx, "maxContains", "MAX_CONTAINS", original.max_contains, update.max_contains)
    _bound(ctx, "minContains", "MIN_CONTAINS", original.min_contains, update.min_contains)


def _combined(ctx: _Ctx, original: Node, update: Node) -> None:
    oc, uc = original.criterion, update.criterion
    if oc != uc:
        single_o, single_u = len(original.subschemas) == 1, len(update.subschemas) == 1
        if (uc == "anyOf" or (single_o and single_u) or (single_o and uc == "oneOf")
                or (single_u and oc == "allOf")):
            ctx.add("COMBINED_TYPE_EXTENDED")
        else:
            ctx.add("COMBINED_TYPE_CHANGED")
            return
    olds = _distinct(original.subschemas)
    news = _distinct(update.subschemas)
    if len(olds) < len(news):
        ctx.add("PRODUCT_TYPE_EXTENDED" if uc == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(olds) > len(news):
        ctx.add("SUM_TYPE_NARROWED" if oc in ("anyOf", "oneOf") else "PRODUCT_TYPE_NARROWED")
    edges: dict[tuple[int, int], list[Difference]] = {}
    for i, old in enumerate(olds):
        with ctx.enter(f"{oc}/{i}"):
            for j, new in enumerate(news):
                sub = ctx.sub()
                _compare(sub, old, new)
                if sub.compatible:
                    edges[(i, j)] = sub.diffs
    matching = _max_matching(len(olds), len(news), edges)
    for i, j in sorted(matching):
        ctx.diffs += edges[(i, j)]
    if len(matching) < min(len(olds), len(news)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _distinct(nodes: list[Node]) -> list[Node]:
    seen: set[str] = set()
    out = []
    for n in nodes:
        k = _key(n.raw) if not isinstance(n.raw, (dict, list)) or n.kind != "combined" else str(id(n))
        if k not in seen:
            seen.add(k)
            out.append(n)
    return out


def _max_matching(left: int, right: int, edges: dict[tuple[int, int], Any]) -> list[tuple[int, int]]:
    """A maximum bipartite matching (augmenting paths)."""
    adjacent: dict[int, list[int]] = {}
    for i, j in edges:
        adjacent.setdefault(i, []).append(j)
    match_right: dict[int, int] = {}

    def augment(i: int, visited: set[int]) -> bool:
        for j in adjacent.get(i, []):
            if j in visited:
                continue
            visited.add(j)
            if j not in match_right or augment(match_right[j], visited):
                match_right[j] = i
                return True
        return False

    for i in range(left):
        augment(i, set())
    return [(i, j) for j, i in match_right.items()]


_BY_KIND: dict[str, Callable[[_Ctx, Node, Node], None]] = {
    "string": _string, "number": _number, "enum": _enum, "const": _const, "not": _not,
    "object": _object, "array": _array, "combined": _combined,
}


def differences(reader: JsonSchema, writer: JsonSchema) -> list[Difference]:
    """Every change from the writer's schema to the reader's (compatible ones included)."""
    return compare(model(writer), model(reader))


def can_read(
    reader: JsonSchema, writer: JsonSchema, reader_label: str = "reader",
    writer_label: str = "writer",
) -> list[str]:
    """Confluent's message for each incompatible change from ``writer`` to ``reader``."""
    return [
        d.message(reader_label, writer_label)
        for d in differences(reader, writer) if not d.compatible
    ]
