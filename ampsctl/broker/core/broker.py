"""``BrokerCore``: the AMPS broker as a sans-IO state machine. Commands in, actions out.

Theory of operation. The server owns sockets, the journal writer and the clock; the core owns
every piece of broker state: sessions (logon, heartbeats), subscriptions, publisher memory and,
through ``SowStore``, the State of the World. The server calls

* ``connected(conn, now)`` / ``disconnected(conn, now)`` as sockets come and go,
* ``receive(conn, frame, now)`` for every decoded frame (or ``handle`` with a parsed command),
* ``tick(now)`` on a timer (SOW expiry, heartbeats),

and executes the returned actions in order (``actions.py``). Nothing here blocks, sleeps, or
reads a clock; ``now`` is µs since the Unix epoch, UTC.

Invariants:
1. One call handles one command completely. A SOW query's snapshot and the registration of its
   subscription happen in the same call, so no publish can fall between them: sow_and_subscribe
   loses and duplicates nothing (§5.7), and query results precede later commands' output (§11).
2. A refused command changes no state and produces only its failure ack and a log line:
   handlers validate first (raising ``Refused``), then act.
3. Journal sequences come only from ``Writes``, in the order of the ``Append`` actions.
4. A connection's state is removed exactly once: on ``disconnected``, on a server-initiated
   close (heartbeat timeout, a reconnect taking its client name); later calls for it are no-ops.
5. ``persisted`` acks ride on ``SendDurable`` when a journal exists, so none is sent before
   the records it covers are on disk, and they keep their order on the connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ampsctl.broker.core import handlers
from ampsctl.broker.core.action_runner import CoreActions
from ampsctl.broker.core.actions import Action, Append, Close, Log, LogLevel, Send, SendDurable
from ampsctl.broker.core.conflation import ConflationQueue
from ampsctl.broker.core.fanout import Update, UpdateKind, fan_out
from ampsctl.broker.core.publishing import publish_message
from ampsctl.broker.core.refusal import Refused
from ampsctl.broker.core.session import LogonState, Publishers, Session
from ampsctl.broker.core.settings import CoreSettings
from ampsctl.broker.core.subscriptions import SubscriptionIndex
from ampsctl.broker.core.writes import Expired, Writes
from ampsctl.journal.record import Command as JournalCommand
from ampsctl.protocol.acks import AckType, Status, failure_ack_type
from ampsctl.protocol.commands import Command, Logon, Publish, encode_publish_ack
from ampsctl.protocol.errors import CommandError, Reason
from ampsctl.protocol.fastpublish import PlainPublish, plain_publish
from ampsctl.protocol.frames import Frame
from ampsctl.protocol.messages import ServerHeartbeat
from ampsctl.protocol.parse import parse_command
from ampsctl.sow.record import Change
from ampsctl.sow.store import SowStore

MICROS = 1_000_000
_HEARTBEAT = ServerHeartbeat().encode()


class BrokerCore:
    """See the module docstring."""

    def __init__(self, settings: CoreSettings, store: SowStore, *, last_sequence: int = 0) -> None:
        self.settings = settings
        self.store = store
        self.sessions: dict[int, Session] = {}
        self.names: dict[str, int] = {}  # client name -> connection holding it
        self.subs = SubscriptionIndex()
        self.writes = Writes(store, settings, last_sequence)
        self.publishers = Publishers()
        self.actions = CoreActions.attach(self)  # the config's actions, None without any (action_runner.py)
        self.conflation = ConflationQueue()  # conflated subscriptions' pending updates (conflation.py)
        self._handlers: dict[type, Callable[[BrokerCore, Session, Any, int], list[Action]]] = handlers.TABLE
        self._journal_enabled = settings.journal_enabled  # fixed: read once per persisted ack

    @property
    def last_sequence(self) -> int:
        """The journal sequence of the last record the core asked to append."""
        return self.writes.last_sequence

    # ------------------------------------------------------------------ connections

    def connected(self, conn: int, now: int, *, peer: str = "") -> list[Action]:
        if conn in self.sessions:
            raise ValueError(f"connection {conn} is already connected")  # a server bug, not input
        self.sessions[conn] = Session(conn, peer, last_in=now, last_out=now)
        return []

    def disconnected(self, conn: int, now: int) -> list[Action]:
        """The socket is gone: drop the connection's subscriptions (§4.5). Idempotent."""
        session = self.sessions.get(conn)
        if session is None:
            return []
        self._forget(session)
        return self._with_actions([Log(LogLevel.DEBUG, f"{session.label} disconnected", conn)], now)

    def drop(self, conn: int, reason: str) -> list[Action]:
        """Close a connection from the core's side (its state goes now, the socket after)."""
        session = self.sessions.get(conn)
        if session is None:
            return []
        self._forget(session)
        return [Close(conn, reason)]

    def _forget(self, session: Session) -> None:
        del self.sessions[session.conn]
        if session.client_name and self.names.get(session.client_name) == session.conn:
            del self.names[session.client_name]
        mark = len(self.actions.pending) if self.actions is not None else 0
        self.subs.remove_conn(session.conn)
        if self.actions is not None:
            self.actions.disconnected(session.conn, mark)

    # ------------------------------------------------------------------ commands

    def heard(self, conn: int, now: int) -> None:
        """Bytes came from ``conn`` that complete no frame yet: traffic all the same (§4.4: a client
        is dropped after "no traffic of any kind", not while it sends a large frame slowly)."""
        session = self.sessions.get(conn)
        if session is not None:
            session.last_in = now

    def receive(self, conn: int, frame: Frame, now: int) -> list[Action]:
        """Parse and handle one frame; a bad command is answered and the connection kept."""
        session = self.sessions.get(conn)
        if session is None:
            return []
        if session.state is LogonState.LOGGED_ON:
            fields = plain_publish(frame.header)
            if fields is not None:
                return self._publish_lane(session, fields, frame.body, now)
        try:
            command = parse_command(frame, user_options=self.settings.user_options)
        except CommandError as exc:
            session.last_in = now
            reply = exc.reply()
            out: list[Action] = [Send(conn, reply)] if reply is not None else []
            out.append(Log(LogLevel.WARNING, f"{session.label}: {exc.command or 'command'} rejected "
                                             f"({exc.reason.value}): {exc.message}", conn))
            return self._touched(out, now)
        return self.handle(conn, command, now)

    def handle(self, conn: int, command: Command, now: int) -> list[Action]:
        """Execute one parsed command for ``conn``; the actions to carry out, in order."""
        session = self.sessions.get(conn)
        if session is None:
            return []  # closed by the core already (invariant 4)
        session.last_in = now
        try:
            if not session.logged_on and not isinstance(command, Logon):
                if self.settings.require_logon:
                    raise Refused(Reason.LOGON_REQUIRED, "the first command on a connection must be logon")
                session.state = LogonState.LOGGED_ON  # implicit logon, no client name (§4.1)
            out = self._handlers[type(command)](self, session, command, now)
        except Refused as refused:
            return self._touched(self._refusal(session, command, refused), now)
        if command.wants(AckType.RECEIVED):
            out.insert(0, Send(conn, command.ack(AckType.RECEIVED).encode()))
        return self._touched(self._with_actions(out, now), now)

    def _publish_lane(self, session: Session, fields: PlainPublish, data: bytes, now: int) -> list[Action]:
        """``handle`` of the ``Publish`` that ``parse_command`` would build from ``fields``
        (``protocol.fastpublish``), for a logged-on session, without building it: the same
        actions in the same order (tests/broker/test_core_publish_lane.py compares them)."""
        session.last_in = now
        cid, acks, topic, seq, expiration, correlation_id = fields
        try:
            out = publish_message(self, session, JournalCommand.PUBLISH, cid, acks, topic, data, seq, expiration,
                                  correlation_id, None, now)
        except Refused as refused:
            command = Publish(cid=cid, acks=acks, topic=topic, data=data, expiration=expiration, seq=seq,
                              correlation_id=correlation_id)
            return self._touched(self._refusal(session, command, refused), now)
        if AckType.RECEIVED in acks:
            out.insert(0, Send(session.conn, encode_publish_ack(AckType.RECEIVED, cid, topic, seq)))
        return self._touched(self._with_actions(out, now), now)

    def _refusal(self, session: Session, command: Command, refused: Refused) -> list[Action]:
        out: list[Action] = []
        carrier = failure_ack_type(command.acks)
        if carrier is not AckType.RECEIVED and command.wants(AckType.RECEIVED):
            # received says the command arrived, before it is processed (§7.1): refused or not, it did
            out.append(Send(session.conn, command.ack(AckType.RECEIVED).encode()))
        if carrier is not None:
            ack = command.ack(carrier, status=Status.FAILURE, reason=refused.reason)
            out.append(Send(session.conn, ack.encode()))
        out.append(Log(LogLevel.WARNING, f"{session.label}: {command.kind.value} refused ({refused.reason}): "
                                         f"{refused.message}", session.conn))
        return out

    def run_actions(self, now: int) -> list[Action]:
        """The publishes of the config's actions for subscription changes made outside a command
        (a bookmark subscription announced once its replay found its start, replay.py)."""
        return self._touched(self._with_actions([], now), now)

    def _with_actions(self, out: list[Action], now: int) -> list[Action]:
        """``out``, then the publishes of the config's actions that the call caused (action_runner.py)."""
        if self.actions is not None:
            out += self.actions.run(self, now)
        return out

    def _touched(self, actions: list[Action], now: int) -> list[Action]:
        """Note when each connection was last sent something (heartbeats are sent when idle)."""
        sessions = self.sessions
        last = -1  # runs of actions for one connection are the rule: one lookup per run
        for action in actions:
            kind = type(action)
            if (kind is Send or kind is SendDurable) and action.conn != last:
                last = action.conn
                session = sessions.get(last)
                if session is not None:
                    session.last_out = now
        return actions

    # ------------------------------------------------------------------ helpers for handlers

    def durable(self, conn: int, data: bytes) -> Action:
        """A frame to send once everything journaled so far is on disk (persisted acks)."""
        sequence = self.writes.last_sequence
        if sequence == 0 or not self._journal_enabled:
            return Send(conn, data)
        return SendDurable(conn, data, sequence)

    def deliver(self, update: Update, now: int) -> list[Send]:
        return fan_out(update, self.subs.matching(update.topic), now)

    # ------------------------------------------------------------------ timer

    def tick(self, now: int) -> list[Action]:
        """SOW expiry (OOF ``expired``) and heartbeats (§4.4); call it about once a second.

        A heartbeat goes to a client the broker has sent nothing for an interval (traffic at least
        every interval) and to one it has heard nothing from for an interval, even while it
        streams to it (the client must answer, §4.4: a busy subscriber that only answers
        heartbeats is never idle from the broker's side). A client that sends nothing within
        ``heartbeat_grace`` intervals after such a heartbeat is dropped."""
        out = self._expiries(self.writes.sweep(now), now)
        for session in list(self.sessions.values()):
            interval = session.interval
            if interval is None:
                continue
            probe = session.probe
            if probe is not None and session.last_in >= probe:
                probe = session.probe = None  # answered: any traffic counts
            if probe is not None and now - probe > self.settings.heartbeat_grace * interval:
                seconds = (now - session.last_in) / MICROS
                out.append(Log(LogLevel.ERROR, f"{session.label}: no heartbeat for {seconds:.1f} s "
                                               f"(interval {interval // MICROS} s): disconnecting", session.conn))
                out += self.drop(session.conn, "heartbeat timeout")
            elif probe is None and now - session.last_in >= interval:
                session.probe = now  # silent for an interval: a heartbeat it must answer, busy or not
                out.append(Send(session.conn, _HEARTBEAT))
            elif now - session.last_out >= interval:
                out.append(Send(session.conn, _HEARTBEAT))
        return self._touched(self._with_actions(out, now), now)

    def recovered_expiries(self, changes: list[Change], now: int) -> list[Action]:
        """Journal the expirations that start-up recovery processed (``sow.recover`` returns them)."""
        return self._expiries(self.writes.expired(changes, None, now), now)

    def _expiries(self, expired: list[Expired], now: int) -> list[Action]:
        out: list[Action] = []
        for item in expired:
            if item.record is not None:
                out.append(Append(item.record))
            change = item.change
            old = change.old.payload if change.old is not None else None
            out += self.deliver(Update(UpdateKind.EXPIRE, change.topic, None, old=old, key=change.key), now)
        return out
