"""The faucet engine as it was before the speed work (commit 7e7eb84), kept as a test oracle.

tests/affinity/test_engine_differential.py runs random scripts through it and through
ampsctl.affinity.engine and requires the same output: the fast engine must not change
semantics. It is simpler (no inline paths, topic state dropped with its interest) and slow.
"""

from __future__ import annotations

import heapq
from typing import Final

import regex

from ampsctl.affinity.model import (
    AffinityAction,
    AffinityEvent,
    AffinitySettings,
    Announcements,
    Cause,
    Disconnect,
    PublisherState,
    Subscribe,
    SubscriptionEvent,
    Unsubscribe,
)
from ampsctl.errors import InputError
from ampsctl.filter.errors import FilterError
from ampsctl.filter.regexes import compile_pattern, has_metachars, shown_pattern, search_compiled

_OTHER: Final = 0  # neither control nor interest: kept only so an unsubscribe finds it
_INTEREST: Final = 1
_CONTROL: Final = 2  # a control subscription that counts
_INTEREST_CACHE_LIMIT: Final = 1 << 20  # distinct topics remembered before the cache restarts

ASSIGN, UNASSIGN, NO_HANDLERS = AffinityAction.ASSIGN, AffinityAction.UNASSIGN, AffinityAction.NO_HANDLERS
SUBSCRIBE, UNSUBSCRIBE = Cause.SUBSCRIBE, Cause.UNSUBSCRIBE
PUBLISHER_LOST, PUBLISHER_JOINED = Cause.PUBLISHER_LOST, Cause.PUBLISHER_JOINED

# A live subscription: (kind, topic, coverage PCRE or None, serial). A plain tuple, as there
# may be millions and the hot path builds one per subscribe. The serial, unique per
# subscription, keys the topic's subscriber table: an int hashes faster than a tuple.
_Sub = tuple[int, str, "regex.Pattern[str] | None", int]


class _Connection:
    __slots__ = ("name", "client", "subs")

    def __init__(self, name: str, client: str) -> None:
        self.name = name
        self.client = client
        self.subs: dict[str, _Sub] = {}


class _Topic:
    __slots__ = ("name", "since", "subscribers", "publisher")

    def __init__(self, name: str, since: int) -> None:
        self.name = name
        self.since = since  # orders topics by when their current interest began
        self.subscribers: dict[int, tuple[str, str]] = {}  # subscription serial -> (client, connection)
        self.publisher: _Publisher | None = None


class _Publisher:
    __slots__ = ("connection", "client", "activation", "load", "topics", "coverage", "live")

    def __init__(self, connection: str, client: str, activation: int) -> None:
        self.connection = connection
        self.client = client
        self.activation = activation
        self.load = 0
        self.topics: dict[str, _Topic] = {}
        self.coverage: dict[str, regex.Pattern[str] | None] = {}  # counting control sub_id -> PCRE
        self.live = True

    def covers(self, topic: str) -> bool:
        for pattern in self.coverage.values():
            if pattern is None or _search(pattern, topic):
                return True
        return False


def _search(pattern: regex.Pattern[str], text: str) -> bool:
    try:
        return search_compiled(pattern, text)
    except FilterError:  # a pattern that runs past its timeout matches nothing
        return False


class ReferenceEngine:
    """The assignment state of one action; ``handle`` each event in order."""

    def __init__(self, settings: AffinitySettings) -> None:
        try:
            self._pattern = compile_pattern(settings.subscription_topic)
        except FilterError as exc:
            raise InputError(
                f"SubscriptionTopic {shown_pattern(settings.subscription_topic)} is not a valid PCRE: {exc.message}",
                code="AFFINITY_CONFIG",
                hint="escape literal metacharacters with a backslash, e.g. /symbols/.* or ^orders\\.",
            ) from None
        self.settings = settings
        self.reassignments = 0  # topics moved off a lost publisher
        self.warnings: list[str] = []  # drained by the caller; the engine never prints
        self._all = settings.announcements is Announcements.ALL
        self._control_topic = settings.control_topic
        self._coverage_option = settings.coverage_option
        self._connections: dict[str, _Connection] = {}
        self._publishers: dict[str, _Publisher] = {}  # by connection, in activation order
        self._topics: dict[str, _Topic] = {}  # interested topics
        self._unassigned: dict[str, _Topic] = {}  # interested topics without a publisher
        self._heap: list[tuple[int, int, _Publisher]] = []  # see _choose
        self._activations = 0
        self._interest_seq = 0
        self._serial = 0
        self._is_interest: dict[str, bool] = {}

    # ---- events in

    def handle(self, event: SubscriptionEvent) -> list[AffinityEvent]:
        """The affinity events ``event`` causes, in the order the action runs them."""
        out: list[AffinityEvent] = []
        kind = type(event)
        if kind is Subscribe:
            self._subscribe(event, out)  # type: ignore[arg-type]
        elif kind is Unsubscribe:
            self._unsubscribe(event, out)  # type: ignore[arg-type]
        elif kind is Disconnect:
            self._disconnect(event.connection, out)  # type: ignore[union-attr]
        else:
            raise TypeError(f"not a subscription event: {event!r}")
        return out

    def _subscribe(self, event: Subscribe, out: list[AffinityEvent]) -> None:
        conn = self._connections.get(event.connection)
        if conn is None:
            conn = self._connections[event.connection] = _Connection(event.connection, event.client)
        elif conn.client != event.client:
            raise InputError(
                f"connection {event.connection!r} belongs to client {conn.client!r}, not {event.client!r}",
                code="AFFINITY_EVENT",
                hint="a connection has one client name; give a reconnecting client a new connection id",
            )
        sub_id, topic = event.sub_id, event.topic
        old = conn.subs.pop(sub_id, None)  # reusing a live sub_id replaces that subscription
        if old is not None and (old[0] == _CONTROL) != (topic == self._control_topic):
            self._remove(conn, sub_id, old, out)  # another kind: the old goes first
            old = None
        if topic == self._control_topic:
            self._add_control(conn, event, out)
        else:
            self._serial += 1
            interested = self._topics.get(topic)
            if interested is not None or self._is_interest.get(topic) or (topic not in self._is_interest and self._classify(topic)):
                conn.subs[sub_id] = (_INTEREST, topic, None, self._serial)
                self._add_interest(conn, self._serial, topic, interested, out)
            else:
                conn.subs[sub_id] = (_OTHER, topic, None, self._serial)
        # Same kind: new first, then the replaced one goes, so interest and eligibility never
        # lapse. A control subscription replaced by one that counts keeps the publisher.
        if old is not None and not (old[0] == _CONTROL and conn.subs[sub_id][0] == _CONTROL):
            self._remove(conn, sub_id, old, out)

    def _unsubscribe(self, event: Unsubscribe, out: list[AffinityEvent]) -> None:
        conn = self._connections.get(event.connection)
        sub = conn.subs.pop(event.sub_id, None) if conn is not None else None
        if sub is None:
            self.warnings.append(f"unsubscribe of unknown subscription {event.sub_id!r} on connection {event.connection!r}: ignored")
            return
        if sub[0] == _INTEREST:  # the common case, without the detour through _remove
            self._remove_interest(conn, sub[3], sub[1], out)  # type: ignore[arg-type]
        else:
            self._remove(conn, event.sub_id, sub, out)  # type: ignore[arg-type]

    def _disconnect(self, name: str, out: list[AffinityEvent]) -> None:
        conn = self._connections.pop(name, None)
        if conn is None:
            return  # a connection that never subscribed leaves nothing behind
        for kind, topic, _coverage, serial in conn.subs.values():
            if kind == _INTEREST:
                self._remove_interest(conn, serial, topic, out)
        publisher = self._publishers.get(name)
        if publisher is not None:
            self._lose(publisher, out)
        conn.subs.clear()

    def _remove(self, conn: _Connection, sub_id: str, sub: _Sub, out: list[AffinityEvent]) -> None:
        kind, topic, _coverage, serial = sub
        if kind == _INTEREST:
            self._remove_interest(conn, serial, topic, out)
        elif kind == _CONTROL:
            publisher = self._publishers[conn.name]
            del publisher.coverage[sub_id]
            if not publisher.coverage:
                self._lose(publisher, out)

    # ---- publishers

    def _add_control(self, conn: _Connection, event: Subscribe, out: list[AffinityEvent]) -> None:
        counts, coverage = self._coverage(event)
        self._serial += 1
        conn.subs[event.sub_id] = (_CONTROL if counts else _OTHER, event.topic, coverage, self._serial)
        if not counts:
            return
        publisher = self._publishers.get(conn.name)
        joined = publisher is None
        if publisher is None:
            self._activations += 1
            publisher = self._publishers[conn.name] = _Publisher(conn.name, conn.client, self._activations)
            self._push(publisher)
        publisher.coverage[event.sub_id] = coverage
        if joined or self._coverage_option is not None:  # arrival, or perhaps wider coverage
            self._sweep(publisher, coverage, out)

    def _coverage(self, event: Subscribe) -> tuple[bool, regex.Pattern[str] | None]:
        """Whether a control subscription counts, and the coverage PCRE it brings (None: all)."""
        option = self._coverage_option
        if option is None:
            return True, None
        where = f"control subscription {event.sub_id!r} of connection {event.connection!r}"
        value = event.options.get(option)
        if value is None:
            self.warnings.append(f"{where} has no {option}= option: ignored, as AMPS does")
            return False, None
        try:
            return True, compile_pattern(value)
        except FilterError as exc:
            self.warnings.append(f"{where}: {option}={shown_pattern(value)} is not a valid PCRE ({exc.message}): ignored, as AMPS does")
            return False, None

    def _sweep(self, publisher: _Publisher, coverage: regex.Pattern[str] | None, out: list[AffinityEvent]) -> None:
        """Give ``publisher`` the unassigned interested topics it now covers, oldest interest first.

        By invariant 2 no other eligible publisher covers them, so it is the least loaded.
        """
        if not self._unassigned:
            return
        for topic in sorted(self._unassigned.values(), key=_since):
            if coverage is None or _search(coverage, topic.name):
                del self._unassigned[topic.name]
                self._assign(topic, publisher)
                self._announce(topic, out, ASSIGN, PUBLISHER_JOINED)

    def _lose(self, publisher: _Publisher, out: list[AffinityEvent]) -> None:
        """``publisher`` is no longer eligible: reassign each of its topics, oldest interest first."""
        del self._publishers[publisher.connection]
        publisher.live = False
        topics = sorted(publisher.topics.values(), key=_since)
        publisher.topics.clear()
        for topic in topics:
            topic.publisher = None
            replacement = self._choose(topic.name)
            if replacement is None:
                self._unassigned[topic.name] = topic
            else:
                self._assign(topic, replacement)
                self.reassignments += 1
            action = NO_HANDLERS if replacement is None else ASSIGN
            if self._all:
                for client, connection in topic.subscribers.values():
                    self._emit(out, UNASSIGN, topic.name, publisher, client, connection, PUBLISHER_LOST)
                    self._emit(out, action, topic.name, replacement, client, connection, PUBLISHER_LOST)
            else:
                self._emit(out, action, topic.name, replacement, None, None, PUBLISHER_LOST)

    def _choose(self, topic: str) -> _Publisher | None:
        """The least-loaded eligible publisher covering ``topic``, ties to the earliest activation.

        Without coverage every publisher qualifies, and a heap of (load, activation, publisher)
        answers in O(log n). Its invariant: every live publisher has an entry whose load is at
        most its real load. Only an unassign pushes (a load that falls); a rise is fixed when
        the stale entry reaches the top, and dead publishers' entries are dropped there.
        """
        if self._coverage_option is None:
            heap = self._heap
            while heap:
                load, activation, publisher = heap[0]
                if not publisher.live or load > publisher.load:
                    heapq.heappop(heap)
                elif load < publisher.load:
                    heapq.heapreplace(heap, (publisher.load, activation, publisher))
                else:
                    return publisher
            return None
        best: _Publisher | None = None
        for publisher in self._publishers.values():  # activation order, so ties keep the first
            if (best is None or publisher.load < best.load) and publisher.covers(topic):
                best = publisher
        return best

    def _push(self, publisher: _Publisher) -> None:
        """Record a new or lower load on the heap (only needed without coverage)."""
        if self._coverage_option is not None:
            return
        heap = self._heap
        if len(heap) > 4 * len(self._publishers) + 64:  # drop stale entries now and then
            heap[:] = [(p.load, p.activation, p) for p in self._publishers.values()]
            heapq.heapify(heap)
        else:
            heapq.heappush(heap, (publisher.load, publisher.activation, publisher))

    def _assign(self, topic: _Topic, publisher: _Publisher) -> None:
        topic.publisher = publisher
        publisher.topics[topic.name] = topic
        publisher.load += 1  # the heap entry is now low, which _choose tolerates

    def _unassign(self, topic: _Topic) -> None:
        publisher = topic.publisher
        assert publisher is not None
        del publisher.topics[topic.name]
        publisher.load -= 1
        topic.publisher = None
        self._push(publisher)

    # ---- interest

    def _classify(self, topic: str) -> bool:
        """Whether subscriptions to ``topic`` count as interest (cached per topic)."""
        if len(self._is_interest) >= _INTEREST_CACHE_LIMIT:
            self._is_interest.clear()
        interesting = self._is_interest[topic] = not has_metachars(topic) and _search(self._pattern, topic)
        return interesting

    def _add_interest(self, conn: _Connection, serial: int, name: str, topic: _Topic | None, out: list[AffinityEvent]) -> None:
        """Add an interest subscription to ``name``; ``topic`` is its state, None if it had no interest."""
        if topic is None:
            self._interest_seq += 1
            topic = self._topics[name] = _Topic(name, self._interest_seq)
            topic.subscribers[serial] = (conn.client, conn.name)
            publisher = self._choose(name)
            if publisher is None:
                self._unassigned[name] = topic
            else:
                self._assign(topic, publisher)
            if not self._all:
                self._emit(out, NO_HANDLERS if publisher is None else ASSIGN, name, publisher, None, None, SUBSCRIBE)
                return
        else:
            topic.subscribers[serial] = (conn.client, conn.name)
            if not self._all:
                return
        publisher = topic.publisher
        self._emit(out, NO_HANDLERS if publisher is None else ASSIGN, name, publisher, conn.client, conn.name, SUBSCRIBE)

    def _remove_interest(self, conn: _Connection, serial: int, name: str, out: list[AffinityEvent]) -> None:
        topic = self._topics[name]
        del topic.subscribers[serial]
        publisher = topic.publisher
        if self._all and publisher is not None:
            self._emit(out, UNASSIGN, name, publisher, conn.client, conn.name, UNSUBSCRIBE)
        if topic.subscribers:
            return
        del self._topics[name]
        if publisher is None:
            del self._unassigned[name]
            return
        self._unassign(topic)
        if not self._all:
            self._emit(out, UNASSIGN, name, publisher, None, None, UNSUBSCRIBE)

    # ---- events out

    def _announce(self, topic: _Topic, out: list[AffinityEvent], action: AffinityAction, cause: Cause) -> None:
        """One event, or one per interested subscriber with Announcements=all."""
        if self._all:
            for client, connection in topic.subscribers.values():
                self._emit(out, action, topic.name, topic.publisher, client, connection, cause)
        else:
            self._emit(out, action, topic.name, topic.publisher, None, None, cause)

    def _emit(
        self,
        out: list[AffinityEvent],
        action: AffinityAction,
        topic: str,
        publisher: _Publisher | None,
        subscriber_client: str | None,
        subscriber_connection: str | None,
        cause: Cause,
    ) -> None:
        # tuple.__new__ skips the named tuple's Python-level __new__: a third of the cost.
        if publisher is None or action is NO_HANDLERS:
            fields = (action, topic, None, None, subscriber_client, subscriber_connection, cause)
        else:
            fields = (action, topic, publisher.client, publisher.connection, subscriber_client, subscriber_connection, cause)
        out.append(tuple.__new__(AffinityEvent, fields))

    # ---- state out (summaries and the property tests)

    def assignments(self) -> dict[str, str | None]:
        """Each interested topic's publisher connection (None when unassigned), oldest interest first."""
        return {name: t.publisher.connection if t.publisher else None for name, t in self._topics.items()}

    def publishers(self) -> list[PublisherState]:
        """The eligible publishers in activation order."""
        return [
            PublisherState(p.connection, p.client, p.activation, tuple(p.topics), tuple(c.pattern if c else None for c in p.coverage.values()))
            for p in self._publishers.values()
        ]

    def interest(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """Each interested topic's subscribers as (client, connection), in subscription order."""
        return {name: tuple(t.subscribers.values()) for name, t in self._topics.items()}


def _since(topic: _Topic) -> int:
    return topic.since

