"""sow, sow_and_subscribe, sow_and_delta_subscribe over real sockets (issue 7)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from ampsctl.client import CommandFailed
from ampsctl.protocol.messages import Delivery, GroupBegin, GroupEnd, Oof, SowBatch
from e2e_helpers import connect, json_body, w


async def _fill(client, count: int = 5) -> None:
    for n in range(1, count + 1):
        await w(client.publish("orders", orjson.dumps({"id": n, "qty": n * 10, "sym": "ab"[n % 2]}), ack="processed"))


def test_sow_filter_orderby_top_n_batches_and_stats(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "q")
        await _fill(client)
        result = await w(client.sow("orders", filter="/qty >= 20", orderby="/qty DESC", top_n=3, batch_size=2))
        assert [orjson.loads(r.data)["id"] for r in result.records] == [5, 4, 3]
        assert result.batches == 2 and all(r.sow_key for r in result.records)
        assert (result.stats.matches, result.stats.topic_matches, result.stats.records_returned) == (4, 5, 3)
        chosen = await w(client.sow("orders", options="select=[/id],skip_n=1,top_n=2", orderby="/id"))
        assert [orjson.loads(r.data) for r in chosen.records] == [{"id": 2}, {"id": 3}]
        by_key = await w(client.sow("orders", sow_keys=(result.records[0].sow_key,)))
        assert [orjson.loads(r.data)["id"] for r in by_key.records] == [5]

    broker_run(scenario)


def test_sow_reply_order_on_the_wire(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "q")
        await _fill(client, 3)
        replies = await w(client.request({"c": "sow", "t": "orders", "bs": 10, "a": "processed,completed,stats"},
                                         until="stats"))
        kinds = [type(r).__name__ if not hasattr(r, "ack_type") else r.ack_type.value for r in replies]
        assert kinds == ["processed", "GroupBegin", "SowBatch", "GroupEnd", "completed", "stats"]

    broker_run(scenario)


@pytest.mark.parametrize(("header", "reason"), [
    ({"t": "trades"}, "invalid topic"),  # recorded, but no SOW
    ({"t": "orders", "f": "/qty >>> 1"}, "bad filter"),
    ({"t": "orders", "orderby": "/qty SIDEWAYS"}, "invalid order by"),
    ({"t": "orders", "o": "projection=[COUNT(/id) AS /n]"}, "invalid options"),
])
def test_bad_queries_fail(broker_run, header, reason) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "q")
        with pytest.raises(CommandFailed) as failed:
            await w(client.request({"c": "sow", "a": "processed,completed", **header}))
        assert failed.value.reason == reason
        assert (await w(client.sow("orders"))).stats is not None  # still served

    broker_run(scenario)


def test_sow_on_a_pattern_topic_spans_concrete_topics(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "q")
        await w(client.publish("desk_fx", b'{"id":1,"v":"a"}', ack="processed"))
        await w(client.publish("desk_rates", b'{"id":1,"v":"b"}', ack="processed"))
        both = await w(client.sow("^desk_", orderby="/v"))
        assert [orjson.loads(r.data)["v"] for r in both.records] == ["a", "b"]
        one = await w(client.sow("desk_fx"))
        assert len(one.records) == 1

    broker_run(scenario)


def test_sow_and_subscribe_is_atomic_under_concurrent_publishing(broker_run) -> None:
    """Publishers keep writing while the query runs: every update is in the snapshot or in the
    live stream after group_end, never in both and never missing."""

    async def scenario(uri: str, _: Path) -> None:
        publisher, subscriber = await connect(uri, "pub"), await connect(uri, "sub")
        total = 400

        async def publish_all() -> None:
            for n in range(total):
                await publisher.publish("orders", orjson.dumps({"id": n % 50, "n": n}))
            await w(publisher.flush())

        writing = asyncio.create_task(publish_all())
        await asyncio.sleep(0)  # let the first publishes go out: the snapshot is taken mid-stream
        result, live = await w(subscriber.sow_and_subscribe("orders", batch_size=7))
        await w(writing)
        latest = {orjson.loads(r.data)["id"]: orjson.loads(r.data)["n"] for r in result.records}
        seen = [n for n in latest.values()]
        while len(latest) < 50 or max(latest.values()) < total - 1 or sorted(latest.values())[0] < total - 50:
            message = await w(live.next())
            body = json_body(message)
            assert body["n"] > latest.get(body["id"], -1), "an update arrived twice or out of order"
            latest[body["id"]] = body["n"]
            seen.append(body["n"])
        assert sorted(latest.values()) == list(range(total - 50, total))
        assert live.pending() == 0 and len(seen) == len(set(seen))

    broker_run(scenario)


def test_sow_and_subscribe_wire_order_and_oof_on_query_records(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "sub")
        await _fill(client, 2)
        replies = await w(client.request({"c": "sow_and_subscribe", "t": "orders", "f": "/qty > 5", "o": "oof",
                                          "sub_id": "s", "bs": 10, "a": "processed,completed"},
                                         until="completed"))
        assert [type(r) for r in replies[1:4]] == [GroupBegin, SowBatch, GroupEnd]
        live = client.wire.subscription_queue("s")
        await w(client.sow_delete("orders", keys=(replies[2].records[0].sow_key,)))
        oof = await w(live.get())
        assert isinstance(oof, Oof) and oof.reason == "deleted" and orjson.loads(oof.data)["id"] == 1

    broker_run(scenario)


def test_sow_and_delta_subscribe(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "sub")
        await w(client.publish("orders", b'{"id":1,"a":1,"b":1}', ack="processed"))
        result, live = await w(client.sow_and_subscribe("orders", delta=True))
        assert [orjson.loads(r.data) for r in result.records] == [{"id": 1, "a": 1, "b": 1}]
        await w(client.publish("orders", b'{"id":1,"a":1,"b":2}', ack="processed"))
        await w(client.publish("orders", b'{"id":2,"a":5}', ack="processed"))
        delta = await w(live.next())
        assert isinstance(delta, Delivery) and json_body(delta) == {"id": 1, "b": 2}
        assert json_body(await w(live.next())) == {"id": 2, "a": 5}  # an insert goes out whole

    broker_run(scenario)


def test_sow_and_subscribe_on_a_topic_without_sow_goes_live(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "sub")
        result, live = await w(client.sow_and_subscribe("trades"))
        assert result.records == [] and result.stats is not None
        await w(client.publish("trades", b'{"x":1}', ack="processed"))
        assert json_body(await w(live.next())) == {"x": 1}

    broker_run(scenario)


@pytest.mark.parametrize("bookmark", ["0", "0|1|", "20200101T000000Z", "123|4|"])
def test_a_bookmark_on_a_query_of_topics_without_history_is_ignored(broker_run, bookmark) -> None:
    """§5.6/§5.7 [DOC]: "for SOW topics where historical query is not enabled, AMPS ignores this
    parameter" (bm): the query returns the current state, and sow_and_subscribe goes live."""
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "q")
        await _fill(client, 2)
        replies = await w(client.request({"c": "sow", "t": "orders", "bm": bookmark, "bs": 10,
                                           "a": "processed,completed"}, until="completed"))
        batch = next(r for r in replies if isinstance(r, SowBatch))
        assert sorted(orjson.loads(record.data)["id"] for record in batch.records) == [1, 2]
        live = client.wire.subscription_queue("s")
        replies = await w(client.request({"c": "sow_and_subscribe", "t": "orders", "bm": bookmark, "sub_id": "s",
                                          "a": "processed,completed"}, until="completed"))
        assert sum(len(r.records) for r in replies if isinstance(r, SowBatch)) == 2
        await w(client.publish("orders", b'{"id":3,"qty":1}', ack="processed"))
        assert json_body(await w(live.get())) == {"id": 3, "qty": 1}

    broker_run(scenario)


_HISTORY_CONFIG = ("<Topic><Name>hist</Name><MessageType>json</MessageType><Key>/id</Key>"
                   "<Durability>transient</Durability>"
                   "<History><Window>1h</Window><Granularity>0s</Granularity></History></Topic></SOW>")


def test_a_sow_query_with_a_timestamp_bookmark_on_a_topic_with_history_returns_the_state_then(broker_run) -> None:
    """§9 [DOC] (spec/messages.md H1-H4): a sow with a timestamp in bm returns the History topic's
    state as of that time; a record deleted since is still there, one published since is not."""
    import time

    from e2e_helpers import CONFIG
    from ampsctl.journal.bookmarks import format_timestamp

    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "q")
        await w(client.publish("hist", b'{"id":1,"p":1}', ack="processed"))
        await w(client.publish("hist", b'{"id":2,"p":1}', ack="processed"))
        then = format_timestamp(time.time_ns() // 1000)  # after those two, before what follows
        await w(client.publish("hist", b'{"id":1,"p":2}', ack="processed"))
        await w(client.publish("hist", b'{"id":3,"p":1}', ack="processed"))
        await w(client.sow_delete("hist", keys=(), filter="/id = 2"))

        async def query(bookmark: str | None, **header: object) -> list[dict]:
            replies = await w(client.request({"c": "sow", "t": "hist", "bs": 10, "a": "processed,completed",
                                              **({"bm": bookmark} if bookmark else {}), **header}, until="completed"))
            return sorted((orjson.loads(record.data) for reply in replies if isinstance(reply, SowBatch)
                           for record in reply.records), key=lambda doc: doc["id"])

        assert await query(then) == [{"id": 1, "p": 1}, {"id": 2, "p": 1}]
        assert await query(then, f="/p = 1", orderby="/id DESC") == [{"id": 1, "p": 1}, {"id": 2, "p": 1}]
        assert await query(None) == [{"id": 1, "p": 2}, {"id": 3, "p": 1}]  # now: the current state
        assert await query("0|1|") == [{"id": 1, "p": 2}, {"id": 3, "p": 1}]
        assert await query("0") == []  # the beginning: before anything was written
        for bookmark, reason in (("123|4|", "invalid options"), ("garbage", "invalid bookmark")):
            with pytest.raises(CommandFailed) as failed:
                await w(client.request({"c": "sow", "t": "hist", "bm": bookmark, "a": "processed"}))
            assert failed.value.reason == reason
        while True:  # before the Window: empty until the first tick prunes the history, refused after
            try:
                assert await query("20000101T000000Z") == []
            except CommandFailed as failed:
                assert failed.reason == "invalid bookmark"
                break
            await asyncio.sleep(0.01)
        with pytest.raises(CommandFailed) as failed:  # as of then, and live from there: not served yet
            await w(client.request({"c": "sow_and_subscribe", "t": "hist", "bm": then, "a": "processed"}))
        assert failed.value.reason == "invalid options"

    broker_run(scenario, CONFIG.replace("</SOW>", _HISTORY_CONFIG), tick_interval=0.05)
