"""Bad input never takes the broker down, and every other client keeps being served (issue 7).

Each case runs next to a healthy publisher/subscriber pair that must still work afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from pathlib import Path

import pytest

from ampsctl.client import Client, CommandFailed
from ampsctl.protocol.commands import Logon
from ampsctl.protocol.frames import FrameDecoder, encode_frame
from e2e_helpers import connect, json_body, w


async def _raw(uri: str, *, rcvbuf: int | None = None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = uri.removeprefix("tcp://").split("/")[0].rsplit(":", 1)
    if rcvbuf is None:
        return await w(asyncio.open_connection(host, int(port)))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # a consumer that cannot take much
    sock.setblocking(False)
    await w(asyncio.get_running_loop().sock_connect(sock, (host, int(port))))
    return await w(asyncio.open_connection(sock=sock))


async def _hung_up(reader: asyncio.StreamReader) -> bytes:
    """Read until the broker closes the connection (EOF or reset)."""
    received = b""
    try:
        while chunk := await w(reader.read(1 << 16)):
            received += chunk
    except ConnectionResetError:
        pass
    return received


async def _healthy_pair(uri: str) -> tuple[Client, object]:
    publisher, subscriber = await connect(uri, "healthy-pub"), await connect(uri, "healthy-sub")
    return publisher, (subscriber, await w(subscriber.subscribe("orders")))


async def _still_served(pair: tuple[Client, object], marker: int) -> None:
    publisher, (_, live) = pair
    await w(publisher.publish("orders", f'{{"id":{marker}}}'.encode(), ack="processed"))
    assert json_body(await w(live.next())) == {"id": marker}


LOGON = Logon(cid="1", client_name="bad").encode()


@pytest.mark.parametrize("payload", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",  # a length prefix of ~1.2 GB: over the cap at once
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS client hello
    struct.pack(">I", 0),  # a zero-length frame
    struct.pack(">I", 0xFFFF_FFFF) + b"{",  # over the 64 MiB limit
    struct.pack(">I", 5) + b"hello",  # a header that is not JSON at all
    struct.pack(">I", 10) + b'{"c":"p",}',  # JSON-like but broken
    struct.pack(">I", 7) + b'["c",1]',  # JSON, not an object
    LOGON + struct.pack(">I", 100) + b'{"c":"publish"',  # disconnects mid-frame (below)
], ids=["http", "tls", "zero", "oversize", "not-json", "broken-json", "array", "mid-frame"])
def test_broken_streams_close_only_that_connection(broker_run, payload) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pair = await _healthy_pair(uri)
        reader, writer = await _raw(uri)
        writer.write(payload)
        if payload.startswith(LOGON):
            writer.write_eof()  # the client goes away inside a frame
        await w(writer.drain())
        await _hung_up(reader)
        writer.close()
        await _still_served(pair, 1)
        late = await connect(uri, "late")  # new connections are still accepted
        await w(late.flush())

    broker_run(scenario)


@pytest.mark.parametrize(("header", "body", "reason"), [
    ({"c": "frobnicate"}, b"", "invalid command"),
    ({"c": "publish", "t": "orders.*"}, b'{"id":1}', "invalid topic"),
    ({"c": "publish", "t": "orders", "k": "not base64!"}, b'{"id":1}', "invalid sow key"),
    ({"c": "publish", "t": "orders"}, b"[1,2]", "invalid message"),
    ({"c": "publish", "t": "orders"}, b'{"qty":1}', "invalid sow key"),  # no key field: no SOW key
    ({"c": "subscribe", "t": "orders", "f": "/a = 'x"}, b"", "bad filter"),
    ({"c": "sow", "t": "orders", "bs": 100000}, b"", "invalid options"),
    ({"c": "publish", "t": "orders", "x": "x" * 70000}, b'{"id":1}', "invalid options"),
    ({"c": "publish", "t": "orders", "e": 10**13}, b'{"id":1}', "invalid message"),
    ({"c": "subscribe", "t": "orders", "o": "conflation=" + "9" * 400 + "h"}, b"", "invalid options"),
    ({"c": "subscribe", "t": "orders", "o": "conflation=1" + "0" * 400 + ".5s"}, b"", "invalid options"),
    ({"c": "subscribe", "t": "orders", "sub_id": "a,b"}, b"", "invalid options"),
], ids=["unknown-command", "regex-publish", "bad-key", "not-an-object", "no-key", "bad-filter", "batch-size",
        "long-correlation-id", "expiry-beyond-64-bits", "huge-interval", "huge-fraction", "comma-sub-id"])
def test_bad_commands_get_a_failure_ack_and_the_connection_stays(broker_run, header, body, reason) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pair = await _healthy_pair(uri)
        client = await connect(uri, "bad")
        with pytest.raises(CommandFailed) as failed:
            await w(client.request({**header, "a": "processed"}, body))
        assert failed.value.reason == reason
        await w(client.flush())
        await _still_served(pair, 2)

    broker_run(scenario)


def test_a_client_that_half_closes_still_gets_its_persisted_ack(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        reader, writer = await _raw(uri)
        writer.write(LOGON + encode_frame({"c": "publish", "cid": "2", "t": "orders", "a": "processed,persisted"},
                                          b'{"id":7}'))
        writer.write_eof()  # nothing more to send; still reading
        await w(writer.drain())
        frames = FrameDecoder(1 << 20).feed(await _hung_up(reader))
        writer.close()
        acks = [(frame.header.get("cid"), frame.header["a"], frame.header["status"]) for frame in frames]
        assert ("2", "processed", "success") in acks and ("2", "persisted", "success") in acks

    broker_run(scenario)


def test_frame_size_limit_is_configurable(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        pair = await _healthy_pair(uri)
        big = await connect(uri, "big")
        await big.send_raw(encode_frame({"c": "publish", "t": "orders"}, b'{"id":9,"pad":"' + b"x" * 5000 + b'"}'))
        await w(big.wire.wait_closed())
        await _still_served(pair, 3)

    broker_run(scenario, max_frame_size=4096)


def test_slow_consumer_is_disconnected_with_a_log_line(broker_run, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ampsctl.broker")

    async def scenario(uri: str, _: Path) -> None:
        pair = await _healthy_pair(uri)
        reader, writer = await _raw(uri, rcvbuf=4096)
        writer.write(LOGON + encode_frame({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": "2",
                                           "a": "processed"}))
        decoder, frames = FrameDecoder(), []
        while not any(f.header.get("cid") == "2" for f in frames):  # subscribed before anything is published
            frames += decoder.feed(await w(reader.read(1 << 16)))
        publisher = pair[0]
        blob = b'{"id":0,"pad":"' + b"x" * 60_000 + b'"}'
        for _ in range(60):  # ~3.6 MB for a consumer that reads nothing
            await w(publisher.publish("orders", blob))
        await w(publisher.flush())
        await _hung_up(reader)
        writer.close()
        assert "slow consumer" in caplog.text
        _, (subscriber, live) = pair
        while live.pending():  # the healthy subscriber got every big message too
            await w(live.next())
        await _still_served(pair, 4)

    broker_run(scenario, outbound_limit=256 * 1024)
