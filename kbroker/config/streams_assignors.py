"""The task assignors of streams groups a broker may name in ``group.streams.assignors``
(KIP-1357, Kafka 4.4's ``GroupCoordinatorConfig.streamsGroupAssignors``).

Kafka's setting is a list of built-in assignor names or class names of custom
``TaskAssignor`` implementations; the first is the default of every group that does not
pick one with the GROUP config ``streams.assignor.name``. Kafka 4.4 has one built-in
assignor, ``sticky`` (``StickyTaskAssignor``); its jar also ships ``MockAssignor`` (name
``mock``), which a broker may list by class name. kbroker runs no Java code, so a class name is
accepted only when it is one of those two Kafka classes; any other is refused at start-up as
Kafka refuses a class it cannot find. The rules of the list are Kafka's: not
empty, no entry twice, no assignor name twice.

Pure: strings in, names out, ``ValueError`` with Kafka's message on a bad list.
"""
from __future__ import annotations

BUILT_IN = ("sticky",)
_PKG = "org.apache.kafka.coordinator.group.streams.assignor."
KAFKA_CLASSES = {_PKG + "StickyTaskAssignor": "sticky", _PKG + "MockAssignor": "mock"}
KEY = "group.streams.assignors"


def assignor_names(value) -> tuple[str, ...]:
    """The assignor names of a ``group.streams.assignors`` value (a list or a comma
    separated string), in order; ``ValueError`` when Kafka would refuse it."""
    items = [p.strip() for p in value.split(",")] if isinstance(value, str) else \
        [str(p).strip() for p in (value or ())]
    items = [p for p in items if p]
    if not items:
        raise ValueError(f"Configuration '{KEY}' must not be empty.")
    if len(set(items)) != len(items):
        raise ValueError(f"Configuration '{KEY}' values must not be duplicated.")
    names: list[str] = []
    for item in items:
        name = item if item in BUILT_IN else KAFKA_CLASSES.get(item)
        if name is None:
            raise ValueError(f"Invalid value {item} for configuration {KEY}: Class cannot be "
                             f"found (kbroker knows the built-in {', '.join(BUILT_IN)} and the classes "
                             f"{', '.join(sorted(KAFKA_CLASSES))})")
        if name in names:
            raise ValueError(f"Invalid value {item} for configuration {KEY}: Assignor name "
                             f"'{name}' is already registered by another configured assignor. "
                             "Assignor names, whether built-in or custom, must be unique")
        names.append(name)
    return tuple(names)


def check(value) -> str | None:
    """A ConfigDef check: the message of a bad value, else None."""
    try:
        assignor_names(value)
    except ValueError as e:
        return str(e)
    return None
