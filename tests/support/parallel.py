"""Run one call per item in threads and wait for all of them (nodes of a cluster that must
start together); the first error any of them raised is raised again here."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable


def in_threads(fn: Callable[[object], object], items: Iterable[object]) -> None:
    errors: list[BaseException] = []

    def one(item):
        try:
            fn(item)
        except BaseException as exc:  # noqa: BLE001 - raised again below, in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(item,)) for item in items]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
