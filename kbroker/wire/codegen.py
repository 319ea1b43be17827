"""Compile the schema model into Python classes and per-version codecs.

One class per message (and per nested struct, namespaced under its message); objects are
version-less. The first time a message is decoded at a version, Python source for that
exact version's reader is generated and compiled, then cached; the first encode does the
same for its writer (each direction alone: a broker decodes requests and encodes
responses, so it never compiles half of each). No field-by-field interpretation happens at
run time. Runs of fixed-width fields are read and written with
a single ``struct`` call.

Rules kept here (from Kafka's generated Java code):
- a field the version cannot carry is skipped on decode (it keeps its default) and, on
  encode, raises ``UnsupportedVersion`` if it holds a non-default value — unless the schema
  marks it ``ignorable``;
- in flexible versions every struct ends with tagged fields; unknown tags are kept in
  ``_unknown_tags`` so a decode/encode round trip preserves them;
- ``records`` fields decode as ``memoryview`` slices of the input (no copy) and encode
  from any bytes-like object or from a file region (an object with ``length``), which
  ``encode_parts`` leaves in place for ``os.sendfile``.

- a tagged struct is written when it is null or differs from a fresh instance; other
  tagged fields when they differ from their default.
- constructors: ``Cls(**fields)``, and ``Cls.make(**fields)``, the same as a plain function
  call (cheaper: no keyword dict, no frame for ``__init__``), generated per class from one
  text. A field left out costs nothing when its default is immutable: numbers, strings,
  and the one shared instance of a struct of scalars (``shares_default``; decoders use it
  for absent fields too, so nobody may change such a default in place: give the field a
  new instance). Only arrays and other structs get a new default object per message.
- an element of an array of structs may be an :class:`Encoded`: the element's bytes as this
  codec wrote them at one version (``encode_struct``), copied as they are at that version
  and encoded from the wrapped message at any other. A broker answer that repeats the same
  large entries (Metadata's topics) encodes each once, not on every request.

Malformed input raises ``MalformedFrame`` and nothing else: readers get a memoryview cut at
the message's end (and each known tagged value one cut at its declared size), so a read
past the end fails inside ``struct``/indexing and ``decode_from`` maps that; every count
and length is checked against the bytes left before anything is allocated (so a frame of
n bytes never builds more than O(n) objects). On top of that, Kafka 4.4's decoder limits:
an array of more than ``MAX_ARRAY_ELEMENTS`` (1,000,000) elements and a tagged-field section of
more than ``MAX_TAGGED_FIELDS`` (10,000) fields are refused from their count alone, before
anything is allocated, whatever the frame's size. Speed: empty tag sections (one zero byte)
take a fast path, compact counts are read inline, and arrays of numbers use precompiled
``struct.Struct`` objects.
"""
from __future__ import annotations

import struct
import uuid

from .errors import MalformedFrame, UnsupportedVersion, WireError
from .model import MessageSpec, StructSpec, FieldSpec, ZERO_UUID

FIXED = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
         "int64": "q", "float64": "d", "bool": "?"}
FIXED_SIZE = {"b": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "d": 8, "?": 1}

_MISSING = object()
_pack_h = struct.Struct(">h").pack
_pack_i = struct.Struct(">i").pack
_unpack_h = struct.Struct(">h").unpack_from
_unpack_i = struct.Struct(">i").unpack_from
_unpack_b = struct.Struct(">b").unpack_from


# --------------------------------------------------------------------------- runtime helpers
# Readers take (buf, pos, end) where buf is a memoryview, and return (value, new_pos).

def r_uvarint(buf, pos):
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    while True:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + 1
        shift += 7
        if shift > 28:
            raise MalformedFrame("unsigned varint longer than 5 bytes")


def w_uvarint(out, n):
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _bad_length(n, pos, end):
    raise MalformedFrame(f"length {n} at {pos} exceeds the {end - pos} bytes left")


def r_str(buf, pos, end, nullable, compact):
    if compact:
        n, pos = r_uvarint(buf, pos)
        n -= 1
    else:
        n = _unpack_h(buf, pos)[0]
        pos += 2
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        raise MalformedFrame("null or negative length for a non-nullable string")
    if n > end - pos:
        _bad_length(n, pos, end)
    try:
        return str(buf[pos:pos + n], "utf-8"), pos + n
    except UnicodeDecodeError as e:
        raise MalformedFrame(f"string is not UTF-8: {e}") from None


def r_bytes(buf, pos, end, nullable, compact, view=False):
    if compact:
        n, pos = r_uvarint(buf, pos)
        n -= 1
    else:
        n = _unpack_i(buf, pos)[0]
        pos += 4
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        _bad_bytes_length()
    if n > end - pos:
        _bad_length(n, pos, end)
    v = buf[pos:pos + n]
    return (v if view else bytes(v)), pos + n


def _bad_bytes_length():
    raise MalformedFrame("null or negative length for non-nullable bytes")


# Kafka 4.4's decoder limits (its generated readers refuse these counts before allocating)
MAX_ARRAY_ELEMENTS = 1_000_000
MAX_TAGGED_FIELDS = 10_000


def _bad_count(n):
    raise MalformedFrame(f"negative count {n} for an array")


def _too_many(n):
    raise MalformedFrame(f"array of {n} elements exceeds the limit of {MAX_ARRAY_ELEMENTS}")


def check_tag_count(ntags):
    if ntags > MAX_TAGGED_FIELDS:
        raise MalformedFrame(f"{ntags} tagged fields exceed the limit of {MAX_TAGGED_FIELDS}")


def r_tags(o, buf, pos, end, known):
    """Read a non-empty tagged-field section into ``o``; returns (unknown tags or None, pos).
    ``known`` maps tag → reader(o, buf, pos, end) for the fields this version declares."""
    ntags, pos = r_uvarint(buf, pos)
    check_tag_count(ntags)
    unknown = None
    for _ in range(ntags):  # each tag takes at least two bytes: bounded by the input
        tag, pos = r_uvarint(buf, pos)
        size, pos = r_uvarint(buf, pos)
        if size > end - pos:
            raise MalformedFrame(f"tagged field {tag} of {size} bytes overruns its struct")
        tend = pos + size
        reader = known.get(tag) if known else None
        if reader is None:
            if unknown is None:
                unknown = {}
            unknown[tag] = bytes(buf[pos:tend])
        else:
            reader(o, buf[:tend], pos, tend)
        pos = tend
    return unknown, pos


def r_count(buf, pos, end, nullable, compact):
    if compact:
        n, pos = r_uvarint(buf, pos)
        n -= 1
    else:
        n = _unpack_i(buf, pos)[0]
        pos += 4
    if n < 0:
        if n == -1 and nullable:
            return None, pos
        raise MalformedFrame("null or negative count for a non-nullable array")
    if n > MAX_ARRAY_ELEMENTS:
        _too_many(n)
    if n > end - pos:
        _bad_length(n, pos, end)
    return n, pos


_ZERO_UUID_BYTES = bytes(16)


# UUIDs decoded lately, by their bytes: the same few ids come again and again (a topic's
# id in each of its partitions' records, the one directory id of every partition of a node:
# a restart of 100,000 partitions replays some 200,000 of them), and uuid.UUID is immutable,
# so one object serves every record. Bounded: emptied when full.
_UUIDS: dict[bytes, uuid.UUID] = {_ZERO_UUID_BYTES: ZERO_UUID}
UUID_CACHE_SIZE = 4096


def r_uuid(buf, pos, end):
    if pos + 16 > end:
        raise MalformedFrame("truncated uuid")
    b = bytes(buf[pos:pos + 16])
    found = _UUIDS.get(b)
    if found is None:
        if len(_UUIDS) >= UUID_CACHE_SIZE:
            _UUIDS.clear()
            _UUIDS[_ZERO_UUID_BYTES] = ZERO_UUID
        found = _UUIDS[b] = uuid.UUID(bytes=b)
    return found, pos + 16


def r_struct_marker(buf, pos, nullable):
    flag = _unpack_b(buf, pos)[0]
    if flag < 0:
        if nullable:
            return False, pos + 1
        raise MalformedFrame("null marker on a non-nullable struct")
    return True, pos + 1


def w_str(out, v, compact):
    if v is None:
        if compact:
            out.append(0)
        else:
            out += b"\xff\xff"
        return
    b = v.encode("utf-8")
    if compact:
        w_uvarint(out, len(b) + 1)
    else:
        if len(b) > 0x7FFF:
            raise WireError("string longer than 32767 bytes")
        out += _pack_h(len(b))
    out += b


def w_bytes(out, parts, v, compact):
    if v is None:
        if compact:
            out.append(0)
        else:
            out += b"\xff\xff\xff\xff"
        return
    if isinstance(v, (bytes, bytearray, memoryview)):
        n = v.nbytes if isinstance(v, memoryview) else len(v)
        if compact:
            w_uvarint(out, n + 1)
        else:
            out += _pack_i(n)
        out += v
        return
    # a file region, spliced in by encode_parts
    n = v.length
    if compact:
        w_uvarint(out, n + 1)
    else:
        out += _pack_i(n)
    if parts is None:
        out += v.read_bytes()
    else:
        parts.append((len(out), v))


def w_count(out, v, compact):
    if v is None:
        if compact:
            out.append(0)
        else:
            out += b"\xff\xff\xff\xff"
        return
    if compact:
        w_uvarint(out, len(v) + 1)
    else:
        out += _pack_i(len(v))


def w_tags(out, tags, unknown):
    """Write a tagged-field section: ``tags`` is a list of (tag, bytes) in tag order;
    ``unknown`` (tags kept from a decode) are merged in, known fields winning."""
    if unknown:
        merged = dict(unknown)
        if tags:
            merged.update(tags)
        tags = sorted(merged.items())
    if not tags:
        out.append(0)
        return
    w_uvarint(out, len(tags))
    for tag, data in tags:
        w_uvarint(out, tag)
        w_uvarint(out, len(data))
        out += data


def _absent(name, version):
    raise UnsupportedVersion(f"field {name} is set but version {version} cannot carry it")


def _null(name):
    raise WireError(f"field {name} is not nullable at this version")


# Arrays of fixed-width numbers are read and written with one precompiled Struct per
# (type, small length); longer arrays build theirs on demand.
ARR_CACHED = 64
_ARR_CODES = "bhHiIqd"


def _arr_unpack(code, n):
    return struct.Struct(f">{n}{code}").unpack_from


def _arr_pack(code, n):
    return struct.Struct(f">{n}{code}").pack


RUNTIME = {
    "r_uvarint": r_uvarint, "w_uvarint": w_uvarint, "r_str": r_str, "r_bytes": r_bytes,
    "r_count": r_count, "r_uuid": r_uuid, "r_struct_marker": r_struct_marker,
    "w_str": w_str, "w_bytes": w_bytes, "w_count": w_count,
    "w_tags": w_tags, "_absent": _absent, "_null": _null, "MalformedFrame": MalformedFrame,
    "r_tags": r_tags, "_bad_count": _bad_count, "_bad_length": _bad_length,
    "_bad_bytes_length": _bad_bytes_length,
    "_too_many": _too_many, "MAX_ARRAY_ELEMENTS": MAX_ARRAY_ELEMENTS,
    "_unpack_i": _unpack_i, "_pack_i": _pack_i, "_unpack_from": struct.unpack_from,
    "_pack": struct.pack, "_arr_unpack": _arr_unpack, "_arr_pack": _arr_pack,
    "struct": struct, "ZERO_UUID": ZERO_UUID, "_MISSING": _MISSING,
}


def _arr_fill(table: list, make, code: str, n: int):
    """The Struct function for ``n`` elements of ``code``, made on its first use and kept in
    ``table`` (the generated code reads ``table[n] or _arr_fill(...)``: a list's own index,
    as fast as the tuple it was). Making all 896 at import was ~4 M instructions of every
    start."""
    made = table[n] = make(code, n)
    return made


for _c in _ARR_CODES:
    RUNTIME[f"ARR_UNPACK_{_c}"] = [None] * ARR_CACHED
    RUNTIME[f"ARR_PACK_{_c}"] = [None] * ARR_CACHED
RUNTIME["_arr_fill"] = _arr_fill


# --------------------------------------------------------------------------- pre-encoded structs

class Encoded:
    """A struct message with its encoding at ``version`` (``encode_struct``). Reads of its
    fields go to the message, which nobody may change once encoded."""

    __slots__ = ("message", "data", "version")

    def __init__(self, message, data: bytes, version: int):
        self.message, self.data, self.version = message, data, version

    def __getattr__(self, name):
        return getattr(self.message, name)

    def __eq__(self, other):
        other = other.message if isinstance(other, Encoded) else other
        return self.message == other

    __hash__ = None

    def __repr__(self):
        return f"Encoded({self.message!r})"

    def to_dict(self) -> dict:
        return self.message.to_dict()


RUNTIME["Encoded"] = Encoded


def encode_struct(message_cls: type, obj, version: int) -> bytes:
    """``obj`` (a nested struct of ``message_cls``) as that message's codec writes it at
    ``version``, for an :class:`Encoded` array element."""
    ns = message_cls._namespaces.get(version)
    if ns is None:
        writer_for(message_cls, version)
        ns = message_cls._namespaces[version]
    writer = ns.get(f"w_{type(obj).__name__}")
    if writer is None:
        raise UnsupportedVersion(f"{type(obj).__qualname__} is not written at version {version}")
    out = bytearray()
    writer(obj, out, None)
    return bytes(out)


# --------------------------------------------------------------------------- classes

class Message:
    """Base of every generated class. Subclasses set ``_spec`` (a StructSpec) and slots."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _default = None     # the shared default instance of a struct class that has one

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._fields) and \
            (self._unknown_tags or None) == (other._unknown_tags or None)

    def __repr__(self):
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__qualname__}({inner})"

    def to_dict(self) -> dict:
        """Plain-data view (nested structs as dicts), for tests, logs and diffs."""
        def conv(v):
            if isinstance(v, (Message, Encoded)):
                return v.to_dict()
            if isinstance(v, list):
                return [conv(x) for x in v]
            if isinstance(v, memoryview):
                return bytes(v)
            return v
        return {f: conv(getattr(self, f)) for f in self._fields}


def shares_default(s: StructSpec) -> bool:
    """Is one default instance of struct ``s`` shared by every field that defaults to it?
    Yes when its fields are all scalars (numbers, strings, bytes, uuids: no arrays, no nested
    structs), as the tagged leaders, epochs and snapshot ids in every partition of a Produce
    or Fetch answer. Nobody changes a field of such a default in place: a handler that has a
    leader to name assigns a new instance (tests/conftest.py checks that the shared
    instances hold their defaults at the end of a test run: changed_shared_defaults)."""
    return all(not f.is_array and not f.is_struct for f in s.fields)


def _shared_instance(cls: type, s: StructSpec):
    """The shared default instance of struct class ``cls`` (its fields set here from the
    schema's defaults, without compiling the class's ``__init__``)."""
    o = object.__new__(cls)
    for f in s.fields:
        setattr(o, f.attr, f.default)
    o._unknown_tags = None
    return o


def changed_shared_defaults(classes) -> list[str]:
    """The shared default instances, among the struct classes of the message classes
    ``classes``, that no longer hold their defaults: code changed a field of one in place,
    which changes it in every message sharing it (the test suite checks this stays empty)."""
    changed = []
    for top in classes:
        for c in top._classes.values():
            d = c._default
            if d is not None and (d._unknown_tags is not None or any(
                    getattr(d, f.attr) is not f.default for f in c._spec.fields)):
                changed.append(c.__qualname__)
    return changed


def _field_default_expr(f: FieldSpec, ns: dict) -> str:
    """Source for the default value of field ``f`` (names resolved in ``ns``): a literal, a
    shared immutable object (``D_…``), or, for arrays and structs that are not shared, the
    expression making a fresh one."""
    if f.is_array:
        return "None" if f.default is None else "[]"
    if f.is_struct:
        if f.default is None:
            return "None"
        return f"D_{f.struct.name}" if shares_default(f.struct) else f"C_{f.struct.name}()"
    v = f.default
    # an immutable scalar as a literal: the generated text is then the same in every process,
    # as the generated-code cache (kbroker/common/codecache.py) needs to find it again
    if v is None or type(v) in (bool, int, str, bytes) or (type(v) is float and v == v
                                                          and abs(v) != float("inf")):
        return repr(v)
    key = f"D_uuid_{v.hex}" if type(v) is uuid.UUID else f"D_{id(f)}"
    ns[key] = v
    return key


def _fresh_default(f: FieldSpec) -> bool:
    """Does field ``f`` get a new default object at each construction (an empty list, a
    struct whose default is not shared)? Every other default is one immutable value."""
    if f.is_array:
        return f.default is not None
    return f.is_struct and f.default is not None and not shares_default(f.struct)


def _lazy_constructors(cls: type, source: str, ns: dict) -> None:
    """Give ``cls`` an ``__init__`` and a ``make`` that compile the generated ones (both
    from ``source``) on the first construction and put them in their place: a broker builds
    the classes of every API it serves at start-up but constructs few of them soon, and
    compiling is most of a class's cost."""
    compiled: dict = {}

    def real(name: str):
        if not compiled:
            glb = dict(RUNTIME)
            glb.update(ns)            # nested classes and defaults of the whole message
            exec(source, glb, compiled)
            if cls.__dict__.get("__init__") is __init__:
                cls.__init__ = compiled["__init__"]
            if cls.__dict__.get("make") is make:
                cls.make = compiled["make"]
        return compiled[name]

    def __init__(self, *args, **kwargs):
        real("__init__")(self, *args, **kwargs)

    def make(*args, **kwargs):
        return real("make")(*args, **kwargs)

    cls.__init__ = __init__
    cls.make = make


def _keywords_only():
    raise TypeError("a message's make() takes its fields as keywords only")


RUNTIME["_new"] = object.__new__
RUNTIME["_keywords_only"] = _keywords_only


def build_classes(spec: MessageSpec, base=Message) -> type:
    """Create the message class (with nested struct classes as attributes)."""
    ns: dict = {}
    classes: dict[str, type] = {}

    def build(s: StructSpec, qualname: str) -> type:
        attrs = tuple(f.attr for f in s.fields)
        # an immutable default is the parameter's own default, so a field the caller leaves
        # out costs no test: only a list or an unshared struct is made per call
        params, fields = "", []
        for f in s.fields:
            fresh = _fresh_default(f)
            params += f"{f.attr}=" + ("_MISSING" if fresh else _field_default_expr(f, ns)) + ", "
            value = f"{_field_default_expr(f, ns)} if {f.attr} is _MISSING else {f.attr}" \
                if fresh else f.attr
            fields.append(f"{f.attr} = {value}")
        fields.append("_unknown_tags = _unknown_tags")
        lines = [f"def __init__(self, *, {params}_unknown_tags=None):"]
        lines += [f"    self.{a}" for a in fields]
        # ``Cls.make(**fields)`` is ``Cls(**fields)`` as a plain function call: a class call
        # turns the keywords into a dict and runs __init__ in a frame of its own, which
        # costs more than setting the fields (hot paths answer each partition with one).
        # Its fields are keywords too, but filled from positional defaults (cheaper than
        # keyword-only ones); a value given by position lands in ``_positional`` and is refused.
        lines += ["", f"def make(_positional=_MISSING, {params}_unknown_tags=None):",
                  "    if _positional is not _MISSING: _keywords_only()",
                  f"    o = _new(C_{s.name})"]
        lines += [f"    o.{a}" for a in fields]
        lines.append("    return o")
        cls = type(s.name, (base,), {"__slots__": attrs + ("_unknown_tags",), "_fields": attrs,
                                     "_spec": s, "__qualname__": qualname})
        classes[s.name] = cls
        ns[f"C_{s.name}"] = cls
        if s is not spec.struct and shares_default(s):
            ns[f"D_{s.name}"] = cls._default = _shared_instance(cls, s)
        # nested first so defaults can reference them
        for f in s.fields:
            if f.is_struct and f.struct.name not in classes:
                setattr(cls, f.struct.name, build(f.struct, f"{qualname}.{f.struct.name}"))
            elif f.is_struct:
                setattr(cls, f.struct.name, classes[f.struct.name])
        _lazy_constructors(cls, "\n".join(lines), ns)
        return cls

    top = build(spec.struct, spec.name)
    for name, c in classes.items():  # every nested struct is also reachable from the message
        if c is not top:
            setattr(top, name, c)
    top._message = spec
    top._classes = classes
    top._decoders = {}
    top._encoders = {}
    top._namespaces = {}
    return top


# --------------------------------------------------------------------------- code generation

class _Gen:
    """Generates the read and write functions of one message at one version."""

    def __init__(self, spec: MessageSpec, cls: type, version: int):
        self.spec = spec
        self.version = version
        self.flexible = version in spec.flexible
        self.ns: dict = dict(RUNTIME)
        for name, c in cls._classes.items():
            self.ns[f"C_{name}"] = c
            if c._default is not None:
                self.ns[f"D_{name}"] = c._default
        self.lines: list[str] = []
        self.done: set[str] = set()
        self.counter = 0

    def var(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def const(self, value) -> str:
        key = f"K{self.counter}_{len(self.ns)}"
        self.ns[key] = value
        return key

    def compact(self, f: FieldSpec) -> bool:
        if not self.flexible:
            return False
        return f.flexible is None or self.version in f.flexible

    # ---- reading
    #
    # Generated readers work on a memoryview that ends exactly at ``end`` (decode_from and
    # the tagged-field reader slice it), so a fixed-width read past the end fails inside
    # ``struct``/indexing and is reported as MalformedFrame by the caller; every length
    # or count is checked against the bytes left before anything is allocated.

    def read_count(self, target: str, n: str, nullable: bool, ind: str) -> list[str]:
        """Lines reading an array count into ``n``; a null array sets ``target`` to None.
        Leaves an open ``else:`` block (at ``ind``) for reading the elements."""
        if self.flexible:
            out = [f"{ind}{n} = buf[pos]",
                   f"{ind}if {n} < 0x80: pos += 1",
                   f"{ind}else: {n}, pos = r_uvarint(buf, pos)",
                   f"{ind}{n} -= 1"]
        else:
            out = [f"{ind}{n}, = _unpack_i(buf, pos); pos += 4"]
        out += [f"{ind}if {n} < 0:"]
        if nullable:
            out += [f"{ind}    if {n} != -1: _bad_count({n})",
                    f"{ind}    {target} = None"]
        else:
            out += [f"{ind}    _bad_count({n})"]
        out += [f"{ind}elif {n} > MAX_ARRAY_ELEMENTS: _too_many({n})",
                f"{ind}elif {n} > end - pos: _bad_length({n}, pos, end)",
                f"{ind}else:"]
        return out

    def read_value(self, f: FieldSpec, elem: str, target: str, ind: str, nullable: bool) -> list[str]:
        """Lines reading one value of type ``elem`` into ``target``, advancing ``pos``."""
        c = self.compact(f)
        if elem in FIXED:
            fmt = ">" + FIXED[elem]
            return [f"{ind}{target}, = {self.const(struct.Struct(fmt).unpack_from)}(buf, pos); pos += {FIXED_SIZE[FIXED[elem]]}"]
        if elem == "string":
            return [f"{ind}{target}, pos = r_str(buf, pos, end, {nullable}, {c})"]
        if elem in ("bytes", "records"):
            return self.read_bytes(target, nullable, c, elem == "records", ind)
        if elem == "uuid":
            return [f"{ind}{target}, pos = r_uuid(buf, pos, end)"]
        # struct
        self.gen_struct(f.struct)
        return [f"{ind}{target}, pos = r_{f.struct.name}(buf, pos, end)"]

    def read_bytes(self, target: str, nullable: bool, compact: bool, view: bool,
                   ind: str) -> list[str]:
        """Lines reading a bytes or records value (``r_bytes`` inline: one a partition in
        every Produce request and Fetch answer; a compact length of one or two bytes, up
        to 16 KiB, without a call)."""
        n = self.var("n")
        if compact:
            out = [f"{ind}{n} = buf[pos]",
                   f"{ind}if {n} < 0x80: pos += 1",
                   f"{ind}elif buf[pos + 1] < 0x80: {n} = ({n} & 0x7F) | (buf[pos + 1] << 7); pos += 2",
                   f"{ind}else: {n}, pos = r_uvarint(buf, pos)",
                   f"{ind}{n} -= 1"]
        else:
            out = [f"{ind}{n}, = _unpack_i(buf, pos); pos += 4"]
        value = f"buf[pos:pos + {n}]" if view else f"bytes(buf[pos:pos + {n}])"
        out += [f"{ind}if {n} < 0:",
                f"{ind}    if {n} != -1: _bad_bytes_length()",
                f"{ind}    {target} = None" if nullable else f"{ind}    _bad_bytes_length()",
                f"{ind}elif {n} > end - pos: _bad_length({n}, pos, end)",
                f"{ind}else:",
                f"{ind}    {target} = {value}; pos += {n}"]
        return out

    def read_field(self, f: FieldSpec, target: str, ind: str) -> list[str]:
        nullable = self.version in f.nullable
        if f.is_array:
            n, lst, e = self.var("n"), self.var("lst"), self.var("e")
            out = self.read_count(target, n, nullable, ind)
            el = f.element
            inner = ind + "    "
            if el in FIXED and el != "bool":
                code = FIXED[el]
                size = FIXED_SIZE[code]
                out += [f"{inner}if {size} * {n} > end - pos: _bad_length({size} * {n}, pos, end)",
                        f"{inner}{target} = list(((ARR_UNPACK_{code}[{n}] or _arr_fill(ARR_UNPACK_{code}, _arr_unpack, '{code}', {n})) if {n} < {ARR_CACHED} else _arr_unpack('{code}', {n}))(buf, pos)); pos += {size} * {n}"]
                return out
            out += [f"{inner}{lst} = []", f"{inner}for _ in range({n}):"]
            out += self.read_value(f, el, e, inner + "    ", False)
            out += [f"{inner}    {lst}.append({e})", f"{inner}{target} = {lst}"]
            return out
        if f.is_struct:
            if not nullable:
                return self.read_value(f, f.element, target, ind, False)
            # a nullable struct is preceded by an int8 marker: negative means null
            out = [f"{ind}if buf[pos] >= 0x80:", f"{ind}    pos += 1; {target} = None", f"{ind}else:",
                   f"{ind}    pos += 1"]
            out += self.read_value(f, f.element, target, ind + "    ", False)
            return out
        return self.read_value(f, f.type, target, ind, nullable)

    def gen_struct(self, s: StructSpec):
        if s.name in self.done:
            return
        self.done.add(s.name)
        v = self.version
        present = [f for f in s.fields if v in f.versions and v not in f.tagged]
        tagged = [f for f in s.fields if v in f.versions and v in f.tagged] if self.flexible else []
        absent = [f for f in s.fields if f not in present and f not in tagged]
        fn = [f"def r_{s.name}(buf, pos, end):", f"    o = C_{s.name}.__new__(C_{s.name})"]
        ns_defaults: dict = {}
        for f in absent + tagged:
            fn.append(f"    o.{f.attr} = {_field_default_expr(f, ns_defaults)}")
        self.ns.update(ns_defaults)
        # coalesce runs of fixed-width fields
        i = 0
        while i < len(present):
            f = present[i]
            if f.type in FIXED:
                run = [f]
                while i + len(run) < len(present) and present[i + len(run)].type in FIXED:
                    run.append(present[i + len(run)])
                fmt = ">" + "".join(FIXED[x.type] for x in run)
                size = struct.calcsize(fmt)
                targets = ", ".join(f"o.{x.attr}" for x in run)
                fn.append(f"    {targets}, = {self.const(struct.Struct(fmt).unpack_from)}(buf, pos); pos += {size}")
                i += len(run)
                continue
            fn += self.read_field(f, f"o.{f.attr}", "    ")
            i += 1
        if self.flexible:
            known = "None"
            if tagged:
                # one small reader per known tag; r_tags calls it on a view cut at the
                # tagged value's end, so it cannot read into the next field
                table = {}
                for f in sorted(tagged, key=lambda x: x.tag):
                    tname = f"t_{s.name}_{f.tag}"
                    body = [f"def {tname}(o, buf, pos, end):"]
                    body += self.read_field(f, f"o.{f.attr}", "    ")
                    body.append("    return pos")
                    self.lines += body
                    table[f.tag] = tname
                known = f"TAGS_{s.name}"
                self.lines.append(f"{known} = {{{', '.join(f'{t}: {n}' for t, n in table.items())}}}")
            # fast path: almost every struct carries an empty tag section (a single 0)
            fn += ["    if buf[pos] == 0:",
                   "        pos += 1; o._unknown_tags = None",
                   "    else:",
                   f"        o._unknown_tags, pos = r_tags(o, buf, pos, end, {known})"]
        else:
            fn.append("    o._unknown_tags = None")
        fn.append("    return o, pos")
        self.lines += fn

    # ---- writing
    def write_value(self, f: FieldSpec, elem: str, expr: str, ind: str, out: str, parts: str,
                    nullable: bool = False) -> list[str]:
        c = self.compact(f)
        if elem in FIXED:
            return [f"{ind}{out} += {self.const(struct.Struct('>' + FIXED[elem]).pack)}({expr})"]
        if elem == "string":
            if nullable:
                # a null string (most error messages) without a call
                null = f"{out}.append(0)" if c else f"{out} += b'\\xff\\xff'"
                return [f"{ind}if {expr} is None: {null}", f"{ind}else: w_str({out}, {expr}, {c})"]
            return [f"{ind}w_str({out}, {expr}, {c})"]
        if elem in ("bytes", "records"):
            return [f"{ind}w_bytes({out}, {parts}, {expr}, {c})"]
        if elem == "uuid":
            return [f"{ind}{out} += {expr}.bytes"]
        self.gen_struct_writer(f.struct)
        return [f"{ind}w_{f.struct.name}({expr}, {out}, {parts})"]

    def write_field(self, f: FieldSpec, expr: str, ind: str, out: str, parts: str) -> list[str]:
        nullable = self.version in f.nullable
        lines = []
        if f.is_array:
            v, n, e = self.var("v"), self.var("n"), self.var("e")
            null = ("out.append(0)" if self.flexible else "out += b'\\xff\\xff\\xff\\xff'").replace("out", out)
            lines += [f"{ind}{v} = {expr}",
                      f"{ind}if {v} is None:",
                      f"{ind}    {null if nullable else f'_null({f.name!r})'}",
                      f"{ind}else:",
                      f"{ind}    {n} = len({v})"]
            inner = ind + "    "
            if self.flexible:
                lines += [f"{inner}if {n} < 0x7f: {out}.append({n} + 1)",
                          f"{inner}else: w_uvarint({out}, {n} + 1)"]
            else:
                lines += [f"{inner}{out} += _pack_i({n})"]
            el = f.element
            if el in FIXED and el != "bool":
                code = FIXED[el]
                lines.append(f"{inner}{out} += ((ARR_PACK_{code}[{n}] or _arr_fill(ARR_PACK_{code}, _arr_pack, '{code}', {n})) if {n} < {ARR_CACHED} else _arr_pack('{code}', {n}))(*{v})")
                return lines
            lines.append(f"{inner}for {e} in {v}:")
            if f.struct is not None:
                lines += [f"{inner}    if {e}.__class__ is Encoded:",
                          f"{inner}        if {e}.version == {self.version}:",
                          f"{inner}            {out} += {e}.data",
                          f"{inner}            continue",
                          f"{inner}        {e} = {e}.message"]
            lines += self.write_value(f, el, e, inner + "    ", out, parts)
            return lines
        if f.is_struct:
            if nullable:
                lines += [f"{ind}if {expr} is None:", f"{ind}    {out}.append(0xff)", f"{ind}else:",
                          f"{ind}    {out}.append(1)"]
                lines += self.write_value(f, f.element, expr, ind + "    ", out, parts)
                return lines
            lines.append(f"{ind}if {expr} is None: _null({f.name!r})")
            return lines + self.write_value(f, f.element, expr, ind, out, parts)
        if not nullable and f.type in ("string", "bytes", "records", "uuid"):
            lines.append(f"{ind}if {expr} is None: _null({f.name!r})")
        return lines + self.write_value(f, f.type, expr, ind, out, parts, nullable)

    def not_default(self, f: FieldSpec, expr: str) -> str:
        if f.is_array:
            # a null array differs from an empty default: Kafka writes it (as a null)
            return f"({expr} is None or {expr})" if f.default is not None else f"{expr} is not None"
        if f.is_struct:
            if f.default is None:
                return f"{expr} is not None"
            # Kafka writes a tagged struct that is null or differs from a fresh instance (the
            # shared default instance, when the struct has one, is known to be default)
            test = f"({expr} is None or not {self.isdef_expr(f.struct, expr)})"
            return f"({expr} is not D_{f.struct.name} and {test})" \
                if shares_default(f.struct) else test
        return f"{expr} != {self.const(f.default)}"

    def isdef_terms(self, s: StructSpec, v: str) -> list[str]:
        """The tests that struct instance ``v`` holds only default values."""
        terms = []
        for f in s.fields:
            e = f"{v}.{f.attr}"
            if f.is_array:
                terms.append(f"{e} is None" if f.default is None else f"not {e}")
            elif f.is_struct:
                terms.append(f"{e} is None" if f.default is None
                             else f"({e} is not None and {self.gen_isdef(f.struct)}({e}))")
            else:
                terms.append(f"{e} == {self.const(f.default)}")
        terms.append(f"not {v}._unknown_tags")
        return terms

    def isdef_expr(self, s: StructSpec, v: str) -> str:
        """``isdef`` of ``v`` as an expression: inline for a small struct (a tagged one
        checked in every element of an answer, as Produce's ``CurrentLeader``), else a
        call of the generated predicate."""
        if len(s.fields) <= 3:
            return "(" + " and ".join(self.isdef_terms(s, v)) + ")"
        return f"{self.gen_isdef(s)}({v})"

    def gen_isdef(self, s: StructSpec) -> str:
        """A generated predicate: does a struct instance hold only default values?
        (Cheaper than building a fresh instance and comparing with __eq__.)"""
        name = f"isdef_{s.name}"
        if "d:" + s.name in self.done:
            return name
        self.done.add("d:" + s.name)
        self.lines.append(f"def {name}(v): return " + " and ".join(self.isdef_terms(s, "v")))
        return name

    def gen_struct_writer(self, s: StructSpec):
        key = "w:" + s.name
        if key in self.done:
            return
        self.done.add(key)
        v = self.version
        present = [f for f in s.fields if v in f.versions and v not in f.tagged]
        tagged = [f for f in s.fields if v in f.versions and v in f.tagged] if self.flexible else []
        absent = [f for f in s.fields if f not in present and f not in tagged]
        fn = [f"def w_{s.name}(o, out, parts):"]
        for f in absent:
            if not f.ignorable:
                fn.append(f"    if {self.not_default(f, 'o.' + f.attr)}: _absent({f.name!r}, {v})")
        i = 0
        while i < len(present):
            f = present[i]
            if f.type in FIXED:
                run = [f]
                while i + len(run) < len(present) and present[i + len(run)].type in FIXED:
                    run.append(present[i + len(run)])
                fmt = ">" + "".join(FIXED[x.type] for x in run)
                args = ", ".join(f"o.{x.attr}" for x in run)
                fn.append(f"    out += {self.const(struct.Struct(fmt).pack)}({args})")
                i += len(run)
                continue
            fn += self.write_field(f, f"o.{f.attr}", "    ", "out", "parts")
            i += 1
        if self.flexible:
            if tagged:
                fn.append("    tags = None")
                for f in sorted(tagged, key=lambda x: x.tag):
                    fn.append(f"    if {self.not_default(f, 'o.' + f.attr)}:")
                    fn.append("        tb = bytearray()")
                    fn += self.write_field(f, f"o.{f.attr}", "        ", "tb", "None")
                    fn.append("        if tags is None: tags = []")
                    fn.append(f"        tags.append(({f.tag}, tb))")
                fn += ["    if tags is None and not o._unknown_tags: out.append(0)",
                       "    else: w_tags(out, tags, o._unknown_tags)"]
            else:
                fn.append("    if o._unknown_tags: w_tags(out, None, o._unknown_tags)")
                fn.append("    else: out.append(0)")
        fn.append("    return None")  # a struct with nothing to write at this version
        self.lines += fn

    def compile(self, read: bool = True, write: bool = True):
        """Generate and compile the reader (``read``), the writer (``write``) or both;
        returns (reader or None, writer or None, source, namespace)."""
        name = self.spec.name
        if read:
            self.gen_struct(self.spec.struct)
        if write:
            self.gen_struct_writer(self.spec.struct)
        source = "\n".join(self.lines) + "\n"
        code = compile(source, f"<kbroker codec {name} v{self.version}>", "exec")
        exec(code, self.ns)
        return self.ns.get(f"r_{name}"), self.ns.get(f"w_{name}"), source, self.ns


# A message is mostly used one way round at a version (a broker decodes requests and
# encodes responses; clients the reverse), so reader and writer are compiled separately,
# each on its first use: compiling is what a codec costs.

def _check_version(spec: MessageSpec, version: int) -> None:
    if version not in spec.valid:
        raise UnsupportedVersion(f"{spec.name} has no version {version} (valid: {spec.valid})")


def reader_for(cls: type, version: int):
    """The compiled reader of ``cls`` at ``version``, compiled on first use."""
    reader = cls._decoders.get(version)
    if reader is None:
        _check_version(cls._message, version)
        reader = cls._decoders[version] = _Gen(cls._message, cls, version).compile(write=False)[0]
    return reader


def writer_for(cls: type, version: int):
    """The compiled writer of ``cls`` at ``version``, compiled on first use."""
    writer = cls._encoders.get(version)
    if writer is None:
        _check_version(cls._message, version)
        writer, ns = _Gen(cls._message, cls, version).compile(read=False)[1::2]
        cls._namespaces[version] = ns
        cls._encoders[version] = writer
    return writer


def codec_for(cls: type, version: int):
    """The compiled (reader, writer) of ``cls`` at ``version``, compiled on first use."""
    return reader_for(cls, version), writer_for(cls, version)


def generated_source(cls: type, version: int) -> str:
    """The Python source generated for ``cls`` at ``version`` (for debugging and review)."""
    return _Gen(cls._message, cls, version).compile()[2]
