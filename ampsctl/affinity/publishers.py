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

from ampsctl.affinity.patterns import Finder, TimedOut, finder

# Verdicts remembered per regex pattern, and finders remembered, before a cache restarts:
# the broker runs for days and topics and coverages come and go.
_VERDICT_LIMIT: Final = 1 << 18
_PATTERN_LIMIT: Final = 4096


class Publisher:
    """An eligible connection: its load and topics, and its coverage (None covers all)."""

    __slots__ = ("connection", "client", "activation", "load", "topics", "coverage", "finders", "loads")

    def __init__(self, connection: str, client: str, activation: int) -> None:
        self.connection = connection
        self.client = client
        self.activation = activation
        self.load = 0  # len(topics), kept as a field: every choice reads it
        self.topics: dict[str, object] = {}  # topic name -> the engine's topic state
        self.coverage: dict[str, regex.Pattern[str] | None] = {}  # counting control sub_id -> PCRE
        self.finders: tuple[Finder | None, ...] = ()  # one per distinct coverage; None finds all
        self.loads: LoadIndex | None = None  # the index it is in while it is eligible


class LoadIndex:
    """The least-loaded of some publishers, ties to the earliest activation: all of them
    without coverage, the publishers with the same coverage with it.

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
        """A publisher joins, with its current load."""
        load, levels = publisher.load, self._levels
        self._by_key[-publisher.activation] = publisher
        while len(levels) <= load:
            levels.append([])
        insort(levels[load], -publisher.activation)
        self._low = min(self._low, load)
        publisher.loads = self

    def remove(self, publisher: Publisher) -> None:
        """A publisher leaves, with its current load."""
        del self._by_key[-publisher.activation]
        _take(self._levels[publisher.load], -publisher.activation)
        publisher.loads = None

    def __len__(self) -> int:
        return len(self._by_key)

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
    """The least-loaded publisher covering a topic.

    Publishers with the same coverage form a group with its own LoadIndex: a choice asks each
    group's least loaded and searches the topic only for a group whose candidate could win.
    Publishers sharing a coverage PCRE share its finder, and a finder that needs the regex
    engine remembers its verdict per topic.
    """

    __slots__ = ("_finders", "_groups", "_timed_out")

    def __init__(self, timed_out: TimedOut | None = None) -> None:
        self._timed_out = timed_out
        self._finders: dict[str, Finder] = {}  # pattern text -> finder
        self._groups: dict[tuple[Finder | None, ...], LoadIndex] = {}  # by the members' finders

    def finder(self, pattern: regex.Pattern[str]) -> Finder:
        found = self._finders.get(pattern.pattern)
        if found is None:
            if len(self._finders) >= _PATTERN_LIMIT:
                self._finders.clear()
            found = self._finders[pattern.pattern] = finder(pattern, remember=_VERDICT_LIMIT, timed_out=self._timed_out)
        return found

    def place(self, publisher: Publisher) -> None:
        """Put ``publisher`` in its coverage's group; call after ``publisher.coverage`` changed."""
        patterns = tuple(publisher.coverage.values())
        finders = (None,) if None in patterns else tuple(dict.fromkeys(self.finder(p) for p in patterns))  # type: ignore[arg-type]
        if publisher.loads is not None:
            if finders == publisher.finders:
                return
            self.leave(publisher)
        publisher.finders = finders
        group = self._groups.get(finders)
        if group is None:
            group = self._groups[finders] = LoadIndex()
        group.add(publisher)

    def leave(self, publisher: Publisher) -> None:
        """``publisher`` is no longer eligible (or changes group)."""
        group = publisher.loads
        assert group is not None
        group.remove(publisher)
        if not group:
            del self._groups[publisher.finders]

    def least_loaded(self, topic: str) -> Publisher | None:
        best: Publisher | None = None
        for finders, group in self._groups.items():
            candidate = group.least_loaded()
            assert candidate is not None  # empty groups are dropped
            if best is not None and (candidate.load, candidate.activation) >= (best.load, best.activation):
                continue  # it cannot win: spare the search
            for find in finders:
                if find is None or find(topic):
                    best = candidate
                    break
        return best
