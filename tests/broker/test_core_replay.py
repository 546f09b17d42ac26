"""Bookmark replay in the sans-IO core (core/replay.py): hold live, feed the journal, finish."""

from __future__ import annotations

import orjson
from core_helpers import NOW, frames_for, logged_on, make_core, send

from ampsctl.broker.core import replay
from ampsctl.broker.core.actions import Append, Close, Log
from ampsctl.broker.core.replay import StartReplay
from ampsctl.protocol.acks import Ack, AckType
from ampsctl.protocol.cmdoptions import parse_command_options
from ampsctl.protocol.commands import DeltaSubscribe, Publish, SowDelete, Subscribe, Unsubscribe
from ampsctl.protocol.messages import Delivery

ACKS = frozenset({AckType.PROCESSED, AckType.COMPLETED})


def _core():
    core = make_core(recorded=["orders", "trades"])
    logged_on(core, 1, "pub")
    logged_on(core, 2, "sub")
    return core


def _pub(core, body: dict, topic: str = "orders") -> list:
    """Publish from connection 1; the journal records it produced."""
    actions = send(core, 1, Publish(topic=topic, data=orjson.dumps(body)))
    return [a.record for a in actions if isinstance(a, Append)]


def _bm_sub(core, bookmark: str, *, topic: str = "orders", filter: str | None = None, options: str | None = None):
    actions = send(core, 2, Subscribe(cid="s", sub_id="s", topic=topic, filter=filter, bookmark=bookmark, acks=ACKS,
                                      options=parse_command_options(options)))
    starts = [a for a in actions if isinstance(a, StartReplay)]
    return actions, (starts[0].ticket if starts else None)


def _ids(messages) -> list:
    return [orjson.loads(m.data)["id"] for m in messages if isinstance(m, Delivery)]


def test_replay_then_held_live_then_completed_without_gap_or_duplicate() -> None:
    core = _core()
    journal = [r for n in range(3) for r in _pub(core, {"id": n})]
    actions, ticket = _bm_sub(core, "0")
    assert frames_for(actions, 2) == []  # processed waits for the server to find the start
    assert ticket is not None and ticket.upto == 3
    for n in range(3, 5):  # live, during the replay: held, not sent
        live = send(core, 1, Publish(topic="orders", data=orjson.dumps({"id": n})))
        assert frames_for(live, 2) == []
        journal += [a.record for a in live if isinstance(a, Append)]
    [processed] = frames_for(replay.resolved(core, ticket, 0, NOW), 2)
    assert isinstance(processed, Ack) and processed.ack_type is AckType.PROCESSED
    replayed = frames_for(replay.feed(core, ticket, journal), 2)  # records past upto are ignored
    assert _ids(replayed) == [0, 1, 2]
    assert [m.bookmark for m in replayed] == [r.bookmark for r in journal[:3]]
    assert all(m.sow_key for m in replayed)
    rest = frames_for(replay.finish(core, ticket), 2)
    assert _ids(rest) == [3, 4] and rest[-1].ack_type is AckType.COMPLETED
    assert _ids(frames_for(send(core, 1, Publish(topic="orders", data=b'{"id":5}')), 2)) == [5]  # live now
    assert replay.feed(core, ticket, journal) is None  # the ticket is done


def test_start_after_a_bookmark_filter_regex_and_non_messages_skipped() -> None:
    core = _core()
    journal = _pub(core, {"id": 1, "q": 1}) + _pub(core, {"id": 2, "q": 9}) + _pub(core, {"px": 1}, "trades")
    journal += [a.record for a in send(core, 1, SowDelete(topic="orders", filter="/id = 1"))
                if isinstance(a, Append)]
    journal += _pub(core, {"id": 3, "q": 7})
    _, ticket = _bm_sub(core, journal[0].bookmark, topic="^(orders|trades)$", filter="/q > 5 OR /px = 1")
    replay.resolved(core, ticket, journal[0].sequence, NOW)
    got = frames_for(replay.feed(core, ticket, journal), 2)
    assert [m.topic for m in got] == ["orders", "trades", "orders"]
    assert [m.bookmark for m in got] == [journal[i].bookmark for i in (1, 2, 4)]


def test_bookmark_not_found_policies() -> None:
    core = _core()
    _pub(core, {"id": 1})
    _, ticket = _bm_sub(core, "1|99|", options="bookmark_not_found=fail")
    [failed] = frames_for(replay.resolved(core, ticket, None, NOW), 2)
    assert failed.status.value == "failure" and failed.reason == "invalid bookmark"
    assert core.subs.get(2, "s") is None
    _, ticket = _bm_sub(core, "1|99|", options="bookmark_not_found=now")
    replay.resolved(core, ticket, None, NOW)
    assert ticket.after == ticket.upto == 1
    _, ticket = _bm_sub(core, "1|99|", options="replace")
    actions = replay.resolved(core, ticket, None, NOW)
    assert ticket.after == 0 and any(isinstance(a, Log) and "not in the journal" in a.message for a in actions)


def test_now_bookmarks_do_not_replay_and_bad_ones_fail() -> None:
    core = _core()
    _pub(core, {"id": 1})
    for now in ("0|1|", "recent"):
        actions, ticket = _bm_sub(core, now, options="replace")
        assert ticket is None
        assert [m.ack_type for m in frames_for(actions, 2)] == [AckType.PROCESSED, AckType.COMPLETED]
    for bad in ("yesterday", "12|x|", "20261399T000000"):
        actions, ticket = _bm_sub(core, bad, options="replace")
        [ack] = frames_for(actions, 2)
        assert ticket is None and ack.reason == "invalid bookmark", bad
    [ack] = frames_for(send(core, 2, DeltaSubscribe(cid="d", topic="orders", acks=ACKS, bookmark="0")), 2)
    assert ack.reason == "invalid options"
    [ack] = frames_for(_bm_sub(core, "0", topic="quotes", options="replace")[0], 2)
    assert ack.reason == "invalid topic"


def test_a_timestamp_and_a_list_parse_to_positions_and_oof_is_ignored() -> None:
    core = _core()
    _, ticket = _bm_sub(core, "20260101T000000Z", options="oof")
    assert ticket.position.timestamp == NOW and ticket.subscription.focus is None
    _, ticket = _bm_sub(core, "1|7|,1|3|", options="replace")
    assert ticket.position.sequence == 3


def test_unsubscribe_or_disconnect_stops_the_replay() -> None:
    core = _core()
    journal = _pub(core, {"id": 1})
    _, ticket = _bm_sub(core, "0")
    replay.resolved(core, ticket, 0, NOW)
    send(core, 2, Unsubscribe(cid="u", sub_ids=("s",)))
    assert replay.feed(core, ticket, journal) is None and replay.finish(core, ticket) == []
    _, ticket = _bm_sub(core, "0")
    core.disconnected(2, NOW)
    assert replay.feed(core, ticket, journal) is None


def test_a_replay_that_falls_too_far_behind_is_disconnected() -> None:
    core = _core()
    _, ticket = _bm_sub(core, "0")
    ticket.subscription.replay.limit = 100
    replay.resolved(core, ticket, 0, NOW)
    for n in range(5):
        _pub(core, {"id": n, "pad": "x" * 50})
    assert ticket.overflowed and ticket.subscription.replay.held == []
    actions = replay.feed(core, ticket, [])
    assert any(isinstance(a, Close) and a.conn == 2 for a in actions)
    assert core.subs.get(2, "s") is None
