"""Ack behaviour on the wire: which acks a command gets, in which order, with success or failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.protocol.frames import FrameDecoder, encode_frame
from e2e_helpers import w
from test_e2e_bad_input import LOGON, _raw


async def _acks_of(uri: str, commands: list[tuple[dict, bytes]], cid: str) -> list[tuple[str, str, str | None]]:
    """(ack type, status, reason) of every ack for ``cid``, up to a processed flush sent after ``commands``."""
    reader, writer = await _raw(uri)
    writer.write(LOGON + b"".join(encode_frame(header, body) for header, body in commands)
                 + encode_frame({"c": "flush", "cid": "end", "a": "processed"}))
    await w(writer.drain())
    decoder, frames = FrameDecoder(), []
    while not any(frame.header.get("cid") == "end" for frame in frames):
        chunk = await w(reader.read(1 << 16))
        assert chunk, "the broker closed the connection"
        frames += decoder.feed(chunk)
    writer.close()
    return [(f.header["a"], f.header["status"], f.header.get("reason")) for f in frames
            if f.header.get("c") == "ack" and f.header.get("cid") == cid]


@pytest.mark.parametrize(("commands", "reason"), [
    ([({"c": "subscribe", "t": "orders", "sub_id": "s"}, b""),
      ({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": "x", "a": "received,processed"}, b"")],
     "subscription already exists"),
    ([({"c": "sow", "t": "trades", "cid": "x", "a": "received,processed,completed,stats"}, b"")], "invalid topic"),
    ([({"c": "publish", "t": "orders", "cid": "x", "a": "received,processed"}, b'{"qty":1}')], "invalid sow key"),
    ([({"c": "sow_delete", "t": "orders", "cid": "x", "a": "received,processed,stats"}, b"{}")], "invalid sow key"),
    ([({"c": "publish", "t": "orders.*", "cid": "x", "a": "received,persisted"}, b'{"id":1}')], "invalid topic"),
    ([({"c": "subscribe", "t": "orders", "cid": "x", "a": "processed,received", "o": "frobnicate"}, b"")],
     "invalid options"),
], ids=["duplicate-sub-id", "sow-without-sow", "publish-without-key", "delete-without-key", "regex-publish-topic",
        "unknown-option"])
def test_a_refused_command_that_asked_for_received_gets_it_before_the_failure(broker_run, commands, reason) -> None:
    """received says the command arrived, before it is processed (§7.1): a command the broker then
    refuses was received all the same; the failure rides on processed."""
    async def scenario(uri: str, _: Path) -> None:
        carrier = "persisted" if "persisted" in commands[-1][0]["a"] else "processed"
        assert await _acks_of(uri, commands, "x") == [("received", "success", None), (carrier, "failure", reason)]

    broker_run(scenario)


def test_delta_subscribe_sends_the_stats_it_supports(broker_run) -> None:
    """delta_subscribe supports completed and stats (§7.2): a client that asks for stats waits for
    it, so it comes after completed (no query ran: nothing matched). subscribe does not support
    stats, which is ignored there, as every unsupported ack type is."""
    async def scenario(uri: str, _: Path) -> None:
        wanted = "processed,completed,stats"
        delta = ({"c": "delta_subscribe", "t": "orders", "cid": "x", "sub_id": "d", "a": wanted}, b"")
        assert await _acks_of(uri, [delta], "x") == [
            ("processed", "success", None), ("completed", "success", None), ("stats", "success", None)]
        plain = ({"c": "subscribe", "t": "orders", "cid": "y", "sub_id": "p", "a": wanted}, b"")
        assert await _acks_of(uri, [plain], "y") == [("processed", "success", None), ("completed", "success", None)]

    broker_run(scenario)
