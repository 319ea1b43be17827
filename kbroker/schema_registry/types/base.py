"""What every schema type shares: the parse error and the parsed-schema base class.

Pure code: no I/O, no clock. Kept apart from the package's ``__init__`` so that the
per-type modules (``avro``, ``json_schema``, ``protobuf``) can import it without a cycle.
"""

from __future__ import annotations


class SchemaError(Exception):
    """A schema that cannot be registered: malformed text, an invalid construct, or a
    reference that was not supplied. ``str()`` is the reason, worded for the API's
    42201 (invalid schema) answer."""


class ParsedSchema:
    """One parsed schema of one type.

    ``schema_type`` is ``"AVRO"``, ``"JSON"`` or ``"PROTOBUF"``; ``text`` is the text as
    given; ``references`` maps a referenced name to that schema's text (as given to
    ``parse``). ``canonical()`` is the form the registry compares to find an already
    registered schema; ``normalized()`` the form used when a request asks for
    ``normalize=true`` (two schemas that differ only in ways that do not change their
    meaning normalise to the same text). Subclasses fill both in.
    """

    schema_type: str = ""

    def __init__(self, text: str, references: dict[str, str] | None = None) -> None:
        self.text = text
        self.references = dict(references or {})

    def canonical(self) -> str:
        raise NotImplementedError

    def normalized(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.canonical()[:60]!r}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParsedSchema):
            return NotImplemented
        return (self.schema_type, self.canonical()) == (other.schema_type, other.canonical())

    def __hash__(self) -> int:
        return hash((self.schema_type, self.canonical()))
