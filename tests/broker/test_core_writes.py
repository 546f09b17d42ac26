"""BrokerCore: journal numbering, persisted acks, refusals that change nothing, expiry (§5.2, §5.9)."""

from __future__ import annotations

import orjson
from core_helpers import NOW, frames_for, logged_on, make_core, send, spec

from ampsctl.broker.core import Append, Send, SendDurable
from ampsctl.journal.record import Command
from ampsctl.protocol.acks import Ack, AckType, Status
from ampsctl.protocol.cmdoptions import parse_command_options
from ampsctl.protocol.commands import DeltaPublish, Publish, SowAndSubscribe, SowDelete
from ampsctl.protocol.messages import Delivery, Oof

PP = frozenset({AckType.PROCESSED, AckType.PERSISTED})
SECOND = 1_000_000


def _publish(core, conn, body: bytes, topic: str = "orders", **kw) -> list:
    return send(core, conn, Publish(cid=kw.pop("cid", "p"), topic=topic, data=body, **kw))


def test_sequences_are_consecutive_and_only_for_recorded_topics() -> None:
    core = make_core(spec("orders"), spec("quotes", keys=("/s",)), recorded=["orders", "trades"])
    logged_on(core, 1)
    appended = []
    for topic, body in [("orders", b'{"id":1}'), ("quotes", b'{"s":"x"}'), ("trades", b"raw"), ("news", b"x"),
                        ("orders", b'{"id":2}')]:
        appended += [a.record for a in _publish(core, 1, body, topic) if isinstance(a, Append)]
    assert [(r.sequence, r.topic) for r in appended] == [(1, "orders"), (2, "trades"), (3, "orders")]
    assert appended[0].sow_key and appended[0].client_name == "client-1"  # the computed key is journaled
    assert core.store.last_sequence == 3 and len(core.store.topic("quotes", "json")) == 1


def test_refused_publish_consumes_no_sequence_and_changes_nothing() -> None:
    core = make_core(recorded=["orders"])
    logged_on(core, 1)
    _publish(core, 1, b'{"id":1}')
    out = _publish(core, 1, b'{"no_key":1}', acks=PP)
    acks = [m for m in frames_for(out, 1) if isinstance(m, Ack)]
    assert [(a.ack_type, a.status, a.reason) for a in acks] == [(AckType.PROCESSED, Status.FAILURE, "invalid sow key")]
    assert not any(isinstance(a, Append) for a in out)
    assert core.last_sequence == 1 and core.store.last_sequence == 1
    nxt = [a.record.sequence for a in _publish(core, 1, b'{"id":2}') if isinstance(a, Append)]
    assert nxt == [2]


def test_expiration_past_the_last_storable_time_is_refused_not_journaled() -> None:
    core = make_core(recorded=["orders"])
    logged_on(core, 1)
    out = _publish(core, 1, b'{"id":1}', acks=PP, expiration=10**13)
    acks = [m for m in frames_for(out, 1) if isinstance(m, Ack)]
    assert [(a.status, a.reason) for a in acks] == [(Status.FAILURE, "invalid message")]
    assert not any(isinstance(a, Append) for a in out) and core.last_sequence == 0
    assert [a.record.sequence for a in _publish(core, 1, b'{"id":1}', expiration=60) if isinstance(a, Append)] == [1]


def test_persisted_ack_waits_for_the_journal_only_when_there_is_one() -> None:
    journaled = make_core(recorded=["orders"])
    logged_on(journaled, 1)
    out = _publish(journaled, 1, b'{"id":1}', acks=PP, seq=1)
    kinds = [type(a).__name__ for a in out]
    assert kinds == ["Append", "Send", "SendDurable"] and out[-1].sequence == 1
    plain = make_core()
    logged_on(plain, 1)
    assert [type(a).__name__ for a in _publish(plain, 1, b'{"id":1}', acks=PP)] == ["Send", "Send"]


def test_delta_publish_is_delivered_merged() -> None:
    core = make_core()
    logged_on(core, 1)
    logged_on(core, 2)
    send(core, 2, SowAndSubscribe(cid="s", topic="orders"))
    _publish(core, 1, b'{"id":1,"a":1,"b":1}')
    out = send(core, 1, DeltaPublish(cid="d", topic="orders", data=b'{"id":1,"b":2}'))
    [message] = frames_for(out, 2)
    assert isinstance(message, Delivery) and orjson.loads(message.data) == {"id": 1, "a": 1, "b": 2}


def test_sow_delete_journals_one_record_per_concrete_topic_and_sends_oof() -> None:
    core = make_core(spec("desk", pattern="^desk_"), recorded=["^desk_"])
    logged_on(core, 1)
    for topic in ("desk_a", "desk_b"):
        _publish(core, 1, b'{"id":1}', topic)
    send(core, 1, SowAndSubscribe(cid="s", topic="^desk_", options=parse_command_options("oof")))
    out = send(core, 1, SowDelete(cid="d", topic="^desk_", filter="1=1",
                                  acks=frozenset({AckType.PROCESSED, AckType.STATS})))
    records = [a.record for a in out if isinstance(a, Append)]
    assert [(r.command, r.topic, r.sequence) for r in records] == [
        (Command.SOW_DELETE, "desk_a", 3), (Command.SOW_DELETE, "desk_b", 4)]
    messages = frames_for(out, 1)
    assert sorted(m.topic for m in messages if isinstance(m, Oof) and m.reason == "deleted") == ["desk_a", "desk_b"]
    stats = [m for m in messages if isinstance(m, Ack) and m.ack_type is AckType.STATS][0]
    assert (stats.records_deleted, stats.topic_matches) == (2, 2)


def test_expiry_is_journaled_and_sends_oof_expired() -> None:
    core = make_core(spec("quotes", keys=("/s",), expiration=0), recorded=["quotes"])
    logged_on(core, 1)
    _publish(core, 1, b'{"s":"x"}', "quotes", expiration=2)
    send(core, 1, SowAndSubscribe(cid="s", topic="quotes", options=parse_command_options("oof")))
    assert core.tick(NOW + SECOND) == []
    out = core.tick(NOW + 2 * SECOND)
    [append] = [a for a in out if isinstance(a, Append)]
    assert (append.record.command, append.record.sequence, append.record.payload) == (Command.EXPIRE, 2, b"")
    [oof] = frames_for(out, 1)
    assert isinstance(oof, Oof) and oof.reason == "expired" and oof.data == b'{"s":"x"}'
    assert core.store.last_sequence == 2 and len(core.store.topic("quotes", "json")) == 0
    assert isinstance(out[-1], Send)
