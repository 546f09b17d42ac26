"""Conflation in the sans-IO core (core/conflation.py): one update per key per interval, with a fake clock."""

from __future__ import annotations

import orjson
from core_helpers import NOW, frames_for, logged_on, make_core, send

from ampsctl.protocol.cmdoptions import parse_command_options
from ampsctl.protocol.commands import DeltaSubscribe, Publish, SowDelete, Subscribe, Unsubscribe
from ampsctl.protocol.messages import Delivery, Oof

MS = 1_000


def _core():
    core = make_core()
    logged_on(core, 1)
    logged_on(core, 2)
    return core


def _pub(core, body: dict, at: int, topic: str = "orders") -> list:
    return send(core, 1, Publish(topic=topic, data=orjson.dumps(body)), now=at)


def _sub(core, options: str, *, delta: bool = False, topic: str = "orders", filter: str | None = None) -> list:
    kind = DeltaSubscribe if delta else Subscribe
    return send(core, 2, kind(cid="c", topic=topic, filter=filter, options=parse_command_options(options)))


def _release(core, at: int) -> list:
    return frames_for(core.conflation.release(core.subs, at), 2)


def _bodies(messages) -> list:
    return [orjson.loads(m.data) for m in messages]


def test_latest_state_per_sow_key_once_per_interval() -> None:
    core = _core()
    _sub(core, "conflation=100ms")
    for n, t in enumerate((0, 10, 20)):
        assert frames_for(_pub(core, {"id": 1, "v": n}, NOW + t * MS), 2) == []
    _pub(core, {"id": 2, "v": 0}, NOW + 30 * MS)
    assert core.conflation.next_deadline() == NOW + 100 * MS
    assert _release(core, NOW + 99 * MS) == []
    [first] = _release(core, NOW + 100 * MS)
    assert isinstance(first, Delivery) and orjson.loads(first.data) == {"id": 1, "v": 2}
    assert first.bookmark is None and first.sow_key
    assert core.conflation.next_deadline() == NOW + 130 * MS
    assert _bodies(_release(core, NOW + 130 * MS)) == [{"id": 2, "v": 0}]
    assert core.conflation.next_deadline() is None
    _pub(core, {"id": 1, "v": 3}, NOW + 140 * MS)  # a new span opens with the next update
    assert _bodies(_release(core, NOW + 240 * MS)) == [{"id": 1, "v": 3}]


def test_conflation_key_fields_and_a_topic_without_sow() -> None:
    core = _core()
    _sub(core, "conflation=1s,conflation_key=[/sym]", topic="ticks")
    for n, sym in enumerate(("A", "B", "A", "A", "B")):
        _pub(core, {"sym": sym, "n": n}, NOW + n, topic="ticks")
    assert _bodies(_release(core, NOW + 1_000_000 + 10)) == [{"sym": "A", "n": 3}, {"sym": "B", "n": 4}]
    core2 = _core()
    _sub(core2, "conflation=1s", topic="ticks")  # no SOW key, no conflation_key: the topic's latest
    for n in range(3):
        _pub(core2, {"n": n}, NOW + n, topic="ticks")
    assert _bodies(_release(core2, NOW + 2_000_000)) == [{"n": 2}]


def test_delta_subscription_gets_the_merged_deltas_of_the_interval() -> None:
    core = _core()
    _pub(core, {"id": 1, "a": 1, "b": 1, "c": 1}, NOW)
    _sub(core, "conflation=50ms", delta=True)
    _pub(core, {"id": 1, "a": 2, "b": 1, "c": 1}, NOW + 1)
    _pub(core, {"id": 1, "a": 2, "b": 5, "c": 1}, NOW + 2)
    assert _bodies(_release(core, NOW + 60 * MS)) == [{"id": 1, "a": 2, "b": 5}]
    _pub(core, {"id": 2, "x": 1}, NOW + 70 * MS)  # an insert: full message
    _pub(core, {"id": 2, "x": 2}, NOW + 71 * MS)
    assert _bodies(_release(core, NOW + 200 * MS)) == [{"id": 2, "x": 2}]


def test_filter_oof_and_delete_are_judged_on_the_latest_state() -> None:
    core = _core()
    _pub(core, {"id": 1, "q": 9}, NOW)
    send(core, 2, Subscribe(cid="c", topic="orders", filter="/q > 5",
                            options=parse_command_options("conflation=10ms,oof")))
    _pub(core, {"id": 1, "q": 8}, NOW + 1)
    assert _bodies(_release(core, NOW + 20 * MS)) == [{"id": 1, "q": 8}]
    _pub(core, {"id": 1, "q": 7}, NOW + 30 * MS)
    _pub(core, {"id": 1, "q": 1}, NOW + 31 * MS)  # left the filter within the interval
    [oof] = _release(core, NOW + 50 * MS)
    assert isinstance(oof, Oof) and oof.reason == "match"
    _pub(core, {"id": 1, "q": 9}, NOW + 60 * MS)
    send(core, 1, SowDelete(topic="orders", filter="/id = 1"), now=NOW + 61 * MS)
    assert _release(core, NOW + 80 * MS) == []  # back and gone within one interval: nothing to tell
    _pub(core, {"id": 1, "q": 9}, NOW + 90 * MS)
    assert _bodies(_release(core, NOW + 100 * MS)) == [{"id": 1, "q": 9}]
    _pub(core, {"id": 1, "q": 6}, NOW + 110 * MS)
    send(core, 1, SowDelete(topic="orders", filter="/id = 1"), now=NOW + 111 * MS)
    [gone] = _release(core, NOW + 120 * MS)
    assert isinstance(gone, Oof) and gone.reason == "deleted" and orjson.loads(gone.data) == {"id": 1, "q": 6}


def test_unconflated_subscribers_are_not_delayed_and_gone_subscriptions_release_nothing() -> None:
    core = _core()
    logged_on(core, 3)
    _sub(core, "conflation=100ms")
    send(core, 3, Subscribe(cid="plain", topic="orders"))
    assert _bodies(frames_for(_pub(core, {"id": 1}, NOW), 3)) == [{"id": 1}]
    send(core, 2, Unsubscribe(cid="u", sub_ids=("c",)))
    assert _release(core, NOW + 100 * MS) == [] and core.conflation.next_deadline() is None


def test_bad_conflation_options_are_refused() -> None:
    core = _core()
    for options in ("conflation_key=[/id]", "conflation=0s", "conflation=banana"):
        actions = send(core, 2, Subscribe(cid="c", topic="orders", acks=frozenset({_processed()}),
                                          options=parse_command_options(options))) if options != "conflation=banana" \
            else core.receive(2, _raw({"c": "subscribe", "t": "orders", "cid": "c", "a": "processed",
                                       "o": options}), NOW)
        [ack] = frames_for(actions, 2)
        assert ack.reason == "invalid options", options


def _processed():
    from ampsctl.protocol.acks import AckType

    return AckType.PROCESSED


def _raw(header: dict):
    from ampsctl.protocol import decode_frames
    from ampsctl.protocol.frames import Frame, encode_frame

    [frame] = decode_frames(encode_frame(header, b""))
    return Frame(frame.header, frame.body)
