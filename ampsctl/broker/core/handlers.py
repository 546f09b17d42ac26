"""Command handlers of the broker core: the session commands, and the table of all handlers.

Each handler is ``handler(core, session, command, now) -> list[Action]``. It validates first and
raises ``Refused`` before it changes anything (BrokerCore invariant 2); the ``received`` ack
and the failure ack are the dispatcher's (``BrokerCore.handle``). The data commands live in
``publishing.py`` (publish, delta_publish, sow_delete) and ``subscribing.py`` (subscribe and
the SOW queries).

Acks are sent in the §7.1 order: received, processed, (results), persisted, completed, stats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ampsctl.broker.core import publishing, subscribing
from ampsctl.broker.core.actions import Action, Log, LogLevel, Send
from ampsctl.broker.core.refusal import Refused
from ampsctl.broker.core.session import LogonState, Session
from ampsctl.protocol.acks import AckType, logon_ack
from ampsctl.protocol.cmdoptions import HeartbeatAction
from ampsctl.protocol.commands import (
    DeltaPublish,
    DeltaSubscribe,
    Flush,
    Heartbeat,
    Logon,
    Publish,
    Sow,
    SowAndDeltaSubscribe,
    SowAndSubscribe,
    SowDelete,
    Subscribe,
    Unsubscribe,
)
from ampsctl.protocol.errors import Reason

if TYPE_CHECKING:
    from ampsctl.broker.core.broker import BrokerCore

MICROS = 1_000_000


def logon(core: BrokerCore, session: Session, cmd: Logon, now: int) -> list[Action]:
    """§4.1-4.2: one logon per connection, credentials when configured, unique client names."""
    if session.logged_on:
        raise Refused(Reason.ALREADY_LOGGED_ON, "this connection is already logged on")
    users = core.settings.users
    if users is not None and (cmd.user_id is None or users.get(cmd.user_id) != cmd.password):
        raise Refused(Reason.AUTH_FAILURE, f"user {cmd.user_id!r}: wrong or missing credentials")
    out: list[Action] = []
    name = cmd.client_name
    if name and core.actions is not None and name in core.actions.publishers:
        raise Refused(Reason.NAME_IN_USE, f"client name {name!r} is the broker's own: a config action publishes "
                                          f"under it (docs/broker.md, \"Actions\")")
    holder = core.names.get(name) if name else None
    if holder is not None and holder != session.conn:
        other = core.sessions[holder]
        if other.user_id != cmd.user_id:
            raise Refused(Reason.NAME_IN_USE, f"client name {name!r} is held by connection {holder} "
                                              f"of another user")
        # §4.2: same name, same user: a reconnect. The old connection goes.
        out.append(Log(LogLevel.INFO, f"client {name!r} reconnected on connection {session.conn}: "
                                      f"closing its old connection {holder}", holder))
        out += core.drop(holder, f"client name {name!r} logged on again from connection {session.conn}")
    if name:
        core.names[name] = session.conn
    session.state = LogonState.LOGGED_ON
    session.client_name, session.user_id = name, cmd.user_id
    out.append(Log(LogLevel.INFO, f"connection {session.conn} ({session.peer or 'peer unknown'}) logged on"
                                  f" as {name or '(no client name)'}", session.conn))
    if cmd.wants(AckType.PROCESSED):
        publisher = core.publishers.get(name)
        ack = logon_ack(cmd.cid, client_name=name, user_id=cmd.user_id, version=core.settings.server_version,
                        seq=publisher.last_seq if publisher else 0,
                        bookmark=publisher.last_bookmark if publisher else None)
        out.append(Send(session.conn, ack.encode()))
    return out


def heartbeat(core: BrokerCore, session: Session, cmd: Heartbeat, now: int) -> list[Action]:
    """§4.4: ``start,N`` (re)starts the timer, ``stop`` ends it, ``beat`` only counts as traffic."""
    if cmd.action is HeartbeatAction.START and cmd.interval:
        session.interval = cmd.interval * MICROS
        session.probe = None
    elif cmd.action is HeartbeatAction.STOP:
        session.interval = session.probe = None
    return _acks(session, cmd, AckType.PROCESSED)


def unsubscribe(core: BrokerCore, session: Session, cmd: Unsubscribe, now: int) -> list[Action]:
    """§5.10: ids, a comma list or ``all``; unknown ids succeed. Queries finish within their own
    command (BrokerCore invariant 1), so a ``query_id`` has nothing left to cancel."""
    if cmd.all:
        core.subs.remove_conn(session.conn)
    else:
        for sub_id in cmd.sub_ids:
            core.subs.remove(session.conn, sub_id)
    return _acks(session, cmd, AckType.PROCESSED)


def flush(core: BrokerCore, session: Session, cmd: Flush, now: int) -> list[Action]:
    """§5.12: every earlier command is processed already; ``persisted`` waits for the journal."""
    out: list[Action] = []
    if cmd.wants(AckType.PROCESSED):
        out.append(Send(session.conn, cmd.ack(AckType.PROCESSED).encode()))
    completed = cmd.ack(AckType.COMPLETED).encode() if cmd.wants(AckType.COMPLETED) else b""
    if cmd.wants(AckType.PERSISTED):  # completed comes after it (ACK_ORDER), so it waits for the journal too
        out.append(core.durable(session.conn, cmd.ack(AckType.PERSISTED).encode() + completed))
    elif completed:
        out.append(Send(session.conn, completed))
    return out


def _acks(session: Session, cmd: Any, *types: AckType) -> list[Action]:
    return [Send(session.conn, cmd.ack(ack_type).encode()) for ack_type in types if cmd.wants(ack_type)]


TABLE: dict[type, Any] = {
    Logon: logon,
    Heartbeat: heartbeat,
    Unsubscribe: unsubscribe,
    Flush: flush,
    Publish: publishing.publish,
    DeltaPublish: publishing.publish,
    SowDelete: publishing.sow_delete,
    Subscribe: subscribing.subscribe,
    DeltaSubscribe: subscribing.subscribe,
    Sow: subscribing.sow,
    SowAndSubscribe: subscribing.sow_and_subscribe,
    SowAndDeltaSubscribe: subscribing.sow_and_subscribe,
}
