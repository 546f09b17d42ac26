"""Subscriptions of the broker core and the index that finds them for a published topic.

A ``Subscription`` is what a subscribe / delta_subscribe / sow_and_(delta_)subscribe leaves
behind: its topic (a literal name, or a pattern searched unanchored, §5.4 [REC]), its compiled
content filter, the delivery options, and, with ``oof``, its *focus*: the SOW keys it has
received and not yet been told are gone (§10 [REC]).

Invariants of ``SubscriptionIndex``:
* a subscription is in ``by_conn`` exactly when it is in ``literal`` or ``patterns``;
* ``(conn, sub_id)`` is unique;
* ``matching(topic)`` returns subscriptions in creation order, so the ``sids`` of a delivery
  list the connection's subscriptions in the order they were made;
* the per-topic cache of pattern matches is dropped whenever a pattern subscription comes or
  goes, and is bounded (topics are client-chosen strings);
* the observer hears of a subscription's addition and removal only while it is ``announced``: a
  bookmark subscription that may still be refused (``bookmark_not_found=fail``) is announced
  once its start is found, so a refused one is never heard of; the subscription it replaces
  leaves unheard of too, and comes back (``restore``) when it is refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import regex

from ampsctl.broker.core.select import SelectList
from ampsctl.errors import AmpsctlError
from ampsctl.filter.errors import FilterError
from ampsctl.filter.regexes import compile_pattern, has_metachars, search_compiled
from ampsctl.messages.json_codec import JSON
from ampsctl.protocol.cmdoptions import CommandOptions

if TYPE_CHECKING:
    from ampsctl.broker.core.conflation import Conflator
    from ampsctl.broker.core.replay import ReplayState

Predicate = Callable[[Any], bool]
_PATTERN_CACHE_LIMIT = 10_000


def compile_filter_text(text: str | None) -> Predicate | None:
    """The predicate of a content filter (None: no filter); FilterError when it is not valid."""
    if text is None or not text.strip():
        return None
    from ampsctl.filter.compiler import compile_filter
    from ampsctl.filter.parser import parse

    return compile_filter(parse(text))


@dataclass(slots=True, eq=False)
class Subscription:
    conn: int
    sub_id: str
    topic: str
    filter: str | None
    predicate: Predicate | None
    delta: bool
    options: CommandOptions
    select: SelectList | None
    focus: set[str] | None  # SOW keys in focus; None unless the oof option was given
    order: int  # creation order, for stable sids
    pattern: regex.Pattern[str] | None = None
    replay: ReplayState | None = None  # set while a bookmark subscription replays the journal (replay.py)
    conflation: Conflator | None = None  # the conflation option (conflation.py)
    announced: bool = True  # told to the observer; False while a bookmark_not_found=fail replay looks for its start
    replacing: Subscription | None = None  # while unannounced: the subscription it replaced (SubscriptionIndex.add)

    @classmethod
    def build(cls, *, conn: int, sub_id: str, topic: str, filter: str | None, predicate: Predicate | None,
              delta: bool, options: CommandOptions, order: int) -> Subscription:
        return cls(
            conn=conn,
            sub_id=sub_id,
            topic=topic,
            filter=filter,
            predicate=predicate,
            delta=delta,
            options=options,
            select=SelectList(options.select) if options.select else None,
            focus=set() if options.oof else None,
            order=order,
            pattern=compile_pattern(topic) if has_metachars(topic) else None,
        )

    def topic_matches(self, topic: str) -> bool:
        if self.pattern is None:
            return topic == self.topic
        try:
            return search_compiled(self.pattern, topic)
        except FilterError:
            return False  # a pattern that times out on this name matches nothing

    def accepts(self, doc: Any) -> bool:
        """Whether a message passes the content filter; ``doc`` None = not a parseable message."""
        if self.predicate is None:
            return True
        if doc is None:
            return False
        try:
            return self.predicate(JSON.record(doc))
        except AmpsctlError:
            return False  # e.g. a LIKE that ran past its timeout: not a match, never a crash


class SubscriptionIndex:
    """Every live subscription of the broker, by connection and by topic."""

    def __init__(self) -> None:
        self.by_conn: dict[int, dict[str, Subscription]] = {}
        self.literal: dict[str, dict[tuple[int, str], Subscription]] = {}
        self.patterns: dict[tuple[int, str], Subscription] = {}
        self._pattern_hits: dict[str, tuple[Subscription, ...]] = {}
        self._order = itertools.count(1)
        # Told (added?, subscription) after every add and removal: the config's actions (action_runner.py).
        self.observer: Callable[[bool, Subscription], None] | None = None

    def next_order(self) -> int:
        return next(self._order)

    def __len__(self) -> int:
        return sum(len(subs) for subs in self.by_conn.values())

    def get(self, conn: int, sub_id: str) -> Subscription | None:
        return self.by_conn.get(conn, {}).get(sub_id)

    def of(self, conn: int) -> Iterator[Subscription]:
        return iter(list(self.by_conn.get(conn, {}).values()))

    def add(self, sub: Subscription) -> None:
        """Add ``sub``, replacing a subscription with the same (conn, sub_id) (the replace option).

        An unannounced ``sub`` keeps the one it replaces in ``replacing``, unannounced gone too:
        ``announce`` reports both changes, ``restore`` puts it back as if nothing happened."""
        old = self._detach(sub.conn, sub.sub_id)
        if old is not None:
            if sub.announced:
                self._tell(False, old)
            else:
                sub.replacing = old
        self._attach(sub)
        if sub.announced:
            self._tell(True, sub)

    def announce(self, sub: Subscription) -> None:
        """Tell the observer about ``sub``, added unannounced (``announced`` False) before, and
        about the removal of the subscription it replaced."""
        if not sub.announced:
            sub.announced = True
            old, sub.replacing = sub.replacing, None
            if old is not None:
                self._tell(False, old)
            self._tell(True, sub)

    def restore(self, sub: Subscription) -> None:
        """Take back an unannounced ``sub`` (refused) and put back the one it replaced; the
        observer hears of neither."""
        if not sub.announced and self.get(sub.conn, sub.sub_id) is sub:
            self._detach(sub.conn, sub.sub_id)
            old, sub.replacing = sub.replacing, None
            if old is not None:
                self._attach(old)

    def _tell(self, added: bool, sub: Subscription) -> None:
        if self.observer is not None and sub.announced:
            self.observer(added, sub)

    def _attach(self, sub: Subscription) -> None:
        self.by_conn.setdefault(sub.conn, {})[sub.sub_id] = sub
        key = (sub.conn, sub.sub_id)
        if sub.pattern is None:
            self.literal.setdefault(sub.topic, {})[key] = sub
        else:
            self.patterns[key] = sub
            self._pattern_hits.clear()

    def remove(self, conn: int, sub_id: str) -> Subscription | None:
        sub = self._detach(conn, sub_id)
        if sub is not None:
            old, sub.replacing = sub.replacing, None
            if old is not None:  # unannounced, so its addition was never told: the one it replaced goes
                self._tell(False, old)
            self._tell(False, sub)
        return sub

    def _detach(self, conn: int, sub_id: str) -> Subscription | None:
        subs = self.by_conn.get(conn)
        sub = subs.pop(sub_id, None) if subs is not None else None
        if sub is None:
            return None
        if subs is not None and not subs:
            del self.by_conn[conn]
        key = (conn, sub_id)
        if sub.pattern is None:
            same_topic = self.literal[sub.topic]
            del same_topic[key]
            if not same_topic:
                del self.literal[sub.topic]
        else:
            del self.patterns[key]
            self._pattern_hits.clear()
        return sub

    def remove_conn(self, conn: int) -> list[Subscription]:
        return [sub for sub in list(self.of(conn)) if self.remove(conn, sub.sub_id) is not None]

    def matching(self, topic: str) -> list[Subscription]:
        """The subscriptions whose topic matches ``topic``, in creation order."""
        literal = self.literal.get(topic)
        patterns = self._pattern_matches(topic) if self.patterns else ()
        if not patterns:
            return list(literal.values()) if literal else []
        if not literal:
            return list(patterns)
        return sorted([*literal.values(), *patterns], key=lambda sub: sub.order)

    def _pattern_matches(self, topic: str) -> tuple[Subscription, ...]:
        found = self._pattern_hits.get(topic)
        if found is None:
            if len(self._pattern_hits) >= _PATTERN_CACHE_LIMIT:
                self._pattern_hits.clear()
            found = tuple(sorted((s for s in self.patterns.values() if s.topic_matches(topic)), key=lambda s: s.order))
            self._pattern_hits[topic] = found
        return found
