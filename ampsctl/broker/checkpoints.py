"""SOW checkpoints off the event loop: snapshot on the loop, write on a thread.

Theory of operation. Every ``checkpoint_interval`` the server calls ``start``. The changed
persistent groups are snapshotted on the loop, between two commands (``Durability.snapshot``:
references to the changed records, no rows), so a snapshot is the store at one journal
sequence. Writing it (rows, CRCs, SQLite, fsync: about 7 µs per changed record, 0.35 s for
50,000) runs on the checkpoint thread, and its outcome comes back to the loop. A SOW file may
only claim sequences that are on disk (``sow.checkpoint``'s contract), so a snapshot is
written once the journal is committed through the last sequence appended when it was taken:
at once if it is already, else after the commit ``start`` asks for (the server calls
``committed`` whenever its commit point moves).

While a write runs, the GIL switch interval is lowered to 0.5 ms: the writer's Python steps
(rows, CRCs) would otherwise keep the loop waiting up to the default 5 ms for the GIL.

Invariants:
1. At most one checkpoint is waiting or being written; ``start`` meanwhile does nothing (the
   next interval takes what changed since: the snapshot took the dirty sets, new changes go to
   fresh ones).
2. A snapshot is written only when ``durability.committed`` covers what was appended before it.
3. A failed write gives its keys back to the dirty sets (``Durability.restore``) and stops the
   broker, as a failed synchronous checkpoint did.
4. ``close`` waits for the write in flight and gives back a snapshot still waiting for its
   commit; the server then commits and checkpoints synchronously.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from ampsctl.broker.durability import BrokerFailure
from ampsctl.errors import AmpsctlError
from ampsctl.sow.checkpoint import Snapshot

if TYPE_CHECKING:
    from ampsctl.broker.server import BrokerServer

log = logging.getLogger("ampsctl.broker")
SWITCH_INTERVAL = 0.0005  # seconds: the GIL switch interval while a checkpoint is written

Snapshots = list[tuple[Path, Snapshot]]


class Checkpoints:
    """The server's checkpoint state machine (see the module docstring)."""

    def __init__(self, server: BrokerServer) -> None:
        self.server = server
        self._waiting: tuple[int, Snapshots] | None = None  # (sequence to be committed, snapshots)
        self._writing: tuple[Snapshots, asyncio.Future[int]] | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._switch: float | None = None  # the interval to restore when the write ends

    @property
    def busy(self) -> bool:
        return self._waiting is not None or self._writing is not None

    def start(self) -> None:
        """Snapshot what changed and write it once the journal covers it (invariants 1, 2)."""
        server = self.server
        if self.busy or server.failure is not None or server.closing:
            return
        durability = server.durability
        snapshots = durability.snapshot()
        if not snapshots:
            return
        self._waiting = (durability.appended, snapshots)
        if durability.committed < durability.appended:
            server.commit_soon()  # its completion calls ``committed``
        self.committed()

    def committed(self) -> None:
        """The commit point moved: write the waiting snapshot if it is now covered."""
        waiting = self._waiting
        server = self.server
        if waiting is None or server.durability.committed < waiting[0]:
            return
        if server.failure is not None or server.closing:
            return  # close() gives it back
        self._waiting = None
        snapshots = waiting[1]
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ampsctl-checkpoint")
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch, SWITCH_INTERVAL))
        writing = asyncio.get_running_loop().run_in_executor(self._thread, server.durability.write, snapshots)
        writing.add_done_callback(functools.partial(self._written, snapshots))
        self._writing = (snapshots, writing)

    def _written(self, snapshots: Snapshots, writing: asyncio.Future[int] | Future[int]) -> None:
        """The write returned (on the loop). Once per write."""
        if self._writing is None or self._writing[1] is not writing:
            return
        self._writing = None
        if self._switch is not None:
            sys.setswitchinterval(self._switch)
            self._switch = None
        error = writing.exception() if not writing.cancelled() else asyncio.CancelledError()
        if error is None:
            log.debug("checkpointed %d SOW file(s)", writing.result())
            return
        self.server.durability.restore(snapshots)  # invariant 3
        if not isinstance(error, AmpsctlError):
            error = BrokerFailure(f"the SOW checkpoint failed: {error!r}")
        self.server.fail(error)

    async def close(self) -> None:
        """Wait for the write in flight; give back a snapshot still waiting (invariant 4)."""
        if self._writing is not None:
            snapshots, writing = self._writing
            await asyncio.wait([writing])
            self._written(snapshots, writing)  # a no-op when its callback ran already
        if self._waiting is not None:
            self.server.durability.restore(self._waiting[1])
            self._waiting = None
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None
