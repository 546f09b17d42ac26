"""The client's connection: one socket, one reader task, and routing of what the server sends.

Theory of operation. ``Wire.open`` connects and starts a reader task that decodes frames
(``protocol.FrameDecoder``) and routes each message:

* an ack with a ``cid``, and ``group_begin``/``sow``/``group_end`` with a ``query_id``, go to the
  ``Exchange`` of the command that carries that id (the client uses one id for cid, query_id
  and sub_id of a command);
* a conflated ``persisted`` ack (no ``cid``, §7.5) answers every waiting publish with a
  sequence at or below its ``s``;
* ``p`` and ``oof`` go to the queue of every subscription they name (``sids``);
* a server heartbeat is answered with ``beat`` (§4.4);
* anything else (a failure ack whose ``cid`` could not be read) goes to ``unsolicited``.

When the socket closes, every exchange and subscription queue receives the ``Disconnected``
error, so no awaiting caller hangs on a dead connection.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from ampsctl.client.errors import Disconnected
from ampsctl.protocol.acks import Ack, AckType
from ampsctl.protocol.commands import Heartbeat
from ampsctl.protocol.errors import ProtocolError
from ampsctl.protocol.frames import DEFAULT_MAX_FRAME_SIZE, FrameDecoder
from ampsctl.protocol.messages import Delivery, GroupBegin, GroupEnd, Oof, ServerHeartbeat, ServerMessage, SowBatch, parse_message

Item = ServerMessage | Disconnected
_BEAT = Heartbeat().encode()


@dataclass(slots=True)
class Exchange:
    """The replies to one command, in arrival order."""

    cid: str
    seq: int | None = None  # a publish's sequence, for conflated persisted acks
    queue: asyncio.Queue[Item] = field(default_factory=asyncio.Queue)

    async def next(self) -> ServerMessage:
        item = await self.queue.get()
        if isinstance(item, Disconnected):
            self.queue.put_nowait(item)  # every later call fails the same way
            raise item.again()
        return item


class Wire:
    """A connected socket; see the module docstring. Use ``Wire.open``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, max_frame_size: int) -> None:
        self.reader = reader
        self.writer = writer
        self.exchanges: dict[str, Exchange] = {}
        self.subscriptions: dict[str, asyncio.Queue[Item]] = {}
        self.unsolicited: asyncio.Queue[Item] = asyncio.Queue()
        self.closed: Disconnected | None = None
        self.heartbeats = 0  # server heartbeats received (each answered with a beat)
        self._decoder = FrameDecoder(max_frame_size)
        self._task = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, host: str, port: int, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> Wire:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError as exc:
            raise Disconnected(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None
        return cls(reader, writer, max_frame_size)

    async def send(self, data: bytes) -> None:
        if self.closed is not None:
            raise self.closed.again()
        self.writer.write(data)
        try:
            await self.writer.drain()
        except (ConnectionError, OSError) as exc:
            raise Disconnected(f"the connection broke while sending: {exc}") from None

    def exchange(self, cid: str, seq: int | None = None) -> Exchange:
        found = self.exchanges[cid] = Exchange(cid, seq)
        if self.closed is not None:
            found.queue.put_nowait(self.closed)
        return found

    def subscription_queue(self, sub_id: str) -> asyncio.Queue[Item]:
        queue = self.subscriptions.setdefault(sub_id, asyncio.Queue())
        if self.closed is not None:
            queue.put_nowait(self.closed)
        return queue

    async def wait_closed(self) -> Disconnected:
        """Wait until the server closes the connection; why it is closed."""
        await asyncio.shield(self._task)
        assert self.closed is not None
        return self.closed

    async def close(self) -> None:
        if self.closed is None:
            self._finish("the client closed the connection")
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    # ------------------------------------------------------------------ reading

    async def _read(self) -> None:
        reason = "the server closed the connection"
        try:
            while True:
                data = await self.reader.read(1 << 16)
                if not data:
                    break
                for frame in self._decoder.feed(data):
                    self._route(parse_message(frame))
        except ProtocolError as exc:
            reason = f"the server sent something this client cannot read: {exc.message}"
            self.writer.close()
        except (ConnectionError, OSError) as exc:
            reason = f"the connection broke: {exc}"
        finally:
            self._finish(reason)

    def _route(self, message: ServerMessage) -> None:
        if isinstance(message, Delivery | Oof):
            for sub_id in message.sub_ids:
                queue = self.subscriptions.get(sub_id)
                if queue is not None:
                    queue.put_nowait(message)
            return
        if isinstance(message, ServerHeartbeat):
            self.heartbeats += 1
            if self.closed is None:
                self.writer.write(_BEAT)
            return
        key = message.query_id if isinstance(message, GroupBegin | GroupEnd | SowBatch) else message.cid
        exchange = self.exchanges.get(key) if key is not None else None
        if exchange is not None:
            exchange.queue.put_nowait(message)
        elif isinstance(message, Ack) and message.ack_type is AckType.PERSISTED and message.seq is not None:
            for waiting in self.exchanges.values():  # conflated (§7.5): covers every s up to this one
                if waiting.seq is not None and waiting.seq <= message.seq:
                    waiting.queue.put_nowait(message)
        else:
            self.unsolicited.put_nowait(message)

    def _finish(self, reason: str) -> None:
        if self.closed is not None:
            return
        self.closed = Disconnected(reason)
        for exchange in self.exchanges.values():
            exchange.queue.put_nowait(self.closed)
        for queue in self.subscriptions.values():
            queue.put_nowait(self.closed)
        self.unsolicited.put_nowait(self.closed)
