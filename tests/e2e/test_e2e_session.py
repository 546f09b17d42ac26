"""logon (unique names, reconnect rule, logon required), heartbeat, flush and persisted acks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ampsctl.broker.core import CoreSettings
from ampsctl.client import Client, CommandFailed, Disconnected
from ampsctl.protocol.acks import AckType
from ampsctl.protocol import decode_frames, parse_message
from ampsctl.protocol.cmdoptions import HeartbeatAction
from ampsctl.protocol.commands import Heartbeat, Logon
from ampsctl.protocol.messages import ServerHeartbeat
from e2e_helpers import connect, json_body, w


def test_reconnect_with_the_same_name_drops_the_old_connection(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        old = await connect(uri, "app", user="alice")
        await w(old.subscribe("orders"))
        new = await connect(uri, "app", user="alice")
        with pytest.raises(Disconnected):
            await w(old.flush())
        assert new.logon_ack is not None and new.logon_ack.client_name == "app"
        await w(new.publish("orders", b'{"id":1}', ack="processed"))

    broker_run(scenario)


def test_same_name_other_user_is_refused(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        first = await connect(uri, "app", user="alice")
        with pytest.raises(CommandFailed) as failed:
            await w(Client.connect(uri, name="app", user="mallory"))
        assert failed.value.reason == "name in use"
        await w(first.flush())  # the first holder is untouched

    broker_run(scenario)


def test_logon_required_and_second_logon(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        anonymous = await w(Client.connect(uri, logon=False))
        with pytest.raises(CommandFailed) as failed:
            await w(anonymous.flush("processed"))
        assert failed.value.reason == "logon required"
        await w(anonymous.logon())
        with pytest.raises(CommandFailed) as again:
            await w(anonymous.logon())
        assert again.value.reason == "already logged on"
        await w(anonymous.flush())

    broker_run(scenario)


def test_credentials_are_checked_when_configured(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        with pytest.raises(CommandFailed) as failed:
            await w(Client.connect(uri.replace("tcp://", "tcp://alice:wrong@"), name="a"))
        assert failed.value.reason == "auth failure"
        good = await w(Client.connect(uri.replace("tcp://", "tcp://alice:s3cret@"), name="a"))
        await w(good.flush())

    broker_run(scenario, core=CoreSettings(users={"alice": "s3cret"}))


def test_publisher_sequence_resumes_and_duplicates_are_dropped(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        publisher = await connect(uri, "pub")
        watcher = await connect(uri, "watch")
        live = await w(watcher.subscribe("orders"))
        ack = await w(publisher.publish("orders", b'{"id":1}', ack="persisted"))
        assert ack.ack_type is AckType.PERSISTED and ack.seq == 1
        await publisher.close()
        back = await connect(uri, "pub")
        assert back.logon_ack.seq == 1 and back.logon_ack.bookmark.endswith("|1|")
        replies = await w(back.request({"c": "publish", "t": "orders", "s": 1, "a": "processed"}, b'{"id":1}'))
        assert replies[-1].reason == "duplicate"
        await w(back.publish("orders", b'{"id":2}', ack="processed"))  # s = 2: accepted
        assert [json_body(await w(live.next()))["id"] for _ in range(2)] == [1, 2]
        assert live.pending() == 0

    broker_run(scenario)


def test_flush_persisted_waits_for_the_journal(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "pub")
        for n in range(20):
            await w(client.publish("orders", f'{{"id":{n}}}'.encode()))
        ack = await w(client.flush("persisted"))
        assert ack.ok

    broker_run(scenario)


def test_heartbeats_are_sent_and_a_silent_client_is_dropped(broker_run) -> None:
    """§4.4: heartbeats keep an answering client connected; one that never answers is dropped
    after twice the interval, and nobody else notices."""

    async def scenario(uri: str, _: Path) -> None:
        lively = await connect(uri, "lively")
        await lively.heartbeat(1)
        host, port = uri.removeprefix("tcp://").split("/")[0].rsplit(":", 1)
        reader, writer = await w(asyncio.open_connection(host, int(port)))
        writer.write(Logon(cid="1", client_name="silent").encode() + Heartbeat(action=HeartbeatAction.START,
                                                                                 interval=1).encode())
        received = b""
        while chunk := await w(reader.read(1 << 16), timeout=6):  # until the broker hangs up
            received += chunk
        assert any(isinstance(parse_message(f), ServerHeartbeat) for f in decode_frames(received))
        writer.close()
        assert lively.wire.heartbeats >= 1
        await w(lively.flush())  # answering heartbeats kept it connected

    broker_run(scenario, tick_interval=0.05)


def test_a_client_sending_one_large_frame_slowly_is_not_dropped_for_silence(broker_run) -> None:
    """§4.4: the broker drops a client from which it sees "no traffic of any kind" for twice the
    heartbeat interval. Bytes of a frame still arriving are traffic: a publisher uploading a large
    message over a slow link, longer than that, is not cut off in the middle of it."""
    from ampsctl.protocol.frames import encode_frame

    async def scenario(uri: str, _: Path) -> None:
        host, port = uri.removeprefix("tcp://").split("/")[0].rsplit(":", 1)
        reader, writer = await w(asyncio.open_connection(host, int(port)))
        writer.write(Logon(cid="1", client_name="slow-upload", acks=frozenset({AckType.PROCESSED})).encode()
                     + Heartbeat(action=HeartbeatAction.START, interval=1).encode())
        frame = encode_frame({"c": "publish", "t": "orders", "cid": "big", "a": "processed"},
                             b'{"id":1,"pad":"' + b"x" * 4000 + b'"}')
        pieces = [frame[start:start + 100] for start in range(0, len(frame), 100)]  # 41 pieces, 0.1 s apart
        for piece in pieces:
            writer.write(piece)
            await w(writer.drain())
            await asyncio.sleep(0.1)  # 4 s in all: twice the interval and more, never 1 s without a byte
        received = b""
        while b'"cid":"big"' not in received:
            chunk = await w(reader.read(1 << 16))
            assert chunk, "the broker dropped a client that was sending it a frame"
            received += chunk
        writer.close()
        acks = [parse_message(f) for f in decode_frames(received) if f.header.get("cid") == "big"]
        assert [(ack.ack_type, ack.ok) for ack in acks] == [(AckType.PROCESSED, True)]

    broker_run(scenario, tick_interval=0.05)
