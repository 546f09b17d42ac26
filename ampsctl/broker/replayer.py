"""The server's half of bookmark replay: find the start in the journal, then stream it in chunks.

Theory of operation. The core (``core/replay.py``) returns ``StartReplay`` from a bookmark
subscribe. The server then, before it executes anything else:

1. commits the journal, so every record up to the ticket's ``upto`` is in the files;
2. opens a ``JournalReader`` (a snapshot of the files as they are now) and ``locate``s the
   start: the bookmark's sequence when that record is in the journal and carries that bookmark
   (None otherwise, and the core applies ``bookmark_not_found``), or the first record logged at
   or after a timestamp;
3. hands the answer to ``replay.resolved`` (the ``processed`` ack, or the failure ack).

``stream`` then runs as a task: it reads records after the start and up to ``upto`` in chunks of
``CHUNK`` (only the subscription's topics), gives each chunk to ``replay.feed`` and executes the
frames, and yields to the event loop between chunks so other clients keep being served. Before
each chunk it waits while the subscriber's socket has more than ``PAUSE_BYTES`` queued (or the
outbound limit, when lower), so a big journal is paced by the reader instead of filling memory. It ends with ``replay.finish`` (held
live frames, then ``completed``), or stops as soon as the core says the ticket is stale
(unsubscribed, replaced, disconnected). A journal that cannot be read ends in ``replay.abort``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from pathlib import Path

from ampsctl.broker.core import BrokerCore
from ampsctl.broker.core import replay as core_replay
from ampsctl.broker.core.actions import Action
from ampsctl.broker.core.replay import ReplayTicket
from ampsctl.errors import AmpsctlError
from ampsctl.journal.bookmarks import parse_bookmark, publisher_hash
from ampsctl.journal.reader import JournalReader

log = logging.getLogger("ampsctl.broker")
CHUNK = 512  # records per step: large enough to amortise a call, small enough to keep latency low
PAUSE_BYTES = 4 << 20  # wait for the subscriber's socket to drain below this before the next chunk
_DRAIN_POLL = 0.005  # seconds between checks while a subscriber's socket drains


def locate(reader: JournalReader, ticket: ReplayTicket, bookmark_text: str) -> int | None:
    """The sequence to replay after; None when the bookmark is not in this journal."""
    position = ticket.position
    if position.timestamp is not None:
        for record in reader.scan(from_timestamp=position.timestamp, to_sequence=ticket.upto):
            return record.sequence - 1
        return ticket.upto  # nothing logged since then: start now
    sequence = position.sequence or 0
    if sequence == 0:
        return 0
    if sequence > ticket.upto:
        return None  # not yet written: a bookmark of another journal (or of a journal that was reset)
    record = reader.record_at(sequence)
    if record is None:
        return None
    # A list starts at its earliest bookmark; check the hash of the one that names this sequence.
    for part in bookmark_text.split(","):
        try:
            publisher, named = parse_bookmark(part)
        except AmpsctlError:
            continue
        if named == sequence:
            return sequence if publisher == publisher_hash(record.client_name or "") else None
    return sequence


class Replayer:
    """Runs the replays of one server (``execute`` and ``commit`` are the server's)."""

    def __init__(self, core: BrokerCore, journal_dir: Path | None, *, commit: Callable[[], None],
                 execute: Callable[[list[Action]], None], queued: Callable[[int], int | None],
                 clock: Callable[[], int], ended: Callable[[int], None] = lambda conn: None,
                 pause_bytes: int = PAUSE_BYTES) -> None:
        self.core = core
        self.clock = clock  # µs, for the config's actions a resolved start may run
        self.journal_dir = journal_dir
        self.commit = commit
        self.execute = execute
        self.queued = queued  # bytes waiting on a connection's socket; None once it is gone
        self.ended = ended  # told the connection when one of its streams ends (a half-closed client waits for it)
        self.tasks: set[asyncio.Task[None]] = set()
        self.streaming: dict[int, int] = {}  # connection -> replays it is streaming
        # A chunk goes out once the subscriber has read down to this: never above the outbound
        # limit, or the chunk would not count as a reply the client caught up for (connection.py).
        self.pause_bytes = pause_bytes

    def serving(self, conn: int) -> bool:
        """Whether a replay is still streaming to ``conn`` (a half-closed client is owed the rest)."""
        return conn in self.streaming

    def start(self, ticket: ReplayTicket) -> None:
        """Steps 1-3 (synchronous, so the acks keep their place on the connection), then ``stream``."""
        core = self.core
        state = ticket.subscription.replay
        if state is None:
            return
        reader: JournalReader | None = None
        try:
            self.commit()
            if self.journal_dir is None:
                found: int | None = 0 if ticket.upto == 0 else None
            else:
                reader = JournalReader(self.journal_dir)
                found = locate(reader, ticket, state.bookmark)
        except AmpsctlError as exc:
            self.execute(core_replay.abort(core, ticket, exc.message))
            return
        self.execute(core_replay.resolved(core, ticket, found, self.clock()))
        if not core_replay.active(core, ticket):
            return
        if reader is None or ticket.after is None or ticket.after >= ticket.upto:
            self.execute(core_replay.finish(core, ticket))
            return
        task = asyncio.get_running_loop().create_task(self.stream(reader, ticket))
        self.tasks.add(task)
        conn = ticket.conn
        self.streaming[conn] = self.streaming.get(conn, 0) + 1
        task.add_done_callback(lambda done: self._done(done, conn))

    def _done(self, task: asyncio.Task[None], conn: int) -> None:
        self.tasks.discard(task)
        left = self.streaming.pop(conn, 1) - 1
        if left:
            self.streaming[conn] = left
        else:
            self.ended(conn)

    async def stream(self, reader: JournalReader, ticket: ReplayTicket) -> None:
        core = self.core
        try:
            records = reader.scan(after_sequence=ticket.after or 0, to_sequence=ticket.upto,
                                  topics=ticket.topic_matches)
            while True:
                await self._drained(ticket)
                chunk = list(itertools.islice(records, CHUNK))
                actions = core_replay.feed(core, ticket, chunk)
                if actions is None:
                    return  # unsubscribed, replaced or disconnected: the replay stops here
                self.execute(actions)
                if len(chunk) < CHUNK:
                    break
                await asyncio.sleep(0)  # let other clients in between chunks
            self.execute(core_replay.finish(core, ticket))
        except AmpsctlError as exc:
            self.execute(core_replay.abort(core, ticket, exc.message))
        except Exception:  # a bug: lose this client, not the broker
            log.exception("internal error while replaying for connection %d", ticket.conn)
            self.execute(core_replay.abort(core, ticket, "internal error (see the log)"))

    async def _drained(self, ticket: ReplayTicket) -> None:
        while not ticket.overflowed:
            queued = self.queued(ticket.conn)
            if queued is None or queued <= self.pause_bytes or not core_replay.active(self.core, ticket):
                return
            await asyncio.sleep(_DRAIN_POLL)

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        for task in list(self.tasks):
            try:
                await task
            except asyncio.CancelledError:
                pass
