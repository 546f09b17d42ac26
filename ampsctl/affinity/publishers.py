"""Publishers of the faucet engine, and the two ways it finds the least-loaded one.

* Without CoverageSubsetOption every publisher covers every topic: ``LoadIndex`` answers
  "least loaded, ties to the earliest activation" in O(log n).
* With it, ``CoverageIndex`` scans the publishers in activation order. Publishers with the
  same coverage PCRE share one finder (ampsctl.affinity.patterns); one that needs the regex
  engine remembers its verdict per topic, so a topic is searched once per distinct pattern
  rather than once per publisher and choice.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Final

import regex

from ampsctl.affinity.patterns import Finder, finder

# Verdicts remembered per regex pattern, and finders remembered, before a cache restarts:
# the broker runs for days and topics and coverages come and go.
_VERDICT_LIMIT: Final = 1 << 18
_PATTERN_LIMIT: Final = 4096


class Publisher:
    """An eligible connection: its load and topics, and its coverage (None covers all)."""

    __slots__ = ("connection", "client", "activation", "load", "topics", "coverage", "finders")

    def __init__(self, connection: str, client: str, activation: int) -> None:
        self.connection = connection
        self.client = client
        self.activation = activation
        self.load = 0  # len(topics), kept as a field: every choice reads it
        self.topics: dict[str, object] = {}  # topic name -> the engine's topic state
        self.coverage: dict[str, regex.Pattern[str] | None] = {}  # counting control sub_id -> PCRE
        self.finders: tuple[Finder | None, ...] = ()  # one per distinct coverage; None finds all


class LoadIndex:
    """The least-loaded live publisher, ties to the earliest activation (no coverage).

    ``_levels[load]`` lists the negated activations of the publishers with that load, sorted,
    so the earliest is last: taking it is a ``pop``, and a load that moves by one moves one
    number between neighbouring lists (bisect, C speed). ``_low`` is at most the least load.
    Cheaper than a heap of (load, activation, publisher) tuples, which compares tuples.
    """

    __slots__ = ("_levels", "_low", "_by_key")

    def __init__(self) -> None:
        self._levels: list[list[int]] = [[]]
        self._low = 0
        self._by_key: dict[int, Publisher] = {}  # negated activation -> publisher

    def least_loaded(self) -> Publisher | None:
        levels, low = self._levels, self._low
        while low < len(levels):
            if levels[low]:
                self._low = low
                return self._by_key[levels[low][-1]]
            low += 1
        return None

    def add(self, publisher: Publisher) -> None:
        """A new publisher (load 0)."""
        self._by_key[-publisher.activation] = publisher
        insort(self._levels[0], -publisher.activation)
        self._low = 0

    def remove(self, publisher: Publisher) -> None:
        """A lost publisher, with the load it had."""
        del self._by_key[-publisher.activation]
        _take(self._levels[publisher.load], -publisher.activation)

    def rose(self, publisher: Publisher) -> None:
        """``publisher.load`` just went up by one."""
        load, key, levels = publisher.load, -publisher.activation, self._levels
        _take(levels[load - 1], key)
        if load == len(levels):
            levels.append([])
        insort(levels[load], key)

    def fell(self, publisher: Publisher) -> None:
        """``publisher.load`` just went down by one."""
        load, key = publisher.load, -publisher.activation
        _take(self._levels[load + 1], key)
        insort(self._levels[load], key)
        if load < self._low:
            self._low = load


def _take(level: list[int], key: int) -> None:
    if level[-1] == key:  # the one least_loaded just gave
        level.pop()
    else:
        del level[bisect_left(level, key)]


class CoverageIndex:
    """Which publisher covers a topic. Publishers sharing a coverage PCRE share its finder,
    and a finder that needs the regex engine remembers its verdict per topic."""

    __slots__ = ("_finders",)

    def __init__(self) -> None:
        self._finders: dict[str, Finder] = {}  # pattern text -> finder

    def finder(self, pattern: regex.Pattern[str]) -> Finder:
        found = self._finders.get(pattern.pattern)
        if found is None:
            if len(self._finders) >= _PATTERN_LIMIT:
                self._finders.clear()
            found = self._finders[pattern.pattern] = finder(pattern, remember=_VERDICT_LIMIT)
        return found

    def refresh(self, publisher: Publisher) -> None:
        """Call after ``publisher.coverage`` changed."""
        patterns = tuple(publisher.coverage.values())
        publisher.finders = (None,) if None in patterns else tuple(dict.fromkeys(self.finder(p) for p in patterns))  # type: ignore[arg-type]

    @staticmethod
    def covers(publisher: Publisher, topic: str) -> bool:
        for find in publisher.finders:
            if find is None or find(topic):
                return True
        return False

    def least_loaded(self, publishers: dict[str, Publisher], topic: str) -> Publisher | None:
        """The least-loaded publisher covering ``topic``; ``publishers`` is in activation order."""
        covers = self.covers
        best: Publisher | None = None
        for publisher in publishers.values():  # activation order, so ties keep the first
            if (best is None or publisher.load < best.load) and covers(publisher, topic):
                best = publisher
                if not best.load:
                    break  # nobody later beats an idle publisher
        return best
