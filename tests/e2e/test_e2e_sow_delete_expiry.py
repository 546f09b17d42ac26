"""sow_delete (filter, keys, data), unsubscribe, OOF deleted/expired and SOW expiration (issue 7)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ampsctl.client import CommandFailed
from ampsctl.protocol.messages import Oof
from e2e_helpers import connect, json_body, w


async def _fill(client, count: int) -> list[str]:
    keys = []
    for n in range(1, count + 1):
        await w(client.publish("orders", orjson.dumps({"id": n, "qty": n}), ack="processed"))
    result = await w(client.sow("orders", orderby="/id"))
    keys = [record.sow_key for record in result.records]
    return keys


def test_sow_delete_by_filter_keys_and_data_with_oof(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client, watcher = await connect(uri, "writer"), await connect(uri, "watcher")
        keys = await _fill(client, 6)
        _, live = await w(watcher.sow_and_subscribe("orders", options="oof"))
        stats = await w(client.sow_delete("orders", filter="/qty > 4"))
        assert stats.records_deleted == 2 and stats.topic_matches == 6
        stats = await w(client.sow_delete("orders", keys=(keys[0], "bm90aGVyZQ==")))
        assert stats.records_deleted == 1
        stats = await w(client.sow_delete("orders", data=b'{"id":2,"qty":99}'))
        assert stats.records_deleted == 1
        remaining = await w(client.sow("orders", orderby="/id"))
        assert [orjson.loads(r.data)["id"] for r in remaining.records] == [3, 4]
        gone = [await w(live.next()) for _ in range(4)]
        assert all(isinstance(m, Oof) and m.reason == "deleted" for m in gone)
        assert sorted(json_body(m)["id"] for m in gone) == [1, 2, 5, 6]
        assert live.pending() == 0

    broker_run(scenario)


@pytest.mark.parametrize(("header", "body", "reason"), [
    ({"t": "trades", "f": "1=1"}, b"", "invalid topic"),
    ({"t": "orders", "f": "1 =="}, b"", "bad filter"),
    ({"t": "orders", "f": "1=1", "sow_keys": "abc"}, b"", "invalid options"),
    ({"t": "orders"}, b"{not json", "invalid message"),
])
def test_bad_sow_deletes_fail_and_delete_nothing(broker_run, header, body, reason) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "writer")
        await _fill(client, 2)
        with pytest.raises(CommandFailed) as failed:
            await w(client.request({"c": "sow_delete", "a": "processed,stats", **header}, body))
        assert failed.value.reason == reason
        assert len((await w(client.sow("orders"))).records) == 2

    broker_run(scenario)


def test_unsubscribe_one_and_all(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "sub")
        first = await w(client.subscribe("orders", sub_id="one"))
        second = await w(client.subscribe("orders", sub_id="two"))
        third = await w(client.subscribe("trades", sub_id="three"))
        await w(client.unsubscribe("one"))
        await w(client.publish("orders", b'{"id":1}', ack="processed"))
        got = await w(second.next())
        assert got.sub_ids == ("two",) and first.pending() == 0
        await w(client.unsubscribe("all"))
        await w(client.publish("orders", b'{"id":2}', ack="processed"))
        await w(client.publish("trades", b'{"id":3}', ack="processed"))
        await w(client.flush())
        assert second.pending() == 0 and third.pending() == 0
        again = await w(client.subscribe("orders", sub_id="one"))  # the id is free again
        await w(client.publish("orders", b'{"id":4}', ack="processed"))
        assert json_body(await w(again.next())) == {"id": 4}

    broker_run(scenario)


def test_expiration_on_a_timer_sends_oof_expired(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "quotes")
        await w(client.publish("quotes", b'{"sym":"IBM","px":1}', ack="processed", expiration=1))
        await w(client.publish("quotes", b'{"sym":"MSFT","px":2}', ack="processed"))
        result, live = await w(client.sow_and_subscribe("quotes", options="oof"))
        assert len(result.records) == 2
        expired = await w(live.next(), timeout=5)
        assert isinstance(expired, Oof) and expired.reason == "expired" and json_body(expired)["sym"] == "IBM"
        assert [orjson.loads(r.data)["sym"] for r in (await w(client.sow("quotes"))).records] == ["MSFT"]

    broker_run(scenario, tick_interval=0.05)
