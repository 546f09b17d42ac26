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

