"""A delta_publish to a SOW topic keeps the number text of the stored record (docs/broker.md).

The broker merges the delta into the record in its SOW; the fields the delta did not touch
must come back as they were published (``1.50``, ``1E5``, ``-0``, more digits than a double
holds), to a SOW query, to a full subscriber of the merged message, and after a restart
(recovered from the SOW file and the journal after it). Filters see the same values."""

from __future__ import annotations

from pathlib import Path

from ampsctl.broker.run import running_broker
from e2e_helpers import connect, run, settings_for, w

PUBLISHED = b'{"id":1,"px":1.50,"q":1E5,"z":-0,"big":12345678901234567890123}'
MERGED = b'{"id":1,"px":1.50,"q":1E5,"z":-0,"big":12345678901234567890123,"s":"x","w":2.50}'
LATER = b'{"id":1,"px":1.50,"q":3E5,"z":-0,"big":12345678901234567890123,"s":"x","w":2.50}'


def test_sow_records_merged_by_a_delta_publish_keep_the_published_number_text(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)

    async def first() -> None:
        async with running_broker(settings) as broker:
            publisher, subscriber = await connect(broker.uris[0], "pub"), await connect(broker.uris[0], "sub")
            await w(publisher.publish("orders", PUBLISHED, ack="processed"))
            live = await w(subscriber.subscribe("orders"))
            await w(publisher.publish("orders", b'{"id":1,"s":"x","w":2.50}', delta=True, ack="processed"))
            assert (await w(live.next())).data == MERGED
            result = await w(subscriber.sow("orders", filter="/q = 100000 AND /px = 1.5 AND /w > 2.4"))
            assert [record.data for record in result.records] == [MERGED]
            await publisher.close()
            await subscriber.close()  # the SOW file is checkpointed at shutdown

    async def second() -> None:
        async with running_broker(settings) as broker:
            client = await connect(broker.uris[0], "pub")
            assert [record.data for record in (await w(client.sow("orders"))).records] == [MERGED]
            await w(client.publish("orders", b'{"id":1,"q":3E5}', delta=True, ack="persisted"))
            await client.close()
            broker.durability.checkpoint = lambda: 0  # type: ignore[method-assign]  # as if it crashed

    async def third() -> None:
        async with running_broker(settings) as broker:  # the file, then the journal after it
            client = await connect(broker.uris[0], "pub")
            assert [record.data for record in (await w(client.sow("orders", filter="/q = 3E5"))).records] == [LATER]

    run(first())
    run(second())
    run(third())
