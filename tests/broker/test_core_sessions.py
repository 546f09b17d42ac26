"""BrokerCore: the logon state machine (§4.1-4.2), heartbeats (§4.4), refusals (§7.4)."""

from __future__ import annotations

from core_helpers import NOW, frames_for, logged_on, make_core, send

from ampsctl.broker.core import Close, CoreSettings, Log, Send
from ampsctl.protocol.acks import Ack, AckType, Status
from ampsctl.protocol.cmdoptions import HeartbeatAction
from ampsctl.protocol.commands import Flush, Heartbeat, Logon, Publish, Subscribe
from ampsctl.protocol.frames import Frame
from ampsctl.protocol.messages import ServerHeartbeat

P = frozenset({AckType.PROCESSED})
SECOND = 1_000_000


def _ack(actions: list, conn: int) -> Ack:
    acks = [m for m in frames_for(actions, conn) if isinstance(m, Ack)]
    assert len(acks) == 1, acks
    return acks[0]


def test_commands_before_logon_are_refused_and_change_nothing() -> None:
    core = make_core()
    core.connected(1, NOW)
    out = send(core, 1, Subscribe(cid="s", acks=P, topic="orders"))
    ack = _ack(out, 1)
    assert (ack.status, ack.reason, ack.cid) == (Status.FAILURE, "logon required", "s")
    assert len(core.subs) == 0 and any(isinstance(a, Log) for a in out)
    assert send(core, 1, Subscribe(cid="quiet", topic="orders")) != []  # no ack asked: only a log line


def test_implicit_logon_when_not_required() -> None:
    core = make_core(require_logon=False)
    core.connected(1, NOW)
    assert _ack(send(core, 1, Flush(cid="f", acks=P)), 1).ok
    assert core.sessions[1].logged_on and core.sessions[1].client_name is None


def test_logon_ack_and_second_logon() -> None:
    core = make_core()
    core.connected(1, NOW)
    ack = _ack(send(core, 1, Logon(cid="1", acks=P, client_name="app", user_id="u")), 1)
    assert ack.ok and (ack.client_name, ack.user_id, ack.seq) == ("app", "u", 0) and ack.version
    again = _ack(send(core, 1, Logon(cid="2", acks=P, client_name="app")), 1)
    assert (again.status, again.reason) == (Status.FAILURE, "already logged on")


def test_reconnect_rule_same_user_replaces_other_user_refused() -> None:
    core = make_core()
    core.connected(1, NOW)
    send(core, 1, Logon(cid="1", client_name="app", user_id="alice"))
    send(core, 1, Subscribe(cid="s", topic="orders"))
    core.connected(2, NOW)
    refused = _ack(send(core, 2, Logon(cid="1", acks=P, client_name="app", user_id="bob")), 2)
    assert refused.reason == "name in use" and not core.sessions[2].logged_on  # may try again
    core.connected(3, NOW)
    out = send(core, 3, Logon(cid="1", acks=P, client_name="app", user_id="alice"))
    assert Close(1, "client name 'app' logged on again from connection 3") in out
    assert 1 not in core.sessions and core.names["app"] == 3 and len(core.subs) == 0
    assert core.disconnected(1, NOW) == []  # the server's later call for the closed socket is a no-op


def test_credentials() -> None:
    core = make_core(users={"alice": "pw"})
    core.connected(1, NOW)
    bad = _ack(send(core, 1, Logon(cid="1", acks=P, client_name="a", user_id="alice", password="nope")), 1)
    assert bad.reason == "auth failure" and not core.sessions[1].logged_on
    good = _ack(send(core, 1, Logon(cid="2", acks=P, client_name="a", user_id="alice", password="pw")), 1)
    assert good.ok


def test_unparseable_command_is_answered_with_its_reason() -> None:
    core = make_core()
    logged_on(core, 1)
    out = core.receive(1, Frame({"c": "nope", "cid": "9", "a": "processed"}), NOW)
    ack = _ack(out, 1)
    assert (ack.cid, ack.reason) == ("9", "invalid command")


def test_heartbeat_sent_when_idle_and_silent_client_dropped() -> None:
    core = make_core()
    logged_on(core, 1)
    logged_on(core, 2)
    send(core, 1, Heartbeat(action=HeartbeatAction.START, interval=1))
    send(core, 2, Heartbeat(action=HeartbeatAction.START, interval=1))
    beats = core.tick(NOW + SECOND)
    assert {a.conn for a in beats if isinstance(a, Send)} == {1, 2}
    assert all(isinstance(m, ServerHeartbeat) for m in frames_for(beats, 1))
    send(core, 2, Heartbeat(action=HeartbeatAction.BEAT), NOW + 2 * SECOND)  # 2 answers, 1 never does
    assert not any(isinstance(a, Close) for a in core.tick(NOW + 3 * SECOND))  # 2 intervals after the heartbeat
    out = core.tick(NOW + 3 * SECOND + 1)
    assert Close(1, "heartbeat timeout") in out and 1 not in core.sessions and 2 in core.sessions
    send(core, 2, Heartbeat(action=HeartbeatAction.STOP), NOW + 3 * SECOND)
    assert core.tick(NOW + 60 * SECOND) == []


def test_settings_users_are_read_only() -> None:
    settings = CoreSettings(users={"a": "b"})
    assert settings.users is not None and dict(settings.users) == {"a": "b"}


def test_a_busy_subscriber_that_answers_heartbeats_is_kept() -> None:
    """§4.4: a client is dropped when it does not answer a heartbeat within 2 × interval. A
    subscriber that only answers heartbeats, on a connection the broker never leaves idle, was
    never sent one and was dropped after 2 × interval without traffic from it."""
    core = make_core()
    logged_on(core, 1, "subscriber")
    logged_on(core, 2, "publisher")
    send(core, 1, Subscribe(cid="s", topic="orders"))
    send(core, 1, Heartbeat(action=HeartbeatAction.START, interval=1))
    for step in range(1, 13):  # 6 s: a message every half second, a tick every second
        now = NOW + step * SECOND // 2
        send(core, 2, Publish(topic="orders", data=b'{"id":%d}' % step), now)
        if step % 2 == 0:
            out = core.tick(now + 1)
            assert not any(isinstance(action, Close) for action in out), step
            beats = [m for m in frames_for(out, 1) if isinstance(m, ServerHeartbeat)]
            if beats:  # a heartbeat asks for an answer: the subscriber's wire answers at once
                send(core, 1, Heartbeat(action=HeartbeatAction.BEAT), now + 2)
    assert 1 in core.sessions
    silent = NOW + 7 * SECOND  # now it stops answering: one heartbeat more, then dropped 2 s after it
    beats = frames_for(core.tick(silent), 1)
    assert any(isinstance(m, ServerHeartbeat) for m in beats)
    assert not any(isinstance(a, Close) for a in core.tick(silent + 2 * SECOND))
    assert Close(1, "heartbeat timeout") in core.tick(silent + 2 * SECOND + 1)
