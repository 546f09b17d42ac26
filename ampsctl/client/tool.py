"""What ``ampsctl client publish|subscribe|sow|sow-delete|ping`` do, one function per command.

Each function runs one session (``session.py``) on its own event loop and returns plain data;
``cli/client_cmd.py`` parses options, calls one of them and renders the result. Streams
(subscribe) are handed to an ``on_message`` callback as they arrive, so nothing is buffered.

Publishing pipelines: every message is sent at once asking for its ack, at most ``window``
acks are outstanding, and a final ``flush`` makes "exit 0" mean "the broker has every message"
(persisted with ``--ack persisted`` or ``none``, processed with ``--ack processed``).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ampsctl.client.errors import CommandFailed
from ampsctl.client.pending import PendingAck
from ampsctl.client.session import Target, check_options, check_orderby, session
from ampsctl.errors import UsageError
from ampsctl.protocol.acks import Ack
from ampsctl.protocol.messages import Delivery, Oof, SowBatch

PUBLISH_ACKS = ("persisted", "processed", "none")


@dataclass(frozen=True, slots=True)
class PublishSummary:
    topic: str
    published: int
    ack: str
    elapsed: float  # seconds from logon to the final flush ack


@dataclass(frozen=True, slots=True)
class SubscribeSummary:
    received: int
    timed_out: bool  # stopped by --timeout (not by --count)


@dataclass(frozen=True, slots=True)
class QueryResult:
    batches: list[SowBatch]
    stats: Ack | None

    @property
    def count(self) -> int:
        return sum(len(batch.records) for batch in self.batches)


@dataclass(frozen=True, slots=True)
class PingResult:
    uri: str  # as shown: the password hidden
    client_name: str | None
    server_version: str | None
    connect_ms: float  # TCP connect + logon
    round_trip_ms: float  # one flush, sent and acknowledged


def publish(target: Target, topic: str, messages: Sequence[bytes], *, delta: bool = False,
            expiration: int | None = None, sow_key: str | None = None, correlation_id: str | None = None,
            ack: str = "persisted", window: int = 1000) -> PublishSummary:
    if ack not in PUBLISH_ACKS:
        raise UsageError(f"--ack {ack!r} is not one of {', '.join(PUBLISH_ACKS)}")
    if window < 1:
        raise UsageError("--window must be at least 1")

    async def main() -> PublishSummary:
        async with session(target, "publish") as client:
            started = time.perf_counter()
            pending: deque[tuple[int, PendingAck]] = deque()
            for number, data in enumerate(messages, 1):
                if ack == "none":
                    await client.publish(topic, data, delta=delta, expiration=expiration, sow_key=sow_key,
                                         correlation_id=correlation_id)
                    continue
                pending.append((number, await client.publish_nowait(
                    topic, data, ack=ack, delta=delta, expiration=expiration, sow_key=sow_key,
                    correlation_id=correlation_id)))
                if len(pending) >= window:
                    await _settle(*pending.popleft(), len(messages))
            while pending:
                await _settle(*pending.popleft(), len(messages))
            await client.flush("processed" if ack == "processed" else "persisted")
            return PublishSummary(topic, len(messages), ack, time.perf_counter() - started)

    return asyncio.run(main())


async def _settle(number: int, pending: PendingAck, total: int) -> None:
    try:
        await pending.wait()
    except CommandFailed as exc:
        raise CommandFailed(f"publish of message {number} of {total}" if total > 1 else "publish", exc.ack) from None


def subscribe(target: Target, topic: str, on_message: Callable[[Delivery | Oof], None], *,
              filter: str | None = None, options: str | None = None, bookmark: str | None = None,
              delta: bool = False, oof: bool = False, sub_id: str | None = None, count: int | None = None,
              timeout: float | None = None, on_subscribed: Callable[[str], None] = lambda sub_id: None,
              ) -> SubscribeSummary:
    """Subscribe and pass each message to ``on_message`` until ``count`` messages or ``timeout`` seconds;
    ``on_subscribed(sub_id)`` once the broker accepted the subscription."""
    if oof:
        options = f"{options},oof" if options else "oof"
    check_options(options)
    if count is not None and count < 1:
        raise UsageError("--count must be at least 1")

    async def main() -> SubscribeSummary:
        async with session(target, "subscribe") as client:
            loop = asyncio.get_running_loop()
            deadline = None if timeout is None else loop.time() + timeout
            subscription = await client.subscribe(topic, filter=filter, options=options, sub_id=sub_id, delta=delta,
                                                  bookmark=bookmark)
            on_subscribed(subscription.sub_id)
            received = 0
            while count is None or received < count:
                left = None if deadline is None else deadline - loop.time()
                if left is not None and left <= 0:
                    return SubscribeSummary(received, True)
                try:
                    message = await asyncio.wait_for(subscription.next(), left)
                except TimeoutError:
                    return SubscribeSummary(received, True)
                on_message(message)
                received += 1
            return SubscribeSummary(received, False)

    return asyncio.run(main())


def query(target: Target, topic: str, *, filter: str | None = None, orderby: str | None = None,
          top_n: int | None = None, batch_size: int = 10, options: str | None = None) -> QueryResult:
    check_options(options, top_n)
    check_orderby(orderby)
    if not 1 <= batch_size <= 10000:
        raise UsageError(f"--batch-size {batch_size} is outside 1..10000")

    async def main() -> QueryResult:
        async with session(target, "sow") as client:
            batches, stats = await client.sow_batches(topic, filter=filter, orderby=orderby, top_n=top_n,
                                                      batch_size=batch_size, options=options)
            return QueryResult(batches, stats)

    return asyncio.run(main())


def sow_delete(target: Target, topic: str, *, filter: str | None = None, keys: tuple[str, ...] = (),
               data: bytes | None = None) -> Ack:
    """Delete by exactly one of filter, keys or message data; the stats ack (``records_deleted``)."""
    if sum(given for given in (filter is not None, bool(keys), data is not None)) != 1:
        raise UsageError("give exactly one of --filter, --keys and --data",
                         hint="--filter '1=1' deletes every record of the topic")

    async def main() -> Ack:
        async with session(target, "sow-delete") as client:
            return await client.sow_delete(topic, filter=filter, keys=keys, data=data or b"")

    return asyncio.run(main())


def ping(target: Target) -> PingResult:
    async def main() -> PingResult:
        started = time.perf_counter()
        async with session(target, "ping") as client:
            connected = time.perf_counter()
            await client.flush("processed")
            done = time.perf_counter()
            logon = client.logon_ack
            return PingResult(target.shown, client.name, logon.version if logon else None,
                              (connected - started) * 1000, (done - connected) * 1000)

    return asyncio.run(main())
