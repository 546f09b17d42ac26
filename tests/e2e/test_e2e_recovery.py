"""Restart recovery in-process: SOW file + journal replay after it, sequences continue (issue 7)."""

from __future__ import annotations

from pathlib import Path

import orjson

from ampsctl.broker.run import running_broker
from e2e_helpers import connect, json_body, run, settings_for, w


def test_restart_loads_the_sow_file_and_replays_the_journal_after_it(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)

    async def first() -> str:
        async with running_broker(settings) as broker:
            client = await connect(broker.uris[0], "pub")
            for n in range(5):
                await w(client.publish("orders", orjson.dumps({"id": n, "v": "one"}), ack="persisted"))
            await client.close()
        return "ok"

    async def second() -> None:
        async with running_broker(settings) as broker:
            client = await connect(broker.uris[0], "pub")
            for n in range(3):  # these reach the journal but never the SOW file
                await w(client.publish("orders", orjson.dumps({"id": n, "v": "two"}), ack="persisted"))
            await w(client.sow_delete("orders", filter="/id = 4"))
            await client.close()
            broker.durability.checkpoint = lambda: 0  # type: ignore[method-assign]  # as if it crashed

    async def third() -> None:
        async with running_broker(settings) as broker:
            client = await connect(broker.uris[0], "pub")
            assert client.logon_ack is not None
            records = {orjson.loads(r.data)["id"]: orjson.loads(r.data)["v"]
                       for r in (await w(client.sow("orders", batch_size=50))).records}
            assert records == {0: "two", 1: "two", 2: "two", 3: "one"}
            live = await w(client.subscribe("orders"))
            await w(client.publish("orders", b'{"id":9,"v":"three"}', ack="processed"))
            message = await w(live.next())
            assert json_body(message) == {"id": 9, "v": "three"}
            assert message.bookmark is not None and message.bookmark.endswith("|10|")  # 5 + 3 + 1 delete + 1

    run(first())
    run(second())
    run(third())
