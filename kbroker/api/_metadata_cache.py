"""The topic entries of Metadata answers, built and encoded once per topic (issue 32).

A full Metadata answer lists every partition; building a ``partition_view`` and a message
object per partition and encoding them cost ~50 µs of Python per partition, paid again by
every client's every refresh (a consumer of 100,000 partitions asks every
``metadata.max.age.ms``). What a topic's entry says depends only on the topic's image, the
registered brokers (leader and offline replicas, ``kbroker.metadata.client_view``), the
listener and the request version, so the entry is built once for each (listener, version)
and kept with its encoding (``kbroker.wire.codegen.Encoded``: the codec copies the bytes
into the answer instead of encoding the entry again).

Invalidation (nothing is ever served from an older image):

* a topic's entries are dropped when its ``TopicImage`` object is not the one they were
  built from (the image builder makes a new one for every change to the topic, and shares
  the object otherwise, ``kbroker/metadata/image.py``);
* every entry is dropped when the image's registered brokers differ from those the entries
  were built with (fencing, endpoints, log dirs: any of them may change a partition's view);
* entries of topics no longer in the image are dropped once they outnumber the live ones.

Entries that depend on the caller (authorized operations, KIP-430) are never cached. A
cached entry is shared by every answer: nobody may change it (the handler builds a copy
where it must change something).
"""
from __future__ import annotations

import weakref

from kbroker.wire.codegen import Encoded, encode_struct


class TopicEntryCache:
    """Per node: topic name -> (topic image, {(listener, version): Encoded})."""

    def __init__(self):
        self._brokers = None
        self._entries: dict[str, tuple[object, dict]] = {}
        self.stats = {"hits": 0, "builds": 0, "resets": 0}

    def entry(self, image, topic, listener: str, version: int, build, response_cls):
        """The topic's entry for ``listener`` at ``version``: cached, or ``build()`` now
        (a message of ``response_cls``'s topic struct) and encoded once."""
        brokers = image.brokers
        if brokers is not self._brokers:
            if self._brokers is None or brokers != self._brokers:
                if self._entries:
                    self.stats["resets"] += 1
                self._entries = {}
            self._brokers = brokers
        held = self._entries.get(topic.name)
        if held is None or held[0] is not topic:
            if len(self._entries) > 2 * len(image.topics) + 16:
                self._entries = {n: e for n, e in self._entries.items() if n in image.topics}
            held = self._entries[topic.name] = (topic, {})
        key = (listener, version)
        found = held[1].get(key)
        if found is not None:
            self.stats["hits"] += 1
            return found
        self.stats["builds"] += 1
        message = build()
        found = held[1][key] = Encoded(message, encode_struct(response_cls, message, version),
                                       version)
        return found

    def statistics(self) -> dict:
        return {"topics": len(self._entries), **self.stats}


_CACHES: "weakref.WeakKeyDictionary[object, TopicEntryCache]" = weakref.WeakKeyDictionary()


def cache_of(broker) -> TopicEntryCache:
    """The node's cache (one per broker object; it goes with the broker). A broker object
    that takes no weak reference (a test's plain namespace) gets a fresh, unshared one."""
    try:
        cache = _CACHES.get(broker)
        if cache is None:
            cache = _CACHES[broker] = TopicEntryCache()
    except TypeError:
        return TopicEntryCache()
    return cache
