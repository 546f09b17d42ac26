"""Stateful features and their interactions over real sockets (a fuzz round's findings, issue 7).

Each test is a scenario that once went wrong: a refused command that had already changed some
of the state, state lost over a restart, a replaced subscription that left its client behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.broker.run import running_broker
from ampsctl.client import CommandFailed
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
