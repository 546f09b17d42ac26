"""Stateful features and their interactions over real sockets (a fuzz round's findings, issue 7).

Each test is a scenario that once went wrong: a refused command that had already changed some
of the state, state lost over a restart, a replaced subscription that left its client behind.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ampsctl.broker.run import running_broker
from ampsctl.client import CommandFailed
from ampsctl.protocol.commands import Logon
from ampsctl.protocol.frames import FrameDecoder, encode_frame
from e2e_helpers import connect, json_body, run, settings_for, w


def test_a_delete_by_data_over_topics_with_other_keys_is_refused_whole(broker_run) -> None:
    """A pattern sow_delete by data whose message lacks one topic's key fields: the other topics'
    deletes were applied and numbered but never journaled, and the broker stopped on the
    journal sequence mismatch. Now the command is refused before anything is written."""

    async def scenario(uri: str, _: Path) -> None:
        client, watcher = await connect(uri, "c"), await connect(uri, "watcher")
        _, sub = await w(watcher.sow_and_subscribe("orders", options="oof", sub_id="w"))
        await w(client.publish("orders", b'{"id":1}', ack="processed"))
        await w(client.publish("quotes", b'{"sym":"A"}', ack="processed"))
        assert json_body(await w(sub.next())) == {"id": 1}
        with pytest.raises(CommandFailed) as failed:
            await w(client.sow_delete("^(orders|quotes)$", data=b'{"id":1}'))  # quotes is keyed by /sym
        assert failed.value.reason == "invalid sow key"
        await w(client.publish("orders", b'{"id":2}', ack="persisted"))  # the broker goes on
        records = (await w(client.sow("orders"))).records
        assert sorted(json_body(r)["id"] for r in records) == [1, 2]  # nothing was deleted
        assert json_body(await w(sub.next())) == {"id": 2}  # and no OOF was sent for id 1
        deleted = await w(client.sow_delete("^(orders|quotes)$", data=b'{"id":1,"sym":"A"}'))
        assert deleted.records_deleted == 2

    broker_run(scenario)


def test_a_publisher_is_remembered_over_a_restart(tmp_path: Path) -> None:
    """§4.2: the logon ack carries the last ``s`` and bookmark of the client name, and a publish
    store that resends what it sent before the restart must find those publishes dropped as
    duplicates. The broker forgot its publishers on restart: ``s`` 0, and every resend stored
    and journaled again."""
    settings = settings_for(tmp_path)
    marks: list[str] = []

    async def before() -> None:
        async with running_broker(settings) as broker:
            publisher = await connect(broker.uris[0], "pub")
            live = await w(publisher.subscribe("orders"))
            for n in range(3):
                await w(publisher.publish("orders", b'{"id":%d,"v":"first"}' % n, ack="persisted"))
                marks.append((await w(live.next())).bookmark)
            await w(publisher.publish("trades", b'{"id":9}', ack="persisted"))  # no sequence: not tracked
            await w(publisher.request({"c": "publish", "t": "trades", "a": "persisted"}, b'{"id":10}',
                                      until="persisted"))

    async def after() -> None:
        async with running_broker(settings) as broker:
            publisher = await connect(broker.uris[0], "pub")
            ack = publisher.logon_ack
            assert ack is not None and ack.seq == 4
            assert ack.bookmark is not None and ack.bookmark.endswith("|5|")  # the unsequenced publish
            other = await connect(broker.uris[0], "other")
            assert other.logon_ack is not None and other.logon_ack.seq == 0 and other.logon_ack.bookmark is None
            resent = await w(publisher.request({"c": "publish", "t": "orders", "s": 2, "a": "processed"},
                                               b'{"id":1,"v":"resent"}'))
            assert resent[-1].reason == "duplicate"
            values = {json_body(r)["id"]: json_body(r)["v"] for r in (await w(publisher.sow("orders"))).records}
            assert values == {0: "first", 1: "first", 2: "first"}
            await w(publisher.publish("orders", b'{"id":3,"v":"new"}', ack="persisted"))  # s 5 goes on

    run(before())
    run(after())


async def _fill_orders(client, quantities: dict[int, int]) -> None:
    for id_, qty in quantities.items():
        await w(client.publish("orders", b'{"id":%d,"qty":%d}' % (id_, qty), ack="processed"))


def _ids(records) -> list[int]:
    return sorted(json_body(r)["id"] for r in records)


def test_replacing_a_sow_and_subscribe_sends_only_new_records_and_oof_for_those_that_left(broker_run) -> None:
    """§5.7 [DOC]: a replaced sow_and_subscribe re-runs the query and delivers only the records not
    already in the client's result set; with ``oof``, a record the new filter no longer matches
    is out of focus (§10). The broker sent the whole result again, said nothing about the
    records that left, and forgot they were ever in focus."""

    async def scenario(uri: str, _: Path) -> None:
        publisher, client = await connect(uri, "pub"), await connect(uri, "sub")
        await _fill_orders(publisher, {1: 5, 2: 15, 3: 25})
        first, sub = await w(client.sow_and_subscribe("orders", filter="/qty > 10", options="oof", sub_id="s"))
        assert _ids(first.records) == [2, 3]
        again, _ = await w(client.sow_and_subscribe("orders", filter="/qty > 20 OR /id = 1", options="oof,replace",
                                                    sub_id="s"))
        assert _ids(again.records) == [1]  # 3 is already there; 2 left
        assert again.stats is not None and again.stats.records_returned == 1
        oof = await w(sub.next())
        assert (oof.reason.value, json_body(oof)) == ("match", {"id": 2, "qty": 15})
        assert sub.pending() == 0
        await w(publisher.sow_delete("orders", filter="/id IN (1, 3)"))  # both in focus under the new filter
        gone = [await w(sub.next()) for _ in range(2)]
        assert sorted((m.reason.value, json_body(m)["id"]) for m in gone) == [("deleted", 1), ("deleted", 3)]
        await w(publisher.sow_delete("orders", filter="/id = 2"))  # out of focus already: nothing
        await w(publisher.publish("orders", b'{"id":4,"qty":30}', ack="processed"))
        assert json_body(await w(sub.next())) == {"id": 4, "qty": 30}

    broker_run(scenario)


def test_replacing_without_oof_skips_the_records_the_old_filter_matched(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        publisher, client = await connect(uri, "pub"), await connect(uri, "sub")
        await _fill_orders(publisher, {1: 5, 2: 15, 3: 25})
        await w(client.sow_and_subscribe("orders", filter="/qty > 10", sub_id="s"))
        again, sub = await w(client.sow_and_subscribe("orders", options="replace", sub_id="s"))
        assert _ids(again.records) == [1]
        assert sub.pending() == 0

    broker_run(scenario)


def test_replacing_a_subscribe_keeps_its_focus(broker_run) -> None:
    """A replaced ``subscribe`` with ``oof`` keeps the records it was sent in focus while the new
    filter matches them (a later delete is reported) and reports the others out of focus."""

    async def scenario(uri: str, _: Path) -> None:
        publisher, client = await connect(uri, "pub"), await connect(uri, "sub")
        sub = await w(client.subscribe("orders", filter="/qty > 10", options="oof", sub_id="s"))
        await _fill_orders(publisher, {1: 15, 2: 25})
        assert [json_body(await w(sub.next()))["id"] for _ in range(2)] == [1, 2]
        await w(client.subscribe("orders", filter="/qty > 20", options="oof,replace", sub_id="s"))
        left = await w(sub.next())
        assert (left.reason.value, json_body(left)) == ("match", {"id": 1, "qty": 15})
        await w(publisher.sow_delete("orders", filter="/id = 2"))
        deleted = await w(sub.next())
        assert (deleted.reason.value, json_body(deleted)["id"]) == ("deleted", 2)

    broker_run(scenario)


async def _raw_replies(uri: str, frames: list[dict], until_cid: str) -> list[dict]:
    """Send ``frames`` after a logon on a raw socket (commands without ``cid``, which the client
    library always sets); the headers received up to the ack of ``until_cid``."""
    host, port = uri.removeprefix("tcp://").split("/")[0].rsplit(":", 1)
    reader, writer = await w(asyncio.open_connection(host, int(port)))
    writer.write(Logon(cid="logon", client_name="raw").encode() + b"".join(encode_frame(f) for f in frames))
    decoder, received = FrameDecoder(), []
    while not any(frame.header.get("cid") == until_cid for frame in received):
        received += decoder.feed(await w(reader.read(1 << 16)))
    writer.close()
    return [frame.header for frame in received]


def test_an_assigned_sub_id_never_collides_with_one_the_client_chose(broker_run) -> None:
    """Seed 002: a subscribe with neither ``sub_id`` nor ``cid`` gets an id from the broker. It
    counted ``ampsctl-sub-1``, ``-2`` ... without looking, so a client that had chosen
    ``ampsctl-sub-2`` got ``subscription already exists`` for a command that named no id."""

    async def scenario(uri: str, _: Path) -> None:
        replies = await _raw_replies(uri, [
            {"c": "subscribe", "t": "orders", "sub_id": "ampsctl-sub-2", "a": "processed"},
            {"c": "subscribe", "t": "orders", "a": "processed"},
            {"c": "sow_and_subscribe", "t": "orders", "a": "processed"},
            {"c": "flush", "cid": "end", "a": "processed"},
        ], "end")
        acks = [(h["status"], h.get("sub_id")) for h in replies if h.get("a") == "processed" and "cid" not in h]
        assert acks == [("success", "ampsctl-sub-2"), ("success", "ampsctl-sub-1"), ("success", "ampsctl-sub-3")]

    broker_run(scenario)


def test_a_bookmark_subscription_refused_as_not_found_feeds_no_action(broker_run) -> None:
    """docs/broker.md, "Actions": a refused command feeds the faucet engine nothing. A bookmark
    subscription with ``bookmark_not_found=fail`` is refused only once the journal was searched,
    after it entered the index; the engine had seen it subscribe, and the action published an
    ``assign`` and, at the refusal, an ``unassign`` of a topic nobody subscribed to."""
    from test_e2e_actions import SYMBOLS_ACTION, _config

    text = _config(SYMBOLS_ACTION.replace("ANNOUNCEMENTS", "default"), journal_topic="/symbols/AAPL")

    async def scenario(uri: str, _: Path) -> None:
        watcher = await connect(uri, "watcher")
        events = await w(watcher.subscribe("^symbol_faucet_control$", sub_id="w"))  # a regex: not a publisher
        publisher = await connect(uri, "pub")
        await w(publisher.subscribe("symbol_faucet_control", sub_id="control"))
        subscriber = await connect(uri, "sub")
        await w(subscriber.publish("/symbols/AAPL", b'{"px":1}', ack="persisted"))
        with pytest.raises(CommandFailed) as failed:
            await w(subscriber.subscribe("/symbols/AAPL", bookmark="1|999|", options="bookmark_not_found=fail",
                                         sub_id="missing"))
        assert failed.value.reason == "invalid bookmark"
        await w(subscriber.subscribe("/symbols/MSFT", sub_id="plain"))
        assert _event(await w(events.next())) == ("assign", "/symbols/MSFT")  # nothing about AAPL before it
        with pytest.raises(CommandFailed):  # a refused replace: MSFT stays subscribed, nothing is announced
            await w(subscriber.subscribe("/symbols/AAPL", bookmark="1|999|", sub_id="plain",
                                         options="replace,bookmark_not_found=fail"))
        replay = await w(subscriber.subscribe("/symbols/AAPL", bookmark="0", options="bookmark_not_found=fail",
                                              sub_id="found"))
        assert _event(await w(events.next())) == ("assign", "/symbols/AAPL")
        await w(replay.completed())
        assert json_body(await w(replay.next())) == {"px": 1}
        await w(subscriber.unsubscribe("found"))
        assert _event(await w(events.next())) == ("unassign", "/symbols/AAPL")

    broker_run(scenario, text)


def _event(message) -> tuple[str, str]:
    body = json_body(message)
    return body["event"], body["topic"]


def test_replacing_a_conflated_subscription_delivers_what_it_held(broker_run) -> None:
    """A replace is atomic: a message the old and the new subscription both match is never lost.
    The update a conflated subscription held for the rest of its interval was dropped with it."""

    async def scenario(uri: str, _: Path) -> None:
        publisher, client = await connect(uri, "pub"), await connect(uri, "sub")
        sub = await w(client.subscribe("orders", options="conflation=1h", sub_id="s"))
        await _fill_orders(publisher, {1: 5, 2: 6})
        await _fill_orders(publisher, {1: 7})
        await w(client.subscribe("orders", options="replace", sub_id="s"))  # comes before the interval ends
        assert [json_body(await w(sub.next())) for _ in range(2)] == [{"id": 1, "qty": 7}, {"id": 2, "qty": 6}]
        await _fill_orders(publisher, {3: 1})
        assert json_body(await w(sub.next())) == {"id": 3, "qty": 1}

    broker_run(scenario)


def test_sow_delete_acks_come_in_the_documented_order_when_persisted_waits_for_the_journal(broker_run) -> None:
    """docs/protocol.md: acks go out in ACK_ORDER (received, processed, persisted, completed,
    stats). A sow_delete's persisted ack waits for the group commit; its completed and stats acks
    did not, and overtook it."""

    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "c")
        await w(client.publish("orders", b'{"id":1}', ack="processed"))
        for expected in (1, 0):  # a delete that found the record, and one that finds nothing
            replies = await w(client.request({"c": "sow_delete", "t": "orders", "f": "/id = 1",
                                              "a": "stats,completed,persisted,processed,received"}, until="stats"))
            assert [reply.ack_type.value for reply in replies] == [
                "received", "processed", "persisted", "completed", "stats"]
            assert replies[-1].records_deleted == expected

    broker_run(scenario)


def test_a_refused_replace_keeps_the_subscription_it_would_have_replaced(broker_run) -> None:
    """A ``replace`` by a bookmark subscription with ``bookmark_not_found=fail`` whose bookmark is
    not in the journal is refused, and a refused command changes nothing: the subscription it
    named goes on. It had been removed already when the refusal came."""

    async def scenario(uri: str, _: Path) -> None:
        publisher, client = await connect(uri, "pub"), await connect(uri, "sub")
        sub = await w(client.subscribe("trades", filter="/id > 0", sub_id="s"))
        with pytest.raises(CommandFailed) as failed:
            await w(client.subscribe("trades", bookmark="1|999|", options="replace,bookmark_not_found=fail",
                                     sub_id="s"))
        assert failed.value.reason == "invalid bookmark"
        await w(publisher.publish("trades", b'{"id":0}', ack="processed"))
        await w(publisher.publish("trades", b'{"id":1}', ack="processed"))
        assert json_body(await w(sub.next())) == {"id": 1}  # the old filter still applies

    broker_run(scenario)


def test_a_subscribe_refused_for_an_id_in_use_leaves_that_subscription_to_the_client(broker_run) -> None:
    """Client library: a refused subscribe (or sow_and_subscribe) forgot the message queue of its
    sub_id, which belonged to the live subscription of that id: its messages were dropped."""

    async def scenario(uri: str, _: Path) -> None:
        publisher, client = await connect(uri, "pub"), await connect(uri, "sub")
        sub = await w(client.subscribe("orders", sub_id="s"))
        with pytest.raises(CommandFailed) as failed:
            await w(client.subscribe("orders", sub_id="s"))
        assert failed.value.reason == "subscription already exists"
        with pytest.raises(CommandFailed):
            await w(client.sow_and_subscribe("orders", sub_id="s"))
        await w(publisher.publish("orders", b'{"id":1}', ack="processed"))
        assert json_body(await w(sub.next())) == {"id": 1}

    broker_run(scenario)


def test_a_delete_whose_filter_fails_on_a_later_topic_is_refused_whole(broker_run) -> None:
    """A pattern sow_delete by filter is one write per topic. A LIKE that ran past its timeout on
    the second topic's records was refused after the first topic's delete was numbered: the
    broker stopped on the journal sequence mismatch. Now every topic is evaluated first, and the
    refusal says ``bad filter`` as a query's does (it said ``invalid message``)."""

    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "c")
        await w(client.publish("orders", b'{"id":1,"s":"x"}', ack="processed"))
        await w(client.publish("desk_x", b'{"id":1,"s":"%s"}' % (b"a" * 40 + b"b"), ack="processed"))
        for topic in ("^(orders|desk_x)$", "desk_x"):
            with pytest.raises(CommandFailed) as failed:
                await w(client.sow_delete(topic, filter="/s LIKE '(a|aa)+$' OR /id = 1"))
            assert failed.value.reason == "bad filter"
        await w(client.publish("orders", b'{"id":2}', ack="persisted"))  # the broker goes on
        assert _ids((await w(client.sow("orders"))).records) == [1, 2]

    broker_run(scenario)


def test_flush_acks_come_in_the_documented_order_when_persisted_waits_for_the_journal(broker_run) -> None:
    """As for sow_delete: a flush's completed ack overtook its persisted ack held for the commit."""

    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "c")
        await client.publish("orders", b'{"id":1}')  # no ack: the flush's persisted ack waits for its commit
        replies = await w(client.request({"c": "flush", "a": "completed,persisted,processed"}, until="completed"))
        assert [reply.ack_type.value for reply in replies] == ["processed", "persisted", "completed"]

    broker_run(scenario)
