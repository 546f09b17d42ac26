"""Number text in what the broker builds from messages: deltas, select lists, conflated deltas.

A full delivery is the published bytes. Where the broker writes a message itself (a delta, a
select list), a number keeps the text it was published with (``1.50``, ``1E5``, ``-0``, more
digits than a double holds), as the fields of a message an AMPS subscriber reads do; a value
re-written by the parser (``1.5``, ``100000.0``) is a change the publisher never made
(docs/messages.md, "Number text")."""

from __future__ import annotations

from pathlib import Path

from e2e_helpers import connect, w

FIRST = b'{"id":1,"px":1.00,"q":1,"big":12345678901234567890123}'
SECOND = b'{"id":1,"px":1.50,"q":1E5,"big":12345678901234567890123,"z":-0}'


def test_deltas_and_select_lists_keep_the_published_number_text(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        publisher, subscriber, other = await connect(uri, "pub"), await connect(uri, "sub"), await connect(uri, "sel")
        await w(publisher.publish("orders", FIRST, ack="processed"))
        deltas = await w(subscriber.subscribe("orders", delta=True))
        # on its own connection: a full subscription next to a delta one makes both full (§7.3)
        selected = await w(other.subscribe("orders", options="select=[/id,/px,/big]"))
        conflated = await w(subscriber.subscribe("orders", delta=True, options="conflation=1h", sub_id="c"))
        await w(publisher.publish("orders", SECOND, ack="processed"))
        await w(publisher.publish("orders", b'{"id":1,"px":2.50,"q":1E5,"big":12345678901234567890123,"z":-0}',
                                  ack="processed"))
        assert (await w(deltas.next())).data == b'{"id":1,"px":1.50,"q":1E5,"z":-0}'
        assert (await w(deltas.next())).data == b'{"id":1,"px":2.50}'
        assert (await w(selected.next())).data == b'{"id":1,"px":1.50,"big":12345678901234567890123}'
        await w(subscriber.subscribe("orders", delta=True, options="conflation=1h,replace", sub_id="c"))
        assert (await w(conflated.next())).data == b'{"id":1,"px":2.50,"q":1E5,"z":-0}'
        result = await w(subscriber.sow("orders", options="select=[/px,/q]"))
        assert [record.data for record in result.records] == [b'{"px":2.50,"q":1E5}']

    broker_run(scenario)
