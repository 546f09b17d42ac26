"""An ack that was asked for and has not been awaited yet: how a client pipelines commands.

``Client.publish`` sends a command and waits for its ack, one round trip per message. A tool
that sends thousands of messages (``ampsctl client publish``, ``journal replay``) must instead
send in order and collect the acks later: ``Client.publish_nowait`` returns once the frame is
written, with a ``PendingAck``. The broker handles a connection's commands in order, so the
sending order is the order of effect; only the waiting is deferred.

The reader task routes the acks into the exchange's queue as they arrive, so awaiting late
loses nothing. ``wait`` unregisters the exchange; ``abandon`` does it for one never awaited.
"""

from __future__ import annotations

from typing import Any

from ampsctl.client.errors import CommandFailed
from ampsctl.client.wire import Exchange, Wire
from ampsctl.protocol.acks import Ack, AckType


class PendingAck:
    """The ``until`` ack of one sent command (CommandFailed on a failure ack)."""

    def __init__(self, wire: Wire, exchange: Exchange, label: str, until: AckType) -> None:
        self.wire = wire
        self.exchange = exchange
        self.label = label
        self.until = until
        self.replies: list[Any] = []

    @property
    def cid(self) -> str:
        return self.exchange.cid

    async def wait(self) -> Ack:
        try:
            while True:
                message = await self.exchange.next()
                self.replies.append(message)
                if isinstance(message, Ack):
                    if not message.ok:
                        raise CommandFailed(self.label, message)
                    if message.ack_type is self.until:
                        return message
        finally:
            self.abandon()

    def abandon(self) -> None:
        if self.wire.exchanges.get(self.exchange.cid) is self.exchange:
            del self.wire.exchanges[self.exchange.cid]
