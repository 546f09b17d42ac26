"""publish / delta_publish / subscribe / delta_subscribe over real sockets (issue 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.client import CommandFailed
from ampsctl.protocol.messages import Delivery, Oof
from e2e_helpers import connect, json_body, w


def test_publish_reaches_filtered_subscriber_with_bookmark(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        big = await w(sub.subscribe("orders", filter="/qty > 5"))
        every = await w(sub.subscribe("orders"))
        await w(pub.publish("orders", b'{"id":1,"qty":2}', ack="processed"))
        await w(pub.publish("orders", b'{"id":2,"qty":9}', ack="persisted"))
        first = await w(every.next())
        second = await w(every.next())
        assert [json_body(first)["id"], json_body(second)["id"]] == [1, 2]
        got = await w(big.next())
        assert isinstance(got, Delivery) and json_body(got) == {"id": 2, "qty": 9}
        assert set(got.sub_ids) == {big.sub_id, every.sub_id}  # one frame for both subscriptions (sids)
        assert got.bookmark and got.bookmark.endswith("|2|") and got.sow_key
        await pub.close()
        await sub.close()

    broker_run(scenario)


def test_regex_topic_subscription_and_non_sow_topic(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        trades = await w(sub.subscribe("^tr.des$"))
        await w(pub.publish("trades", b'{"px":1}', ack="persisted"))
        await w(pub.publish("news", b"not json at all", ack="processed"))  # no SOW: any bytes go
        message = await w(trades.next())
        assert message.topic == "trades" and message.sow_key is None
        raw = await w(sub.subscribe("news"))
        await w(pub.publish("news", b"plain text", ack="processed"))
        assert (await w(raw.next())).data == b"plain text"

    broker_run(scenario)


def test_delta_publish_merges_and_delta_subscribe_sends_changes(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        await w(pub.publish("orders", b'{"id":3,"status":"new","qty":10}', ack="processed"))
        full = await w(sub.subscribe("orders"))
        other = await connect(uri, "delta-only")
        deltas = await w(other.subscribe("orders", delta=True, options="no_empties"))
        await w(pub.publish("orders", b'{"id":3,"status":"pending"}', delta=True, ack="processed"))
        assert json_body(await w(full.next())) == {"id": 3, "status": "pending", "qty": 10}
        assert json_body(await w(deltas.next())) == {"id": 3, "status": "pending"}
        await w(pub.publish("orders", b'{"id":3,"status":"pending","qty":10}', ack="processed"))  # no change
        await w(pub.publish("orders", b'{"id":3,"status":"done","qty":10}', ack="processed"))
        assert json_body(await w(deltas.next())) == {"id": 3, "status": "done"}

    broker_run(scenario)


def test_oof_match_and_options(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        watch = await w(sub.subscribe("orders", filter="/qty > 5", options="oof,timestamp,select=[/id,/qty]"))
        await w(pub.publish("orders", b'{"id":7,"qty":9,"note":"x"}', ack="processed"))
        got = await w(watch.next())
        assert json_body(got) == {"id": 7, "qty": 9} and got.timestamp
        await w(pub.publish("orders", b'{"id":7,"qty":1,"note":"x"}', ack="processed"))
        oof = await w(watch.next())
        assert isinstance(oof, Oof) and oof.reason == "match" and json_body(oof)["qty"] == 1

    broker_run(scenario)


@pytest.mark.parametrize(("header", "reason"), [
    ({"t": "orders", "f": "/qty >"}, "bad filter"),
    ({"t": "orders", "f": "/qty LIKE '('"}, "bad filter"),
    ({"t": "orders("}, "bad regex topic"),
    ({"t": "orders", "o": "no_such_option"}, "invalid options"),
    ({"t": "orders", "o": "conflation_key=[/id]"}, "invalid options"),
    ({"t": "orders", "bm": "not-a-bookmark"}, "invalid bookmark"),
    ({"t": "quotes", "bm": "0|1|"}, "invalid topic"),
], ids=["filter", "regex-in-filter", "regex-topic", "option", "conflation-key-alone", "bad-bookmark",
        "bookmark-unrecorded"])
def test_bad_subscriptions_fail_and_the_connection_keeps_working(broker_run, header, reason) -> None:
    async def scenario(uri: str, _: Path) -> None:
        sub = await connect(uri, "sub")
        with pytest.raises(CommandFailed) as failed:
            await w(sub.request({"c": "subscribe", "a": "processed", **header}))
        assert failed.value.reason == reason
        live = await w(sub.subscribe("orders"))
        await w(sub.publish("orders", b'{"id":1}', ack="processed"))
        assert json_body(await w(live.next())) == {"id": 1}

    broker_run(scenario)


def test_duplicate_sub_id_and_replace(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        sub = await connect(uri, "sub")
        await w(sub.subscribe("orders", sub_id="s", filter="/id = 1"))
        with pytest.raises(CommandFailed) as failed:
            await w(sub.subscribe("orders", sub_id="s"))
        assert failed.value.reason == "subscription already exists"
        replaced = await w(sub.subscribe("orders", sub_id="s", filter="/id = 2", options="replace"))
        await w(sub.publish("orders", b'{"id":1}', ack="processed"))
        await w(sub.publish("orders", b'{"id":2}', ack="processed"))
        assert json_body(await w(replaced.next())) == {"id": 2}

    broker_run(scenario)
