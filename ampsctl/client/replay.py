"""``ampsctl journal replay``: republish a journal's records to a broker, paced (``pacing.py``).

What is sent, in journal order, on one connection (so the broker applies them in that order):

* ``publish`` and ``delta_publish`` records: the same command with the record's topic,
  payload, SowKey, expiration and CorrelationId. The publisher's client name and sequence are
  not replayed: the replaying client has its own, and the target broker assigns new bookmarks.
* ``sow_delete`` records: a ``sow_delete`` command of the same form (filter, keys or message
  data). Keys are SOW keys, which match on the target only if its topic has the same Key fields.
* ``expire`` records are skipped (the target expires records itself from their expiration),
  and so are records of a message type other than the connection's (json).

Every command asks for ``persisted``; at most ``window`` acks are outstanding, and the run ends
with a ``flush`` that is acknowledged once everything is persisted. A failure ack stops the
replay (``Rejected``, exit 1) naming the record.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ampsctl.client.client import Client
from ampsctl.client.errors import CommandFailed
from ampsctl.client.pacing import Pace, next_due
from ampsctl.client.pending import PendingAck
from ampsctl.client.session import Target, session
from ampsctl.journal.jsonl import delete_criteria
from ampsctl.journal.record import Command, JournalRecord

MIN_SLEEP = 0.001  # seconds: shorter waits are not worth a timer; the next record catches up


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    sent: Counter[str]  # command label -> records sent
    skipped: Counter[str]  # why -> records not sent
    elapsed: float  # seconds, logon to the final flush ack
    first_sequence: int | None = None
    last_sequence: int | None = None
    total: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "total", sum(self.sent.values()))

    @property
    def rate(self) -> float:
        return self.total / self.elapsed if self.elapsed > 0 else 0.0


def replay(records: Iterable[JournalRecord], target: Target, pace: Pace, *, window: int = 1000,
           progress: Callable[[int], None] = lambda done: None) -> ReplaySummary:
    """Send ``records`` to ``target`` at ``pace``; ``progress(1)`` after each record (sent or skipped)."""
    return asyncio.run(_replay(records, target, pace, window, progress))


async def _replay(records: Iterable[JournalRecord], target: Target, pace: Pace, window: int,
                  progress: Callable[[int], None]) -> ReplaySummary:
    sent: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    pending: deque[tuple[JournalRecord, PendingAck]] = deque()
    first = last = None
    async with session(target, "replay") as client:
        loop = asyncio.get_running_loop()
        started = loop.time()
        clock_started = time.perf_counter()
        due, previous_timestamp, index = 0.0, None, 0
        for record in records:
            why = _skip(record)
            if why is not None:
                skipped[why] += 1
                progress(1)
                continue
            due = next_due(pace, index, record.timestamp, previous_timestamp, due)
            previous_timestamp, index = record.timestamp, index + 1
            wait = started + due - loop.time()
            if wait >= MIN_SLEEP:
                await asyncio.sleep(wait)  # pacing, not synchronisation: the schedule says "not yet"
            pending.append((record, await _send(client, record)))
            sent[record.command.label] += 1
            first = record.sequence if first is None else first
            last = record.sequence
            progress(1)
            if len(pending) >= window:
                await _settle(*pending.popleft())
        while pending:
            await _settle(*pending.popleft())
        await client.flush("persisted")
        return ReplaySummary(sent, skipped, time.perf_counter() - clock_started, first, last)


def _skip(record: JournalRecord) -> str | None:
    if record.command is Command.EXPIRE:
        return "expire"
    if record.message_type != "json":  # the only message type a connection speaks (uri.py)
        return f"message type {record.message_type}"
    if record.command is Command.SOW_DELETE and delete_criteria(record.payload) is None:
        return "unreadable sow_delete"
    return None


async def _send(client: Client, record: JournalRecord) -> PendingAck:
    if record.command is Command.SOW_DELETE:
        criteria = delete_criteria(record.payload)
        assert criteria is not None  # _skip checked it
        return await client.sow_delete_nowait(record.topic, filter=criteria.filter, keys=criteria.keys or (),
                                              data=criteria.data or b"")
    return await client.publish_nowait(record.topic, record.payload, delta=record.command is Command.DELTA_PUBLISH,
                                       expiration=record.expiration, sow_key=record.sow_key,
                                       correlation_id=record.correlation_id)


async def _settle(record: JournalRecord, pending: PendingAck) -> None:
    try:
        await pending.wait()
    except CommandFailed as exc:
        raise CommandFailed(f"{record.command.label} of journal record {record.sequence} (bm {record.bookmark})",
                            exc.ack) from None
