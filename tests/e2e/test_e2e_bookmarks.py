"""Bookmark subscriptions replay the journal, then go live with no gap and no duplicate (issue 7, §9)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
import pytest

from ampsctl.broker.run import running_broker
from ampsctl.client import CommandFailed
from ampsctl.journal.bookmarks import format_timestamp
from ampsctl.protocol.messages import Delivery
from e2e_helpers import connect, json_body, run, settings_for, w


async def _publish(client, topic: str, first: int, count: int, **extra) -> None:
    for n in range(first, first + count):
        await w(client.publish(topic, orjson.dumps({"id": n, **extra}), ack="processed"))


async def _take(sub, count: int) -> list[Delivery]:
    return [await w(sub.next()) for _ in range(count)]


def _ids(messages) -> list[int]:
    return [json_body(m)["id"] for m in messages]


async def _nothing_more(client, sub, topic: str = "trades") -> None:
    """A marker published now must be the next message: nothing extra is queued before it."""
    await w(client.publish(topic, b'{"id":-1}', ack="processed"))
    assert _ids([await w(sub.next())]) == [-1]


def test_replay_from_epoch_then_live(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        await _publish(pub, "trades", 0, 5)
        replay = await w(sub.subscribe("trades", bookmark="0", sub_id="r", options="oof"))  # oof: ignored
        await w(replay.completed())
        assert replay.pending() == 5  # every replayed message came before the completed ack
        got = await _take(replay, 5)
        assert _ids(got) == [0, 1, 2, 3, 4]
        assert [m.bookmark.split("|")[1] for m in got] == ["1", "2", "3", "4", "5"]
        assert len({m.bookmark.split("|")[0] for m in got}) == 1  # the publisher's hash
        await _publish(pub, "trades", 5, 1)
        assert _ids([await w(replay.next())]) == [5]
        await _nothing_more(pub, replay)

    broker_run(scenario)


def test_replay_from_a_bookmark_a_timestamp_and_a_list(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        await _publish(pub, "orders", 0, 3)
        middle = time.time_ns() // 1000  # every record after this was logged at or after it
        await _publish(pub, "orders", 3, 3)
        everything = await w(sub.subscribe("orders", bookmark="0", sub_id="all"))
        await w(everything.completed())
        marks = [m.bookmark for m in await _take(everything, 6)]

        from_bm = await w(sub.subscribe("orders", bookmark=marks[1], sub_id="bm"))
        await w(from_bm.completed())
        assert _ids(await _take(from_bm, from_bm.pending())) == [2, 3, 4, 5]

        from_ts = await w(sub.subscribe("orders", bookmark=format_timestamp(middle), sub_id="ts"))
        await w(from_ts.completed())
        assert _ids(await _take(from_ts, from_ts.pending())) == [3, 4, 5]

        listed = await w(sub.subscribe("orders", bookmark=f"{marks[4]},{marks[2]}", sub_id="list"))
        await w(listed.completed())
        assert _ids(await _take(listed, listed.pending())) == [3, 4, 5]  # the earliest of the list

        future = await w(sub.subscribe("orders", bookmark="29990101T000000Z", sub_id="future"))
        await w(future.completed())
        assert future.pending() == 0

    broker_run(scenario)


@pytest.mark.parametrize("bookmark", ["0|1|", "recent"])
def test_now_bookmarks_replay_nothing(broker_run, bookmark) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        await _publish(pub, "trades", 0, 3)
        live = await w(sub.subscribe("trades", bookmark=bookmark))
        await w(live.completed())
        await _publish(pub, "trades", 3, 1)
        got = await w(live.next())
        assert _ids([got]) == [3] and got.bookmark.endswith("|4|")

    broker_run(scenario)


def test_regex_topic_and_filter_apply_during_replay_and_deletes_are_not_replayed(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        await w(pub.publish("orders", b'{"id":1,"qty":9}', ack="processed"))
        await w(pub.publish("trades", b'{"id":2,"qty":9}', ack="processed"))
        await w(pub.publish("orders", b'{"id":3,"qty":1}', ack="processed"))
        await w(pub.sow_delete("orders", filter="/id = 1"))
        await w(pub.publish("news", b'{"id":4,"qty":9}', ack="processed"))  # not recorded
        replay = await w(sub.subscribe("^(orders|trades|news)$", filter="/qty > 5", bookmark="0",
                                       options="select=[/id]"))
        await w(replay.completed())
        got = await _take(replay, replay.pending())
        assert [(m.topic, json_body(m)) for m in got] == [("orders", {"id": 1}), ("trades", {"id": 2})]
        assert got[0].sow_key and got[1].sow_key is None

    broker_run(scenario)


@pytest.mark.parametrize(("option", "replayed"), [
    ("bookmark_not_found=epoch", [0, 1, 2]), ("bookmark_not_found=now", []), (None, [0, 1, 2]),
])
def test_unknown_bookmarks(broker_run, option, replayed) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        await _publish(pub, "trades", 0, 3)
        for n, unknown in enumerate(["1|999|", "1|2|"]):  # past the end; right sequence, wrong publisher hash
            replay = await w(sub.subscribe("trades", bookmark=unknown, options=option, sub_id=f"u{n}"))
            await w(replay.completed())
            assert _ids(await _take(replay, replay.pending())) == replayed

    broker_run(scenario)


def test_failures_bookmark_not_found_fail_invalid_bookmark_and_delta(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, sub = await connect(uri, "pub"), await connect(uri, "sub")
        await _publish(pub, "trades", 0, 2)
        with pytest.raises(CommandFailed) as failed:
            await w(sub.subscribe("trades", bookmark="1|999|", options="bookmark_not_found=fail", sub_id="f"))
        assert failed.value.reason == "invalid bookmark"
        for bad in ("yesterday", "1|2", "20261340T000000Z", "0,junk"):
            with pytest.raises(CommandFailed) as failed:
                await w(sub.subscribe("trades", bookmark=bad))
            assert failed.value.reason == "invalid bookmark", bad
        with pytest.raises(CommandFailed) as failed:
            await w(sub.request({"c": "delta_subscribe", "t": "orders", "a": "processed", "bm": "0"}))
        assert failed.value.reason == "invalid options"
        with pytest.raises(CommandFailed) as failed:
            await w(sub.subscribe("trades", bookmark="0", options="conflation=1s"))
        assert failed.value.reason == "invalid options"
        again = await w(sub.subscribe("trades", bookmark="0", sub_id="f"))  # the failed sub_id is free
        await w(again.completed())
        assert _ids(await _take(again, again.pending())) == [0, 1]

    broker_run(scenario)


def test_no_gap_no_duplicate_while_publishing_during_a_long_replay(tmp_path: Path) -> None:
    journaled, during = 4000, 1500

    async def scenario(uri: str) -> None:
        pub, other, sub = await connect(uri, "pub"), await connect(uri, "other"), await connect(uri, "sub")
        for n in range(journaled):
            await pub.publish("trades", orjson.dumps({"id": n}))  # no ack: pipelined
        await w(pub.flush())

        async def keep_publishing() -> None:
            for n in range(journaled, journaled + during):
                await other.publish("trades", orjson.dumps({"id": n}))
                if n % 100 == 0:
                    await w(other.flush())  # paced, so part of it lands while the replay runs
            await w(other.flush())

        publishing = asyncio.create_task(keep_publishing())
        await asyncio.sleep(0)  # let the publisher start first
        replay = await w(sub.subscribe("trades", bookmark="0"))
        assert 0 < other._seq < during and not publishing.done()  # the publisher runs on during the replay
        got = [_ids([await w(replay.next())])[0] for _ in range(journaled + during)]
        await w(publishing)
        await w(replay.completed())
        assert got == list(range(journaled + during))
        await _nothing_more(pub, replay)

    async def main() -> None:
        async with running_broker(settings_for(tmp_path)) as broker:
            await scenario(broker.uris[0])

    run(main(), timeout=90)


def test_replay_survives_a_restart(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    marks: list[str] = []

    async def first() -> None:
        async with running_broker(settings) as broker:
            pub = await connect(broker.uris[0], "pub")
            live = await w(pub.subscribe("trades"))
            await _publish(pub, "trades", 0, 4)
            marks.extend(m.bookmark for m in await _take(live, 4))
            await pub.close()

    async def second() -> None:
        async with running_broker(settings) as broker:
            sub = await connect(broker.uris[0], "sub")
            replay = await w(sub.subscribe("trades", bookmark=marks[1]))
            await w(replay.completed())
            got = await _take(replay, replay.pending())
            assert _ids(got) == [2, 3] and [m.bookmark for m in got] == marks[2:]
            pub = await connect(broker.uris[0], "pub")
            await _publish(pub, "trades", 4, 1)
            message = await w(replay.next())
            assert _ids([message]) == [4] and message.bookmark.endswith("|5|")

    run(first())
    run(second())


def test_a_subscriber_leaving_mid_replay_stops_it_and_others_are_served(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub = await connect(uri, "pub")
        for n in range(3000):
            await pub.publish("trades", orjson.dumps({"id": n, "pad": "x" * 200}))
        await w(pub.flush())
        leaving = await connect(uri, "leaving")
        await w(leaving.subscribe("trades", bookmark="0"))
        await leaving.close()  # mid-replay: the replay task must stop, not write to a dead connection
        quitting = await connect(uri, "quitting")
        await w(quitting.subscribe("trades", bookmark="0", sub_id="q"))
        await w(quitting.unsubscribe("q"))  # mid-replay too
        await w(quitting.flush())  # the connection goes on working
        stayer = await connect(uri, "stayer")
        replay = await w(stayer.subscribe("trades", bookmark="0"))
        await w(replay.completed(), timeout=30)
        assert _ids(await _take(replay, replay.pending())) == list(range(3000))
        await _nothing_more(pub, replay)

    broker_run(scenario)


def test_a_client_that_half_closes_after_a_bookmark_subscribe_still_gets_the_whole_replay(broker_run) -> None:
    """A client that sends its commands and then ends its input (shutdown(SHUT_WR), as a script
    piping commands does) is owed the replay it asked for, as it is owed held persisted acks: the
    broker closes the connection once the replay's completed ack is sent, not after the first chunk."""
    from ampsctl.protocol.frames import FrameDecoder, encode_frame
    from test_e2e_bad_input import LOGON, _hung_up, _raw

    async def scenario(uri: str, _: Path) -> None:
        publisher = await connect(uri, "pub")
        for n in range(1500):  # three replay chunks
            await publisher.publish("orders", b'{"id":%d}' % n)
        await w(publisher.flush())
        reader, writer = await _raw(uri)
        writer.write(LOGON + encode_frame({"c": "subscribe", "t": "orders", "bm": "0", "cid": "s",
                                           "a": "processed,completed"}))
        writer.write_eof()
        await w(writer.drain())
        frames = FrameDecoder().feed(await _hung_up(reader))
        writer.close()
        assert [orjson.loads(f.body)["id"] for f in frames if f.header["c"] == "p"] == list(range(1500))
        assert frames[-1].header["cid"] == "s" and frames[-1].header["a"] == "completed"

    broker_run(scenario)
