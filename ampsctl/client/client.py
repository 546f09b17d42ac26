"""A small asyncio AMPS client: connect, logon, publish, subscribe, sow, sow_delete, unsubscribe.

Used by the broker's end-to-end tests and, later, by ``ampsctl client`` and ``journal replay``.
Every call awaits only the acks it asked for; none has a built-in timeout (wrap calls in
``asyncio.wait_for``). A failure ack raises ``CommandFailed`` with the §7.4 reason; a closed
connection raises ``Disconnected``.

    async with await Client.connect("tcp://127.0.0.1:9007/amps/json", name="me") as client:
        await client.publish("orders", b'{"id":1}', ack="processed")
        sub = await client.subscribe("orders", filter="/qty > 5")
        message = await sub.next()
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ampsctl.client.errors import CommandFailed, Disconnected
from ampsctl.client.pending import PendingAck
from ampsctl.client.uri import parse_uri
from ampsctl.client.wire import Exchange, Item, Wire
from ampsctl.protocol.acks import Ack, AckType
from ampsctl.protocol.cmdoptions import CommandOptions, HeartbeatAction, parse_command_options, parse_orderby
from ampsctl.protocol.commands import (
    DeltaPublish,
    DeltaSubscribe,
    Flush,
    Heartbeat,
    Logon,
    Publish,
    Sow,
    SowAndDeltaSubscribe,
    SowAndSubscribe,
    SowDelete,
    Subscribe,
    Unsubscribe,
)
from ampsctl.protocol.frames import encode_frame
from ampsctl.protocol.messages import Delivery, Oof, SowBatch, SowRecord

_QUERY_ACKS = frozenset({AckType.PROCESSED, AckType.COMPLETED, AckType.STATS})


@dataclass(frozen=True, slots=True)
class SowResult:
    records: list[SowRecord]
    stats: Ack | None
    batches: int


class ClientSubscription:
    """Messages (``Delivery`` and ``Oof``) of one subscription, in arrival order.

    A bookmark subscription replays the journal first; ``await sub.completed()`` returns the
    ``completed`` ack that marks the end of the replay (every message before it in ``next()``
    was replayed, every one after it is live). Each message's ``bookmark`` is its place in the
    journal, the value to resubscribe from.
    """

    def __init__(self, client: Client, sub_id: str, queue: Any, replay: Exchange | None = None) -> None:
        self.client = client
        self.sub_id = sub_id
        self.queue = queue
        self._replay = replay  # the exchange that receives the completed ack
        self._completed: Ack | None = None

    async def completed(self) -> Ack:
        """Wait for the end of the replay (the ``completed`` ack); at once for a plain subscription."""
        if self._completed is not None:
            return self._completed
        exchange = self._replay
        if exchange is None:
            raise ValueError("only a bookmark subscription (subscribe(..., bookmark=...)) has a replay to wait for")
        while True:
            message = await exchange.next()
            if isinstance(message, Ack) and message.ack_type is AckType.COMPLETED:
                self.client.wire.exchanges.pop(exchange.cid, None)
                self._completed = message
                return message

    async def next(self) -> Delivery | Oof:
        item: Item = await self.queue.get()
        if isinstance(item, Exception):
            self.queue.put_nowait(item)
            raise item.again() if isinstance(item, Disconnected) else item
        assert isinstance(item, Delivery | Oof)
        return item

    def pending(self) -> int:
        """Messages received and not yet taken (tests check "nothing more arrived")."""
        return self.queue.qsize()

    def __aiter__(self) -> ClientSubscription:
        return self

    async def __anext__(self) -> Delivery | Oof:
        return await self.next()

    async def unsubscribe(self) -> None:
        await self.client.unsubscribe(self.sub_id)


class Client:
    """One logged-on connection to an AMPS broker."""

    def __init__(self, wire: Wire, name: str | None) -> None:
        self.wire = wire
        self.name = name
        self.logon_ack: Ack | None = None
        self._ids = itertools.count(1)
        self._seq = 0

    @classmethod
    async def connect(cls, uri: str, *, name: str | None = None, user: str | None = None,
                      password: str | None = None, logon: bool = True) -> Client:
        """Connect to ``uri`` and (unless ``logon=False``) log on; CommandFailed if refused."""
        where = parse_uri(uri)
        client = cls(await Wire.open(where.host, where.port), name)
        if logon:
            try:
                await client.logon(user=user or where.user, password=password or where.password)
            except BaseException:
                await client.close()
                raise
        return client

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        await self.wire.close()

    def next_id(self) -> str:
        return str(next(self._ids))

    async def send_raw(self, data: bytes) -> None:
        """Send bytes as they are (tests of bad input)."""
        await self.wire.send(data)

    # ------------------------------------------------------------------ commands

    async def logon(self, *, user: str | None = None, password: str | None = None) -> Ack:
        cid = self.next_id()
        command = Logon(cid=cid, acks=frozenset({AckType.PROCESSED}), client_name=self.name, user_id=user,
                        password=password, version="0.1.0.0:ampsctl")
        self.logon_ack = (await self._run(command, cid, until=AckType.PROCESSED))[-1]
        self._seq = self.logon_ack.seq or 0  # §4.2: resume publishing after the last persisted s
        return self.logon_ack

    async def publish(self, topic: str, data: bytes, *, ack: str | None = None, delta: bool = False,
                      expiration: int | None = None, sow_key: str | None = None,
                      correlation_id: str | None = None) -> Ack | None:
        """Publish; with ``ack`` ("processed" or "persisted") wait for that ack and return it."""
        cid = self.next_id()
        self._seq += 1
        kind = DeltaPublish if delta else Publish
        acks = frozenset({AckType(ack)}) if ack else frozenset()
        command = kind(cid=cid, acks=acks, topic=topic, data=data, seq=self._seq, expiration=expiration,
                       sow_key=sow_key, correlation_id=correlation_id)
        if not acks:
            await self.wire.send(command.encode())
            return None
        return (await self._run(command, cid, until=AckType(ack), seq=self._seq))[-1]

    async def subscribe(self, topic: str, *, filter: str | None = None, options: str | None = None,
                        sub_id: str | None = None, delta: bool = False, bookmark: str | None = None) -> ClientSubscription:
        """Subscribe; returns once the broker confirmed (``processed``).

        With ``bookmark`` (``"0"``, a message's bookmark, a timestamp ``20261122T093000Z``, a comma
        list, ``"0|1|"``) the broker replays the journal after that point before going live; the
        subscription's ``completed()`` waits for the end of the replay.
        """
        sub_id = sub_id or self.next_id()
        in_use = sub_id in self.wire.subscriptions  # a replace, or a refusal to come: not this call's to drop
        queue = self.wire.subscription_queue(sub_id)
        kind = DeltaSubscribe if delta else Subscribe
        acks = {AckType.PROCESSED} | ({AckType.COMPLETED} if bookmark is not None else set())
        command = kind(cid=sub_id, acks=frozenset(acks), topic=topic, sub_id=sub_id, filter=filter,
                       bookmark=bookmark, options=_options(options))
        exchange = self.wire.exchange(sub_id)
        try:
            await self.wire.send(command.encode())
            while True:
                message = await exchange.next()
                if not isinstance(message, Ack):
                    continue
                if not message.ok:
                    raise CommandFailed(command.kind.value, message)
                if message.ack_type is AckType.PROCESSED:
                    break
        except BaseException:
            if not in_use:
                self.wire.subscriptions.pop(sub_id, None)
            self.wire.exchanges.pop(sub_id, None)
            raise
        if bookmark is None:
            self.wire.exchanges.pop(sub_id, None)
            return ClientSubscription(self, sub_id, queue)
        return ClientSubscription(self, sub_id, queue, exchange)

    async def sow(self, topic: str, *, filter: str | None = None, orderby: str | None = None,
                  top_n: int | None = None, batch_size: int = 10, options: str | None = None,
                  sow_keys: tuple[str, ...] = ()) -> SowResult:
        """A SOW query: every record, then the stats ack."""
        cid = self.next_id()
        command = Sow(cid=cid, acks=_QUERY_ACKS, topic=topic, query_id=cid, filter=filter, sow_keys=sow_keys,
                      batch_size=batch_size, orderby=parse_orderby(orderby), options=_options(options, top_n))
        return _result(await self._run(command, cid, until=AckType.STATS))

    async def sow_and_subscribe(self, topic: str, *, filter: str | None = None, orderby: str | None = None,
                                top_n: int | None = None, batch_size: int = 10, options: str | None = None,
                                sub_id: str | None = None, delta: bool = False) -> tuple[SowResult, ClientSubscription]:
        """The query result, and the subscription that continues it (nothing lost or repeated)."""
        sub_id = sub_id or self.next_id()
        in_use = sub_id in self.wire.subscriptions  # as in subscribe
        queue = self.wire.subscription_queue(sub_id)
        kind = SowAndDeltaSubscribe if delta else SowAndSubscribe
        command = kind(cid=sub_id, acks=_QUERY_ACKS, topic=topic, query_id=sub_id, sub_id=sub_id, filter=filter,
                       batch_size=batch_size, orderby=parse_orderby(orderby), options=_options(options, top_n))
        try:
            replies = await self._run(command, sub_id, until=AckType.STATS)
        except CommandFailed:
            if not in_use:
                self.wire.subscriptions.pop(sub_id, None)
            raise
        return _result(replies), ClientSubscription(self, sub_id, queue)

    async def sow_delete(self, topic: str, *, filter: str | None = None, keys: tuple[str, ...] = (),
                         data: bytes = b"") -> Ack:
        """Delete by filter, keys or data; the stats ack (``records_deleted``)."""
        cid = self.next_id()
        command = SowDelete(cid=cid, acks=frozenset({AckType.PROCESSED, AckType.STATS}), topic=topic, filter=filter,
                            sow_keys=tuple(keys), data=data)
        return (await self._run(command, cid, until=AckType.STATS))[-1]

    async def unsubscribe(self, sub_id: str = "all") -> None:
        cid = self.next_id()
        await self._run(Unsubscribe(cid=cid, acks=frozenset({AckType.PROCESSED}), sub_ids=(sub_id,)), cid,
                        until=AckType.PROCESSED)
        for gone in list(self.wire.subscriptions) if sub_id == "all" else [sub_id]:
            self.wire.subscriptions.pop(gone, None)
            self.wire.exchanges.pop(gone, None)  # a bookmark subscription's wait for completed

    async def flush(self, ack: str = "completed") -> Ack:
        """Wait until the broker processed (or, with "persisted", journaled) every earlier command."""
        cid = self.next_id()
        return (await self._run(Flush(cid=cid, acks=frozenset({AckType(ack)})), cid, until=AckType(ack)))[-1]

    async def heartbeat(self, interval: int) -> None:
        """Ask the broker for heartbeats every ``interval`` seconds (§4.4)."""
        await self.wire.send(Heartbeat(action=HeartbeatAction.START, interval=interval).encode())

    # ------------------------------------------------------------------ plumbing

    async def request(self, header: dict[str, Any], body: bytes = b"", *, until: str = "processed") -> list[Any]:
        """Send a command given as a raw header (``cid`` added when missing) and collect its
        replies up to the ``until`` ack; for what the typed methods do not cover."""
        cid = str(header.get("cid") or self.next_id())
        frame = encode_frame({**header, "cid": cid}, body)
        return await self._exchange(frame, str(header.get("c")), cid, until=AckType(until))

    async def _run(self, command: Any, cid: str, *, until: AckType, seq: int | None = None) -> list[Any]:
        return await self._exchange(command.encode(), command.kind.value, cid, until=until, seq=seq)

    async def _exchange(self, frame: bytes, label: str, cid: str, *, until: AckType,
                        seq: int | None = None) -> list[Any]:
        """Send ``frame`` and collect its replies up to the ``until`` ack; raise on a failure."""
        exchange: Exchange = self.wire.exchange(cid, seq)
        try:
            await self.wire.send(frame)
            replies = []
            while True:
                message = await exchange.next()
                replies.append(message)
                if isinstance(message, Ack):
                    if not message.ok:
                        raise CommandFailed(label, message)
                    if message.ack_type is until:
                        return replies
        finally:
            self.wire.exchanges.pop(cid, None)

    # ------------------------------------------------------------------ pipelining (ampsctl client, journal replay)

    async def publish_nowait(self, topic: str, data: bytes, *, ack: str = "persisted", delta: bool = False,
                             expiration: int | None = None, sow_key: str | None = None,
                             correlation_id: str | None = None) -> PendingAck:
        """Send a publish asking for ``ack`` and return once it is written; await the result's
        ``wait()`` for the ack. Commands take effect in sending order (pending.py)."""
        cid = self.next_id()
        self._seq += 1
        kind = DeltaPublish if delta else Publish
        command = kind(cid=cid, acks=frozenset({AckType(ack)}), topic=topic, data=data, seq=self._seq,
                       expiration=expiration, sow_key=sow_key, correlation_id=correlation_id)
        return await self._start(command, cid, AckType(ack), seq=self._seq)

    async def sow_delete_nowait(self, topic: str, *, filter: str | None = None, keys: tuple[str, ...] = (),
                                data: bytes = b"", ack: str = "persisted") -> PendingAck:
        """Send a sow_delete asking for ``ack`` and return once it is written. (Not stats too: a
        broker may send the stats ack before a persisted ack held for its group commit.)"""
        cid = self.next_id()
        command = SowDelete(cid=cid, acks=frozenset({AckType(ack)}), topic=topic, filter=filter,
                            sow_keys=tuple(keys), data=data)
        return await self._start(command, cid, AckType(ack))

    async def sow_batches(self, topic: str, *, filter: str | None = None, orderby: str | None = None,
                          top_n: int | None = None, batch_size: int = 10,
                          options: str | None = None) -> tuple[list[SowBatch], Ack | None]:
        """A SOW query's batches as they came (each names its topic, for regex queries) and the stats ack."""
        cid = self.next_id()
        command = Sow(cid=cid, acks=_QUERY_ACKS, topic=topic, query_id=cid, filter=filter, batch_size=batch_size,
                      orderby=parse_orderby(orderby), options=_options(options, top_n))
        replies = await self._run(command, cid, until=AckType.STATS)
        stats = next((r for r in replies if isinstance(r, Ack) and r.ack_type is AckType.STATS), None)
        return [reply for reply in replies if isinstance(reply, SowBatch)], stats

    async def _start(self, command: Any, cid: str, until: AckType, *, seq: int | None = None) -> PendingAck:
        exchange = self.wire.exchange(cid, seq)
        pending = PendingAck(self.wire, exchange, command.kind.value, until)
        try:
            await self.wire.send(command.encode())
        except BaseException:
            pending.abandon()
            raise
        return pending


def _options(text: str | None, top_n: int | None = None) -> CommandOptions:
    return parse_command_options(text or None, header_top_n=top_n)


def _result(replies: list[Any]) -> SowResult:
    batches = [reply for reply in replies if isinstance(reply, SowBatch)]
    stats = next((r for r in replies if isinstance(r, Ack) and r.ack_type is AckType.STATS), None)
    return SowResult([record for batch in batches for record in batch.records], stats, len(batches))
