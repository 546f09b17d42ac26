"""Outbound limits and replies: a client that reads is never cut off for the size of what it asked for.

The outbound limit (``--outbound-limit``) protects the broker from a consumer that does not keep
up with live messages. A query's result is the reply to the client's own command: a result larger
than the limit, asked for by a client that has read everything sent to it before, is delivered
whole (docs/broker.md, "Bad input").
"""

from __future__ import annotations

from pathlib import Path

from ampsctl.protocol.frames import FrameDecoder, encode_frame
from e2e_helpers import connect, w
from test_e2e_bad_input import LOGON, _hung_up, _raw

RECORDS, PAD = 80, 100_000  # an 8 MB result: more than the socket buffers and the limit hold


async def _fill(uri: str, first: int = 0) -> None:
    publisher = await connect(uri, f"filler-{first}")
    pad = b"x" * PAD
    for number in range(first, first + RECORDS):
        await publisher.publish("orders", b'{"id":%d,"pad":"%b"}' % (number, pad))
    await w(publisher.flush())


async def _query(reader, writer, cid: str) -> int:
    """Send a sow query for every record and read up to its completed ack; the records returned."""
    writer.write(encode_frame({"c": "sow", "cid": cid, "t": "orders", "bs": 10, "a": "processed,completed"}))
    await w(writer.drain())
    decoder, frames = FrameDecoder(1 << 24), []
    while not any(f.header.get("cid") == cid and f.header.get("a") == "completed" for f in frames):
        chunk = await w(reader.read(1 << 16))
        assert chunk, "the broker closed the connection of a client that was reading its query result"
        frames += decoder.feed(chunk)
    return sum(f.header["bs"] for f in frames if f.header.get("c") == "sow")


def test_a_query_result_larger_than_the_outbound_limit_reaches_a_client_that_reads(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        await _fill(uri)
        reader, writer = await _raw(uri, rcvbuf=4096)  # reads, but the kernel holds little for it
        writer.write(LOGON)
        assert await _query(reader, writer, "q1") == RECORDS
        await _fill(uri, RECORDS)
        assert await _query(reader, writer, "q2") == 2 * RECORDS  # a larger one, once it has read the first
        writer.close()

    broker_run(scenario, outbound_limit=64 * 1024)


def test_a_client_that_reads_nothing_is_still_cut_off_once_live_messages_pass_the_limit(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        await _fill(uri)
        reader, writer = await _raw(uri, rcvbuf=4096)
        writer.write(LOGON + encode_frame({"c": "subscribe", "cid": "s", "t": "trades", "a": "processed"})
                     + encode_frame({"c": "sow", "cid": "q", "t": "orders", "a": "processed"}))
        await w(writer.drain())  # and never reads: the result waits, allowed
        publisher = await connect(uri, "live")
        blob = b'{"pad":"' + b"y" * 60_000 + b'"}'
        for _ in range(60):  # 3.6 MB of live messages on top of it
            await publisher.publish("trades", blob)
        await w(publisher.flush())
        await _hung_up(reader)
        writer.close()

    broker_run(scenario, outbound_limit=64 * 1024)


def test_a_bookmark_replay_larger_than_the_outbound_limit_reaches_a_client_that_reads(broker_run) -> None:
    """A replay streams the journal in chunks; a chunk is the answer to the client's own subscribe,
    so a reading client is not cut off when one chunk is more than the limit."""
    async def scenario(uri: str, _: Path) -> None:
        publisher = await connect(uri, "filler")
        pad = b"x" * 20_000
        for number in range(600):  # 12 MB: one chunk of 512 records is 10 MB
            await publisher.publish("trades", b'{"id":%d,"pad":"%b"}' % (number, pad))
        await w(publisher.flush())
        reader, writer = await _raw(uri, rcvbuf=4096)
        writer.write(LOGON + encode_frame({"c": "subscribe", "cid": "s", "t": "trades", "bm": "0",
                                           "a": "processed,completed"}))
        await w(writer.drain())
        decoder, frames = FrameDecoder(1 << 24), []
        while not any(f.header.get("cid") == "s" and f.header.get("a") == "completed" for f in frames):
            chunk = await w(reader.read(1 << 16))
            assert chunk, "the broker closed the connection of a client that was reading its replay"
            frames += decoder.feed(chunk)
        writer.close()
        assert sum(1 for f in frames if f.header.get("c") == "p") == 600

    broker_run(scenario, outbound_limit=64 * 1024)
