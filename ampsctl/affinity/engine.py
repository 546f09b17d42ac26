"""Faucet assignment: which publisher serves each topic that subscribers want (seed 000, issue 5).

Theory of operation. The engine sees the subscribe, unsubscribe and disconnect events of one
AMPS instance and returns the events that ``amps-action-on-manifold-affinity`` emits. It is
pure: no I/O, no clock, no randomness. The broker's action and ``ampsctl affinity simulate``
drive this same class.

* A *control* subscription is one whose topic equals ControlTopic. With CoverageSubsetOption
  set, it counts only if its options carry that option with a valid PCRE (else it is ignored
  with a warning). A connection with at least one counting control subscription is an
  eligible *publisher*; it gets the next activation number when it becomes eligible.
* An *interest* subscription has a concrete topic (no regex metacharacters) that
  SubscriptionTopic finds by unanchored search. A topic is interested while it has one.
* A topic gains a publisher when it gains interest, or when a publisher that covers it arrives
  or widens its coverage; it loses it when it loses all interest or the publisher is lost.
* A disconnect removes the connection's interest subscriptions first, in the order they were
  made, and then its control subscriptions (one publisher loss, not one per subscription).

Invariants (tests/affinity/test_properties.py checks them after every event):
1. An interested topic has at most one publisher, which is live and eligible.
2. No eligible publisher covers an interested topic that has no publisher: every arrival or
   widening sweeps the unassigned topics.
3. An assignment changes only when its publisher is lost or the topic loses all interest.
4. A new assignment goes to a least-loaded covering publisher, ties to the earliest activation.
5. The same events always give the same output: dicts keep insertion order, counters order
   activations and interest, nothing else is consulted.

Speed (docs/affinity.md, Performance): ``handle`` runs the common subscribe and unsubscribe
inline; everything else takes the general methods below, which say the same thing once.
"""

from __future__ import annotations

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
from ampsctl.affinity.patterns import finder
from ampsctl.affinity.publishers import CoverageIndex, LoadIndex, Publisher
from ampsctl.errors import InputError
from ampsctl.filter.errors import FilterError
from ampsctl.filter.regexes import DEFAULT_TIMEOUT, compile_pattern, has_metachars, shown_pattern

_TOPIC_LIMIT: Final = 1 << 20  # topic states kept before those without interest are dropped

ASSIGN, UNASSIGN, NO_HANDLERS = AffinityAction.ASSIGN, AffinityAction.UNASSIGN, AffinityAction.NO_HANDLERS
SUBSCRIBE, UNSUBSCRIBE = Cause.SUBSCRIBE, Cause.UNSUBSCRIBE
PUBLISHER_LOST, PUBLISHER_JOINED = Cause.PUBLISHER_LOST, Cause.PUBLISHER_JOINED
_new = tuple.__new__  # builds an AffinityEvent without its Python-level __new__: a third of the cost


class _Mark:
    """What a connection's sub_id maps to when the subscription is not interest."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_IGNORED: Final = _Mark("ignored")  # neither interest nor counting: kept so an unsubscribe finds it
_COUNTED: Final = _Mark("counted")  # a counting control subscription; its PCRE is on the Publisher


class _Topic:
    """A topic that SubscriptionTopic finds. It outlives its interest (``count`` 0) so that
    a topic coming back costs no classification and no allocation."""

    __slots__ = ("name", "count", "since", "publisher", "subscribers")

    def __init__(self, name: str, all_mode: bool) -> None:
        self.name = name
        self.count = 0  # live interest subscriptions
        self.since = 0  # orders topics by when their current interest began
        self.publisher: Publisher | None = None
        # Announcements=all only: its subscriptions in subscription order, ended ones included
        # until the list is compacted (an unsubscribe then only marks its _Sub).
        self.subscribers: list[_Sub] | None = [] if all_mode else None


class _Sub:
    """An interest subscription with Announcements=all; ``topic`` is None once it ended."""

    __slots__ = ("topic", "conn")


class _Connection(dict):  # type: ignore[type-arg]
    """A connection's live subscriptions, sub_id -> entry, in subscription order.

    An entry is _IGNORED, _COUNTED, or the _Topic of an interest subscription. The connection is
    the dict itself: the hot path follows one pointer fewer.
    """

    __slots__ = ("name", "client")

    def __init__(self, name: str, client: str) -> None:
        super().__init__()
        self.name = name
        self.client = client


_Entry = _Mark | _Topic | _Sub


class FaucetEngine:
    """The assignment state of one action; ``handle`` each event in order."""

    def __init__(self, settings: AffinitySettings) -> None:
        self.warnings: list[str] = []  # drained by the caller; the engine never prints
        try:
            self._finds = finder(compile_pattern(settings.subscription_topic), timed_out=self._slow_subscription_topic)
        except FilterError as exc:
            raise InputError(
                f"SubscriptionTopic {shown_pattern(settings.subscription_topic)} is not a valid PCRE: {exc.message}",
                code="AFFINITY_CONFIG",
                hint="escape literal metacharacters with a backslash, e.g. /symbols/.* or ^orders\\.",
            ) from None
        self.settings = settings
        self.reassignments = 0  # topics moved off a lost publisher
        self._all = settings.announcements is Announcements.ALL
        self._control_topic = settings.control_topic
        self._coverage_option = settings.coverage_option
        self._connections: dict[str, _Connection] = {}
        self._publishers: dict[str, Publisher] = {}  # by connection, in activation order
        self._topics: dict[str, _Topic | _Mark] = {}  # every topic classified: its state, or _IGNORED
        self._topic_floor = self._topic_limit = _TOPIC_LIMIT
        self._unassigned: dict[str, _Topic] = {}  # interested topics without a publisher
        self._loads = LoadIndex() if settings.coverage_option is None else None
        self._coverage = CoverageIndex(self._slow_coverage)
        self._activations = 0
        self._interest_seq = 0

    def _slow_subscription_topic(self, pattern: regex.Pattern[str], topic: str) -> None:
        self.warnings.append(f"SubscriptionTopic {shown_pattern(pattern.pattern)} ran past the {DEFAULT_TIMEOUT:g} s regex timeout "
                             f"on topic {topic!r}: counted as no match, so subscriptions to it are not interest")

    def _slow_coverage(self, pattern: regex.Pattern[str], topic: str) -> None:
        self.warnings.append(f"coverage PCRE {shown_pattern(pattern.pattern)} ran past the {DEFAULT_TIMEOUT:g} s regex timeout "
                             f"on topic {topic!r}: counted as not covering it")

    # ---- events in

    def handle(self, event: SubscriptionEvent) -> list[AffinityEvent]:
        """The affinity events ``event`` causes, in the order the action runs them."""
        kind = type(event)
        if kind is Subscribe:
            connection, client, topic, sub_id, _options = event  # type: ignore[misc]
            conn = self._connections.get(connection)
            # Inline: a known connection subscribing a new sub_id to a topic that has interest.
            if conn is not None and conn.client == client and sub_id not in conn and topic != self._control_topic:
                state = self._topics.get(topic)
                if state is None:
                    state = self._classify(topic)
                if state is _IGNORED:
                    conn[sub_id] = _IGNORED
                    return []
                count = state.count  # type: ignore[union-attr]
                if count:
                    state.count = count + 1  # type: ignore[union-attr]
                    if not self._all:
                        conn[sub_id] = state
                        return []
                    conn[sub_id] = sub = _Sub()
                    sub.topic, sub.conn = state, conn
                    state.subscribers.append(sub)  # type: ignore[union-attr]
                    publisher = state.publisher  # type: ignore[union-attr]
                    if publisher is None:
                        return [_new(AffinityEvent, (NO_HANDLERS, topic, None, None, client, connection, SUBSCRIBE))]
                    return [_new(AffinityEvent, (ASSIGN, topic, publisher.client, publisher.connection, client, connection, SUBSCRIBE))]
                out: list[AffinityEvent] = []
                self._add_interest(conn, sub_id, state, out)  # type: ignore[arg-type]
                return out
            out = []
            self._subscribe(event, conn, out)  # type: ignore[arg-type]
            return out
        if kind is Unsubscribe:
            conn = self._connections.get(event.connection)  # type: ignore[union-attr]
            entry = conn.pop(event.sub_id, None) if conn is not None else None  # type: ignore[union-attr]
            # Inline: an interest subscription goes and its topic keeps interest.
            if type(entry) is _Topic:  # default mode
                if entry.count > 1:
                    entry.count -= 1
                    return []
            elif type(entry) is _Sub:  # all mode
                topic_state = entry.topic
                held = topic_state.subscribers
                if topic_state.count > 1 and len(held) < 2 * topic_state.count + 8:
                    topic_state.count -= 1
                    entry.topic = None
                    publisher = topic_state.publisher
                    if publisher is None:
                        return []
                    return [_new(AffinityEvent, (UNASSIGN, topic_state.name, publisher.client, publisher.connection, conn.client, conn.name, UNSUBSCRIBE))]  # type: ignore[union-attr]
            out = []
            if entry is None:
                self.warnings.append(f"unsubscribe of unknown subscription {event.sub_id!r} on connection {event.connection!r}: ignored")  # type: ignore[union-attr]
            else:
                self._remove(conn, event.sub_id, entry, out)  # type: ignore[arg-type, union-attr]
            return out
        if kind is Disconnect:
            out = []
            self._disconnect(event.connection, out)  # type: ignore[union-attr]
            return out
        raise TypeError(f"not a subscription event: {event!r}")

    def _subscribe(self, event: Subscribe, conn: _Connection | None, out: list[AffinityEvent]) -> None:
        """Any subscribe (``conn`` is the connection's state, if any); ``handle`` inlines the common one."""
        if conn is None:
            conn = self._connections[event.connection] = _Connection(event.connection, event.client)
        elif conn.client != event.client:
            raise InputError(
                f"connection {event.connection!r} belongs to client {conn.client!r}, not {event.client!r}",
                code="AFFINITY_EVENT",
                hint="a connection has one client name; give a reconnecting client a new connection id",
            )
        sub_id, topic = event.sub_id, event.topic
        old = conn.pop(sub_id, None)  # reusing a live sub_id replaces that subscription
        if old is not None and (old is _COUNTED) != (topic == self._control_topic):
            self._remove(conn, sub_id, old, out)  # another kind: nothing carries over, the old goes first
            old = None
        if topic == self._control_topic:
            self._add_control(conn, event, out)
        else:
            state = self._topics.get(topic)
            if state is None:
                state = self._classify(topic)
            if state is _IGNORED:
                conn[sub_id] = _IGNORED
            else:
                self._add_interest(conn, sub_id, state, out)  # type: ignore[arg-type]
        # Of the same kind, the replaced subscription goes after the new one came: what both
        # give (a topic's interest, a publisher's eligibility) never lapses, so no assignment
        # moves (seed 000: assignments are sticky). A counted control subscription replacing
        # one already holds its place in the publisher's coverage.
        if old is not None and not (old is _COUNTED and conn[sub_id] is _COUNTED):
            self._remove(conn, sub_id, old, out)

    def _disconnect(self, name: str, out: list[AffinityEvent]) -> None:
        conn = self._connections.pop(name, None)
        if conn is None:
            return  # a connection that never subscribed leaves nothing behind
        for entry in conn.values():
            if type(entry) is not _Mark:
                self._remove_interest(conn, entry, out)  # type: ignore[arg-type]
        publisher = self._publishers.get(name)
        if publisher is not None:
            self._lose(publisher, out)
        conn.clear()

    def _remove(self, conn: _Connection, sub_id: str, entry: _Entry, out: list[AffinityEvent]) -> None:
        """Remove one subscription (already popped from ``conn``)."""
        if entry is _COUNTED:
            publisher = self._publishers[conn.name]
            del publisher.coverage[sub_id]
            if not publisher.coverage:
                self._lose(publisher, out)
            elif self._loads is None:
                self._coverage.place(publisher)  # narrower coverage, perhaps another group
        elif entry is not _IGNORED:
            self._remove_interest(conn, entry, out)  # type: ignore[arg-type]

    # ---- publishers

    def _add_control(self, conn: _Connection, event: Subscribe, out: list[AffinityEvent]) -> None:
        counts, coverage = self._control_coverage(event)
        conn[event.sub_id] = _COUNTED if counts else _IGNORED
        if not counts:
            return
        publisher = self._publishers.get(conn.name)
        joined = publisher is None
        if publisher is None:
            self._activations += 1
            publisher = self._publishers[conn.name] = Publisher(conn.name, conn.client, self._activations)
        publisher.coverage[event.sub_id] = coverage
        if self._loads is None:
            self._coverage.place(publisher)
        elif joined:
            self._loads.add(publisher)
        if joined or self._coverage_option is not None:  # arrival, or perhaps wider coverage
            self._sweep(publisher, coverage, out)

    def _control_coverage(self, event: Subscribe) -> tuple[bool, regex.Pattern[str] | None]:
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

    def _sweep(self, publisher: Publisher, coverage: regex.Pattern[str] | None, out: list[AffinityEvent]) -> None:
        """Give ``publisher`` the unassigned interested topics it now covers, oldest interest first.

        By invariant 2 no other eligible publisher covers them, so it is the least loaded.
        """
        if not self._unassigned:
            return
        finds = None if coverage is None else self._coverage.finder(coverage)
        for topic in sorted(self._unassigned.values(), key=_since):
            if finds is None or finds(topic.name):
                del self._unassigned[topic.name]
                self._assign(topic, publisher)
                self._announce(topic, out, ASSIGN, PUBLISHER_JOINED)

    def _lose(self, publisher: Publisher, out: list[AffinityEvent]) -> None:
        """``publisher`` is no longer eligible: reassign each of its topics, oldest interest first."""
        del self._publishers[publisher.connection]
        if self._loads is None:
            self._coverage.leave(publisher)
        else:
            self._loads.remove(publisher)
        topics: list[_Topic] = sorted(publisher.topics.values(), key=_since)  # type: ignore[arg-type]
        publisher.topics.clear()
        publisher.load = 0
        lost_client, lost_connection = publisher.client, publisher.connection
        append = out.append
        for topic in topics:
            name = topic.name
            topic.publisher = None
            replacement = self._choose(name)
            if replacement is None:
                self._unassigned[name] = topic
                action, client, connection = NO_HANDLERS, None, None
            else:
                self._assign(topic, replacement)
                self.reassignments += 1
                action, client, connection = ASSIGN, replacement.client, replacement.connection
            if self._all:  # the fields spelled out: a starred tuple display costs a list
                for sub in topic.subscribers:  # type: ignore[union-attr]
                    if sub.topic is None:
                        continue
                    conn = sub.conn
                    subscriber_client, subscriber_connection = conn.client, conn.name
                    append(_new(AffinityEvent, (UNASSIGN, name, lost_client, lost_connection, subscriber_client, subscriber_connection, PUBLISHER_LOST)))
                    append(_new(AffinityEvent, (action, name, client, connection, subscriber_client, subscriber_connection, PUBLISHER_LOST)))
            else:
                append(_new(AffinityEvent, (action, name, client, connection, None, None, PUBLISHER_LOST)))

    def _choose(self, topic: str) -> Publisher | None:
        """The least-loaded eligible publisher covering ``topic``, ties to the earliest activation."""
        if self._loads is not None:
            return self._loads.least_loaded()
        return self._coverage.least_loaded(topic)

    def _assign(self, topic: _Topic, publisher: Publisher) -> None:
        topic.publisher = publisher
        publisher.topics[topic.name] = topic
        publisher.load += 1
        publisher.loads.rose(publisher)  # type: ignore[union-attr]

    # ---- interest

    def _classify(self, topic: str) -> _Topic | _Mark:
        """The state of a topic seen for the first time: a _Topic if subscriptions to it are interest."""
        if len(self._topics) >= self._topic_limit:  # forget the topics nobody wants now
            self._topics = {name: t for name, t in self._topics.items() if type(t) is _Topic and t.count}
            self._topic_limit = max(self._topic_floor, 2 * len(self._topics))
        interesting = not has_metachars(topic) and self._finds(topic)
        state = self._topics[topic] = _Topic(topic, self._all) if interesting else _IGNORED
        return state

    def _add_interest(self, conn: _Connection, sub_id: str, topic: _Topic, out: list[AffinityEvent]) -> None:
        """Add an interest subscription to ``topic``."""
        if self._all:
            conn[sub_id] = sub = _Sub()
            sub.topic, sub.conn = topic, conn
            topic.subscribers.append(sub)  # type: ignore[union-attr]
        else:
            conn[sub_id] = topic
        topic.count += 1
        if topic.count == 1:  # the first interest
            self._interest_seq += 1
            topic.since = self._interest_seq
            publisher = self._choose(topic.name)
            if publisher is None:
                self._unassigned[topic.name] = topic
            else:
                self._assign(topic, publisher)
            if not self._all:
                self._emit(out, topic, None, SUBSCRIBE)
                return
        elif not self._all:
            return
        self._emit(out, topic, conn, SUBSCRIBE)

    def _remove_interest(self, conn: _Connection, entry: _Topic | _Sub, out: list[AffinityEvent]) -> None:
        """Remove an interest subscription (its entry is already out of ``conn``)."""
        if type(entry) is _Sub:  # all mode
            topic: _Topic = entry.topic  # type: ignore[assignment]
            entry.topic = None
            held = topic.subscribers
            if topic.count == 1:
                held.clear()  # type: ignore[union-attr]
            elif len(held) >= 2 * topic.count + 8:  # type: ignore[arg-type]
                held[:] = [sub for sub in held if sub.topic is not None]  # type: ignore[union-attr]
        else:
            topic = entry  # type: ignore[assignment]
        publisher = topic.publisher
        if self._all:
            if publisher is not None:
                out.append(_new(AffinityEvent, (UNASSIGN, topic.name, publisher.client, publisher.connection, conn.client, conn.name, UNSUBSCRIBE)))
        topic.count -= 1
        if topic.count:
            return
        if publisher is None:
            del self._unassigned[topic.name]
            return
        del publisher.topics[topic.name]
        publisher.load -= 1
        topic.publisher = None
        publisher.loads.fell(publisher)  # type: ignore[union-attr]
        if not self._all:
            out.append(_new(AffinityEvent, (UNASSIGN, topic.name, publisher.client, publisher.connection, None, None, UNSUBSCRIBE)))

    # ---- events out

    def _announce(self, topic: _Topic, out: list[AffinityEvent], action: AffinityAction, cause: Cause) -> None:
        """One event, or one per interested subscriber with Announcements=all."""
        publisher, name = topic.publisher, topic.name
        client, connection = (None, None) if publisher is None or action is NO_HANDLERS else (publisher.client, publisher.connection)
        if self._all:
            out += [_new(AffinityEvent, (action, name, client, connection, sub.conn.client, sub.conn.name, cause)) for sub in topic.subscribers if sub.topic is not None]  # type: ignore[union-attr]
        else:
            out.append(_new(AffinityEvent, (action, name, client, connection, None, None, cause)))

    def _emit(self, out: list[AffinityEvent], topic: _Topic, subscriber: _Connection | None, cause: Cause) -> None:
        """``assign`` to the topic's publisher, or ``no_handlers``; naming ``subscriber`` if given."""
        publisher = topic.publisher
        client, connection = (None, None) if subscriber is None else (subscriber.client, subscriber.name)
        if publisher is None:
            out.append(_new(AffinityEvent, (NO_HANDLERS, topic.name, None, None, client, connection, cause)))
        else:
            out.append(_new(AffinityEvent, (ASSIGN, topic.name, publisher.client, publisher.connection, client, connection, cause)))

    # ---- state out (summaries and the property tests)

    def _interested(self) -> list[_Topic]:
        """The interested topics, oldest interest first."""
        live = [t for t in self._topics.values() if type(t) is _Topic and t.count]
        return sorted(live, key=_since)  # type: ignore[arg-type]

    def assignments(self) -> dict[str, str | None]:
        """Each interested topic's publisher connection (None when unassigned), oldest interest first."""
        return {t.name: t.publisher.connection if t.publisher else None for t in self._interested()}

    def publishers(self) -> list[PublisherState]:
        """The eligible publishers in activation order."""
        return [
            PublisherState(p.connection, p.client, p.activation, tuple(p.topics), tuple(c.pattern if c else None for c in p.coverage.values()))
            for p in self._publishers.values()
        ]

    def interest(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """Each interested topic's subscribers as (client, connection), oldest interest first;
        within a topic, by connection (in the order connections first subscribed), then by
        subscription."""
        found: dict[str, list[tuple[str, str]]] = {t.name: [] for t in self._interested()}
        for conn in self._connections.values():
            for entry in conn.values():
                if type(entry) is not _Mark:
                    found[entry.topic.name if type(entry) is _Sub else entry.name].append((conn.client, conn.name))  # type: ignore[union-attr]
        return {name: tuple(subscribers) for name, subscribers in found.items()}


def _since(topic: _Topic) -> int:
    return topic.since
