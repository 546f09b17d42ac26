"""Seed 002: a SOW topic as a stateless bookmark store, keyed by /clientName and /subId.

The subscriber processes messages in order and publishes the bookmark of each one it processed
into the store (from a separate client, as the seed requires); it disconnects; more messages are
published; it reconnects, reads its bookmark back with a SOW query, resubscribes from it and gets
exactly the messages it had not processed: nothing missing, nothing twice.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from e2e_helpers import CONFIG, connect, json_body, w

STORE = "/sample/bookmarkStore"
CONFIG_WITH_STORE = CONFIG.replace("</SOW>", f"""  <TopicDefinition><Topic>{STORE}</Topic><MessageType>json</MessageType>
      <Key>/clientName</Key><Key>/subId</Key><FileName>{{dir}}/sow/bookmark.sow</FileName></TopicDefinition>
  </SOW>""")


async def _stored_bookmark(store_client, client_name: str, sub_id: str) -> str:
    """The seed's get_most_recent: the stored bookmark, or EPOCH ("0") when there is none."""
    result = await w(store_client.sow(STORE, filter=f"/clientName = '{client_name}' AND /subId = '{sub_id}'"))
    stored = [orjson.loads(record.data)["bookmark"] for record in result.records]
    assert len(stored) <= 1  # one record per (clientName, subId): the SOW key
    return stored[0] if stored else "0"


async def _process(store_client, sub, client_name: str, count: int) -> list[int]:
    """Take ``count`` messages in order; after each, discard it: store its bookmark."""
    done = []
    for _ in range(count):
        message = await w(sub.next())
        done.append(json_body(message)["n"])
        record = {"clientName": client_name, "subId": sub.sub_id, "bookmark": message.bookmark}
        await w(store_client.publish(STORE, orjson.dumps(record), ack="processed"))
    return done


def test_resume_from_a_bookmark_kept_in_a_sow_topic(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pub, store = await connect(uri, "pub"), await connect(uri, "bkmrk")
        for n in range(10):
            await w(pub.publish("orders", orjson.dumps({"id": n % 4, "n": n}), ack="processed"))

        tracked = await connect(uri, "tracked")
        start = await _stored_bookmark(store, "tracked", "1")
        assert start == "0"  # a brand-new subscription starts at EPOCH
        sub = await w(tracked.subscribe("orders", bookmark=start, sub_id="1"))
        processed = await _process(store, sub, "tracked", 4)
        assert processed == [0, 1, 2, 3]
        await tracked.close()  # six delivered messages were never processed

        for n in range(10, 15):
            await w(pub.publish("orders", orjson.dumps({"id": n % 4, "n": n}), ack="processed"))

        tracked = await connect(uri, "tracked")
        start = await _stored_bookmark(store, "tracked", "1")
        assert start.endswith("|4|")  # the fourth message's bookmark
        sub = await w(tracked.subscribe("orders", bookmark=start, sub_id="1"))
        await w(sub.completed())
        processed += await _process(store, sub, "tracked", sub.pending())
        await w(pub.publish("orders", b'{"id":0,"n":15}', ack="processed"))  # live after the replay
        processed += await _process(store, sub, "tracked", 1)
        assert processed == list(range(16))  # each exactly once, in order
        assert sub.pending() == 0
        assert (await _stored_bookmark(store, "tracked", "1")).endswith("|16|")

    broker_run(scenario, CONFIG_WITH_STORE)
