"""One client socket: framing in, bounded buffering out (asyncio.Protocol).

Theory of operation. asyncio calls ``data_received`` with whatever bytes arrived; the
connection's ``FrameDecoder`` cuts frames (any split of the stream gives the same frames) and
each frame goes to the server, which runs it through the core and executes the actions before
the next frame is looked at. Writes are gathered per connection and handed to the transport
as one buffer once the current callback returns (``call_soon``): a read of 100 publishes
costs one ``transport.write`` per connection, not one per ack or delivery (issue 7,
bench/broker.py). Order is unchanged; ``close`` hands over what is gathered first.

Invariants:
* A framing error (garbage, a frame over the size limit, a header that is not JSON, a stream
  that ends inside a frame) closes this connection only, after the intact frames that came
  before it in the same read were processed (§2.1 [REC], FrameError.frames).
* Outbound bytes waiting in the transport never exceed ``outbound_limit`` for long: the write
  that crosses it disconnects the client as a slow consumer, with a log line (issue 7, bad
  input). Other clients are not affected: nothing waits on a slow socket. Gathered bytes count:
  ``_queued`` (the transport's buffer at the last hand-over; it only drains in between) plus
  the gathered bytes bound the true figure from above, and when that bound crosses the limit
  the gathered bytes are handed over at once and the transport's own figure decides.
* A reply (a query's result, ``Send.reply``) written while the client had caught up (no more
  than the limit queued) does not count against the limit until the client has read down to
  it again: a client that reads is never cut off for the size of what it asked for, and one
  that does not read is still cut off once more than the limit comes on top of the reply.
* Nothing is read from a connection once it is closing.
* A client that half-closes (EOF) while it is owed more for commands it sent (``persisted`` acks
  held for a commit, a bookmark replay still streaming) keeps its socket until that is sent;
  then the server closes it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ampsctl.protocol.errors import FrameError, FrameTruncated
from ampsctl.protocol.frames import FrameDecoder

if TYPE_CHECKING:
    from ampsctl.broker.server import BrokerServer

log = logging.getLogger("ampsctl.broker")


class ClientConnection(asyncio.Protocol):
    """The protocol object asyncio creates for each accepted socket."""

    def __init__(self, server: BrokerServer) -> None:
        self.server = server
        self.conn = 0
        self.peer = ""
        self.transport: asyncio.Transport | None = None
        self.closing = False
        self.input_ended = False  # the client half-closed; the socket stays open for what it is owed
        self.decoder = FrameDecoder(server.settings.max_frame_size)
        self._limit = server.settings.outbound_limit
        self._gathered: list[bytes] = []  # written since the last hand-over to the transport
        self._gathered_bytes = 0
        self._queued = 0  # the transport's buffer size at the last hand-over
        self._owed = 0  # bytes of replies allowed on top of the limit (see the invariants)

    # ------------------------------------------------------------------ asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else str(peer or "")
        self.conn = self.server.register(self)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        failure: FrameError | None = None
        try:
            frames = self.decoder.feed(data)
        except FrameError as exc:
            frames, failure = exc.frames, exc
        self.server.received(self, frames)  # stops at the frame that closes this connection
        if failure is not None and not self.closing:
            self.close(f"protocol error ({failure.code}): {failure.message}", level=logging.WARNING)

    def eof_received(self) -> bool:
        self._flush()  # asyncio closes the transport next; what is gathered goes out first
        try:
            self.decoder.finish()
        except FrameTruncated as exc:
            log.warning("connection %d (%s): %s", self.conn, self.peer, exc.message)
        except FrameError:
            pass  # the stream failed earlier and that was logged then
        if not self.closing and self.server.holds_for(self.conn):
            self.input_ended = True  # the server closes it once the journal commit releases them
            return True
        return False  # let asyncio close the socket

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self._gathered.clear()
        self.server.unregister(self)

    # ------------------------------------------------------------------ used by the server

    def write(self, data: bytes, reply: bool = False) -> None:
        if self.closing or self.transport is None:
            return
        gathered = self._gathered
        if not gathered:
            asyncio.get_running_loop().call_soon(self._flush)
        if reply:  # measured now, not at the last hand-over: the client may have read since
            if self.transport.get_write_buffer_size() + self._gathered_bytes <= self._limit:
                self._owed += len(data)  # the client has caught up: it may have this much more
        gathered.append(data)
        self._gathered_bytes += len(data)
        if self._queued + self._gathered_bytes > self._limit + self._owed:
            self._flush()

    def _flush(self) -> None:
        """Hand what was gathered to the transport; the slow-consumer check."""
        gathered = self._gathered
        transport = self.transport
        if not gathered or self.closing or transport is None:
            return
        transport.write(gathered[0] if len(gathered) == 1 else b"".join(gathered))
        gathered.clear()
        self._gathered_bytes = 0
        queued = self._queued = transport.get_write_buffer_size()
        if queued <= self._limit:
            self._owed = 0  # read down to the limit: the replies written before are taken
        elif queued > self._limit + self._owed:
            self.close(f"slow consumer: {queued} bytes queued for it, over the limit of {self._limit}",
                       level=logging.WARNING, abort=True)

    def close(self, reason: str, *, level: int = logging.INFO, abort: bool = False) -> None:
        """Close after what is queued is written (``abort``: drop it, for slow consumers)."""
        if self.closing:
            return
        if not abort:
            self._flush()  # may find a slow consumer and abort instead
            if self.closing:
                return
        self._gathered.clear()
        self.closing = True
        log.log(level, "connection %d (%s) closed: %s", self.conn, self.peer, reason)
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()
