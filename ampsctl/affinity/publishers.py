"""Publishers of the faucet engine, and the two ways it finds the least-loaded one.

* Without CoverageSubsetOption every publisher covers every topic: ``LoadHeap`` answers
  "least loaded, ties to the earliest activation" in O(log n).
* With it, ``CoverageIndex`` scans the publishers in activation order and remembers each
  coverage PCRE's verdict per topic, so a topic is searched once per distinct pattern rather
  than once per publisher and choice.
"""

from __future__ import annotations

import heapq
from typing import Final

import regex

from ampsctl.filter.errors import FilterError
from ampsctl.filter.regexes import search_compiled

# Verdicts remembered per pattern, and patterns remembered, before a cache restarts: the
# broker runs for days and topics and coverages come and go.
_VERDICT_LIMIT: Final = 1 << 18
_PATTERN_LIMIT: Final = 4096


class Publisher:
    """An eligible connection: its load and topics, and its coverage (None covers all)."""

    __slots__ = ("connection", "client", "activation", "load", "topics", "coverage", "live")

    def __init__(self, connection: str, client: str, activation: int) -> None:
        self.connection = connection
        self.client = client
        self.activation = activation
        self.load = 0  # len(topics), kept as a field: the heap and the scan read it on every choice
        self.topics: dict[str, object] = {}  # topic name -> the engine's topic state
        self.coverage: dict[str, regex.Pattern[str] | None] = {}  # counting control sub_id -> PCRE
        self.live = True


def search(pattern: regex.Pattern[str], text: str) -> bool:
    """An unanchored PCRE search; one that runs past its timeout matches nothing."""
    try:
        return search_compiled(pattern, text)
    except FilterError:
        return False


class LoadHeap:
    """The least-loaded live publisher, ties to the earliest activation (no coverage).

    Entries are (load, activation, publisher). Invariant: every live publisher has an entry
    whose load is at most its real load. Only a load that falls pushes; a risen load is fixed
    when its stale entry reaches the top, and dead publishers' entries are dropped there.
    """

    __slots__ = ("_heap", "_publishers")

    def __init__(self, publishers: dict[str, Publisher]) -> None:
        self._heap: list[tuple[int, int, Publisher]] = []
        self._publishers = publishers  # the engine's live publishers, read when rebuilding

    def least_loaded(self) -> Publisher | None:
        heap = self._heap
        while heap:
            load, activation, publisher = heap[0]
            real = publisher.load
            if load == real and publisher.live:
                return publisher
            if load > real or not publisher.live:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (real, activation, publisher))
        return None

    def push(self, publisher: Publisher) -> None:
        """Record a new publisher, or a load that fell."""
        heap = self._heap
        if len(heap) > 4 * len(self._publishers) + 64:  # mostly stale entries: start again
            heap[:] = [(p.load, p.activation, p) for p in self._publishers.values()]
            heapq.heapify(heap)
        else:
            heapq.heappush(heap, (publisher.load, publisher.activation, publisher))


class CoverageIndex:
    """Which publisher covers a topic, with each pattern's verdicts remembered per topic."""

    __slots__ = ("_verdicts",)

    def __init__(self) -> None:
        self._verdicts: dict[str, dict[str, bool]] = {}  # pattern text -> topic -> found

    def finds(self, pattern: regex.Pattern[str], topic: str) -> bool:
        verdicts = self._verdicts.get(pattern.pattern)
        if verdicts is None:
            if len(self._verdicts) >= _PATTERN_LIMIT:
                self._verdicts.clear()
            verdicts = self._verdicts[pattern.pattern] = {}
        found = verdicts.get(topic)
        if found is None:
            if len(verdicts) >= _VERDICT_LIMIT:
                verdicts.clear()
            found = verdicts[topic] = search(pattern, topic)
        return found

    def covers(self, publisher: Publisher, topic: str) -> bool:
        for pattern in publisher.coverage.values():
            if pattern is None or self.finds(pattern, topic):
                return True
        return False

    def least_loaded(self, publishers: dict[str, Publisher], topic: str) -> Publisher | None:
        """The least-loaded publisher covering ``topic``; ``publishers`` is in activation order."""
        best: Publisher | None = None
        for publisher in publishers.values():  # activation order, so ties keep the first
            if (best is None or publisher.load < best.load) and self.covers(publisher, topic):
                best = publisher
                if not best.load:
                    break  # nobody later beats an idle publisher
        return best
