"""BrokerCore: atomic sow_and_subscribe, fan-out (sids, delta vs full, select, oof focus)."""

from __future__ import annotations

import orjson
import pytest
from core_helpers import frames_for, logged_on, make_core, send

from ampsctl.broker.core.select import SelectList
from ampsctl.protocol.cmdoptions import parse_command_options
from ampsctl.protocol.commands import DeltaSubscribe, Publish, SowAndSubscribe, Subscribe
from ampsctl.protocol.messages import Delivery, Oof, SowBatch


def _pub(core, body: dict, conn: int = 1) -> list:
    return send(core, conn, Publish(topic="orders", data=orjson.dumps(body)))


def _o(text: str):
    return parse_command_options(text)


def test_sow_and_subscribe_splits_updates_exactly_at_the_command() -> None:
    core = make_core()
    logged_on(core, 1)
    logged_on(core, 2)
    for n in range(3):
        _pub(core, {"id": n, "v": "before"})
    snapshot = frames_for(send(core, 2, SowAndSubscribe(cid="s", topic="orders", batch_size=10)), 2)
    [batch] = [m for m in snapshot if isinstance(m, SowBatch)]
    assert sorted(orjson.loads(r.data)["id"] for r in batch.records) == [0, 1, 2]
    live = []
    for n in range(3):
        live += frames_for(_pub(core, {"id": n, "v": "after"}), 2)
    assert [orjson.loads(m.data)["v"] for m in live] == ["after"] * 3


def test_one_frame_per_connection_with_sids_and_full_wins_over_delta() -> None:
    core = make_core()
    logged_on(core, 1)
    logged_on(core, 2)
    _pub(core, {"id": 1, "a": 1, "b": 1})
    send(core, 2, Subscribe(cid="full", topic="orders"))
    send(core, 2, DeltaSubscribe(cid="delta", topic="orders"))
    [message] = frames_for(_pub(core, {"id": 1, "a": 1, "b": 2}), 2)
    assert isinstance(message, Delivery) and message.sub_ids == ("full", "delta")
    assert orjson.loads(message.data) == {"id": 1, "a": 1, "b": 2}  # §7.3: full to both


def test_delta_bodies_no_empties_and_first_sight_is_full() -> None:
    core = make_core()
    logged_on(core, 1)
    logged_on(core, 2)
    _pub(core, {"id": 1, "a": 1})
    send(core, 2, DeltaSubscribe(cid="d", topic="orders", filter="/a > 0", options=_o("no_empties")))
    assert [orjson.loads(m.data) for m in frames_for(_pub(core, {"id": 1, "a": 2}), 2)] == [{"id": 1, "a": 2}]
    assert frames_for(_pub(core, {"id": 1, "a": 2}), 2) == []  # nothing changed
    _pub(core, {"id": 2, "a": 0})  # not matching: never seen
    assert [orjson.loads(m.data) for m in frames_for(_pub(core, {"id": 2, "a": 5, "x": 1}), 2)] == [
        {"id": 2, "a": 5, "x": 1}]


def test_oof_only_for_records_the_subscription_received() -> None:
    core = make_core()
    logged_on(core, 1)
    logged_on(core, 2)
    _pub(core, {"id": 1, "q": 9})  # published before the subscription: never received
    send(core, 2, Subscribe(cid="s", topic="orders", filter="/q > 5", options=_o("oof")))
    assert frames_for(_pub(core, {"id": 1, "q": 1}), 2) == []
    _pub(core, {"id": 2, "q": 9})
    [oof] = frames_for(_pub(core, {"id": 2, "q": 0}), 2)
    assert isinstance(oof, Oof) and oof.reason == "match" and orjson.loads(oof.data)["q"] == 0
    assert frames_for(_pub(core, {"id": 2, "q": -1}), 2) == []  # already out of focus


@pytest.mark.parametrize(("entries", "expected"), [
    (("+/a", "+/c/d"), {"a": 1, "c": {"d": 4}}),
    (("-/b",), {"a": 1, "c": {"d": 4, "e": 5}}),
    (("-/", "+/b"), {"b": 2}),
    (("+/a", "-/a", "+/c"), {"c": {"d": 4, "e": 5}}),
    (("-/c/e",), {"a": 1, "b": 2, "c": {"d": 4}}),
    (("+/missing",), {}),
])
def test_select_lists(entries, expected) -> None:
    doc = {"a": 1, "b": 2, "c": {"d": 4, "e": 5}}
    assert SelectList(entries).apply(doc) == expected
    assert doc == {"a": 1, "b": 2, "c": {"d": 4, "e": 5}}  # the input is a value: untouched
