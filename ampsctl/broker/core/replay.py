"""Bookmark replay: a subscription that starts in the journal and goes live with no gap and no duplicate.

Theory of operation (spec/protocol.md §5.4, §9). The core never reads the journal; the server
does, and hands the records back. A ``subscribe`` with a replaying bookmark (``0``, ``h|seq|``,
a timestamp, a list) goes through four steps:

1. ``begin`` (in the subscribe handler): the subscription is registered at once, marked as
   replaying up to ``upto`` = the core's last journal sequence at that moment, and a
   ``StartReplay`` action asks the server to find the start. From now on every live frame the
   subscription earns is *held* (``hold``, called by fan-out) instead of sent: all of them
   belong to records after ``upto`` (or to topics the journal does not record).
2. ``resolved``: the server committed the journal (so every record up to ``upto`` is on disk),
   looked the start up and reports the sequence to replay after, or None when the bookmark is
   not in the journal; ``bookmark_not_found`` (now | epoch | fail; default epoch with a warning,
   §9.2 [REC]: duplicates rather than loss) decides. The ``processed`` ack goes out here, so a
   ``fail`` can still be a failure ack.
3. ``feed`` (repeatedly): a chunk of journal records in sequence order, each ``<= upto``; the
   matching publish / delta_publish records become ``p`` frames carrying ``bm``, ``k``, ``x``.
4. ``finish``: the held live frames are sent, then the ``completed`` ack; the subscription is
   live from then on.

Invariants:
* A replaying subscription sends nothing but replayed frames until ``finish``; replayed records
  are ``<= upto`` and held frames come from records ``> upto``, so nothing is lost or repeated.
* ``hold`` is bounded (``HOLD_LIMIT`` bytes): past it the held frames are dropped, the ticket is
  marked ``overflowed`` and the next ``feed``/``finish`` disconnects the client as a slow consumer
  (it could only be served by losing messages).
* Every step checks that the ticket is still the subscription's (an unsubscribe, a ``replace``
  or a disconnect ends the replay): a step for a stale ticket returns None and changes nothing.
* A delta_publish record replays as journaled (the delta itself, not the merged message): the
  journal holds what was published, and the merged state at that point in the log is not kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ampsctl.broker.core.actions import Action, Log, LogLevel, Send
from ampsctl.broker.core.fanout import Update, UpdateKind, render
from ampsctl.broker.core.subscriptions import Subscription
from ampsctl.journal.bookmarks import Position
from ampsctl.journal.record import Command, JournalRecord
from ampsctl.sow.spec import same_message_type

if TYPE_CHECKING:
    from ampsctl.broker.core.broker import BrokerCore

HOLD_LIMIT = 64 << 20  # bytes of live frames a replaying subscription may hold (the outbound limit's default)
_REPLAYED = (Command.PUBLISH, Command.DELTA_PUBLISH)  # sow_delete and expire records are not messages


@dataclass(eq=False, slots=True)
class ReplayTicket:
    """What the server needs to run one replay; identity ties it to one subscription."""

    conn: int
    sub_id: str
    subscription: Subscription
    position: Position  # a bookmark's sequence, or a timestamp
    upto: int  # replay records with sequence <= upto
    after: int | None = None  # replay records with sequence > after (set by ``resolved``)
    overflowed: bool = False

    def topic_matches(self, topic: str) -> bool:
        return self.subscription.topic_matches(topic)


@dataclass(frozen=True, slots=True)
class StartReplay:
    """Action: commit the journal, find ``ticket.position`` in it, call ``resolved``, then stream."""

    ticket: ReplayTicket


@dataclass(slots=True)
class ReplayState:
    """Kept on the subscription while it replays."""

    ticket: ReplayTicket
    processed: bytes  # the processed ack (b"" when not requested), sent by ``resolved``
    completed: bytes  # the completed ack (b"" when not requested), sent by ``finish``
    failure: bytes  # the failure ack for bookmark_not_found=fail (b"" when no ack carries it)
    not_found: str | None  # the bookmark_not_found option
    bookmark: str
    limit: int = HOLD_LIMIT
    held: list[bytes] = field(default_factory=list)
    held_bytes: int = 0

    def hold(self, data: bytes) -> None:
        if self.ticket.overflowed:
            return
        self.held.append(data)
        self.held_bytes += len(data)
        if self.held_bytes > self.limit:
            self.ticket.overflowed = True
            self.held.clear()  # they can no longer be delivered without a gap; free the memory now
            self.held_bytes = 0


def begin(sub: Subscription, state: ReplayState) -> StartReplay:
    """Mark ``sub`` as replaying (call before it is added to the index)."""
    sub.replay = state
    return StartReplay(state.ticket)


def _current(core: BrokerCore, ticket: ReplayTicket) -> ReplayState | None:
    sub = core.subs.get(ticket.conn, ticket.sub_id)
    if sub is not ticket.subscription or sub.replay is None or sub.replay.ticket is not ticket:
        return None
    return sub.replay


def active(core: BrokerCore, ticket: ReplayTicket) -> bool:
    return _current(core, ticket) is not None


def resolved(core: BrokerCore, ticket: ReplayTicket, found: int | None, now: int) -> list[Action]:
    """The server found the start (``found``: replay after this sequence) or not (None).

    A subscription that could still be refused (``bookmark_not_found=fail``) is in the index
    unannounced (subscriptions.py): the refusal removes it unheard of, a start announces it
    now, and the config's actions run for it (BrokerCore invariant 2: a refused command feeds
    them nothing)."""
    state = _current(core, ticket)
    if state is None:
        return []
    out: list[Action] = []
    label = f"{_label(core, ticket.conn)}: subscription {ticket.sub_id!r}"
    if found is None:
        policy = state.not_found
        if policy == "fail":
            core.subs.restore(ticket.subscription)  # out, and a subscription it replaced back in
            if state.failure:
                out.append(Send(ticket.conn, state.failure))
            out.append(Log(LogLevel.WARNING, f"{label}: bookmark {state.bookmark!r} is not in the journal "
                                             "(bookmark_not_found=fail): refused", ticket.conn))
            return out
        if policy == "now":
            found = ticket.upto
        else:
            found = 0
            if policy is None:
                out.append(Log(LogLevel.WARNING, f"{label}: bookmark {state.bookmark!r} is not in the journal; "
                                                 "replaying from the beginning (set bookmark_not_found=now|epoch|fail "
                                                 "to choose)", ticket.conn))
    ticket.after = min(found, ticket.upto)
    if state.processed:
        out.append(Send(ticket.conn, state.processed))
    if not ticket.subscription.announced:
        core.subs.announce(ticket.subscription)
        out += core.run_actions(now)
    return out


def feed(core: BrokerCore, ticket: ReplayTicket, records: Sequence[JournalRecord]) -> list[Action] | None:
    """The ``p`` frames for a chunk of journal records; None when the replay is over (stale ticket)."""
    state = _current(core, ticket)
    if state is None:
        return None
    if ticket.overflowed:
        return _overflow(core, ticket)
    sub = ticket.subscription
    message_type = core.settings.message_type
    after, upto = ticket.after or 0, ticket.upto
    frames = []
    for record in records:
        if (record.sequence <= after or record.sequence > upto or record.command not in _REPLAYED
                or not same_message_type(record.message_type, message_type) or not sub.topic_matches(record.topic)):
            continue
        update = Update(UpdateKind.PUBLISH, record.topic, record.payload, key=record.sow_key,
                        correlation_id=record.correlation_id, bookmark=record.bookmark)
        data = render(update, [sub], record.timestamp)  # the timestamp option shows when it was logged
        if data:
            frames.append(data)
    # a reply to the client's own subscribe: a chunk may pass the outbound limit (connection.py)
    return [Send(ticket.conn, b"".join(frames), True)] if frames else []


def finish(core: BrokerCore, ticket: ReplayTicket) -> list[Action]:
    """Replay done: the held live frames, the ``completed`` ack, and live delivery from now on."""
    state = _current(core, ticket)
    if state is None:
        return []
    if ticket.overflowed:
        return _overflow(core, ticket)
    ticket.subscription.replay = None
    data = b"".join(state.held) + state.completed
    return [Send(ticket.conn, data, True)] if data else []  # bounded by the hold limit; a reply, as in feed


def abort(core: BrokerCore, ticket: ReplayTicket, why: str) -> list[Action]:
    """The journal could not be read: the client cannot be served without a gap, so it is closed."""
    if _current(core, ticket) is None:
        return []
    return [Log(LogLevel.ERROR, f"{_label(core, ticket.conn)}: replay for subscription {ticket.sub_id!r} failed: "
                                f"{why}; disconnecting", ticket.conn), *core.drop(ticket.conn, "replay failed")]


def _label(core: BrokerCore, conn: int) -> str:
    session = core.sessions.get(conn)
    return session.label if session is not None else f"connection {conn}"


def _overflow(core: BrokerCore, ticket: ReplayTicket) -> list[Action]:
    state = ticket.subscription.replay
    limit = state.limit if state is not None else HOLD_LIMIT
    message = (f"{_label(core, ticket.conn)}: subscription {ticket.sub_id!r} fell more than {limit} bytes of "
               "live messages behind while replaying the journal: disconnecting it as a slow consumer")
    return [Log(LogLevel.WARNING, message, ticket.conn), *core.drop(ticket.conn, "slow consumer during replay")]
