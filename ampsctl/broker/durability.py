"""Durability for the running broker: journal appends, group commit, persisted acks, checkpoints.

Theory of operation. The core numbers journal records and the server hands them here in order
(``append``). The writer buffers them; a commit writes and, unless the policy is NEVER, fsyncs
them. The FlushInterval timer's commit is split so the event loop never waits for the disk:
``begin_commit`` writes on the loop and returns the fsync (a ``SyncJob``) for the server to run
on a worker thread; ``end_commit``, back on the loop, takes its outcome. ``commit`` does both
at once (shutdown, checkpoints, bookmark replay). Frames that must wait for the disk
(``persisted`` acks, ``SendDurable``) are held in one FIFO and released by the commit that
covers their sequence. ``checkpoint`` brings each persistent SOW topic's file up to date with
the store, always right after a commit, so a file never claims a sequence that is not on disk
(``sow.checkpoint``'s contract: only acknowledged journal records may be checkpointed).

Invariants:
1. ``writer.last_sequence`` equals the core's ``last_sequence`` after every append; a mismatch
   is a bug and stops the broker (BrokerFailure) rather than leaving journal and SOW disagreeing.
2. A held frame is released only when ``committed >= sequence``, and held frames are released
   in the order they were held. ``committed`` moves only when the writer says the records are
   durable (``commit`` returned, or ``end_commit`` with a job that succeeded), and never back.
3. A journal write error (disk full, permissions) is fatal for the broker (EnvironmentProblem):
   acknowledging further publishes would promise what cannot be kept.
4. A synchronous ``commit`` or ``checkpoint`` that fails keeps its error in ``error`` (the
   first one), so a failure during shutdown, which the server does not raise again, still
   ends ``serve`` with that error: a log line and exit code 4, never a silent exit 0.
"""

from __future__ import annotations

import logging
from collections import deque
from pathlib import Path

from ampsctl.errors import AmpsctlError
from ampsctl.journal.record import JournalRecord
from ampsctl.journal.writer import FsyncPolicy, JournalWriter, SyncJob
from ampsctl.sow.checkpoint import Snapshot, take_snapshot, write_snapshot
from ampsctl.sow.recovery import sow_path
from ampsctl.sow.store import SowStore

log = logging.getLogger("ampsctl.broker")


class BrokerFailure(AmpsctlError):
    """The broker cannot go on (an internal inconsistency); it shuts down."""


class Durability:
    """See the module docstring. ``writer`` is None when the config has no TransactionLog."""

    def __init__(self, writer: JournalWriter | None, store: SowStore, base_dir: Path) -> None:
        self.writer = writer
        self.store = store
        self.base_dir = base_dir
        self.committed = writer.last_sequence if writer is not None else 0
        self._held: deque[tuple[int, int, bytes]] = deque()  # (sequence, conn, frame)
        self._sync = writer is None or writer.fsync is not FsyncPolicy.NEVER
        self.error: AmpsctlError | None = None  # the first failed commit or checkpoint (invariant 4)

    @property
    def appended(self) -> int:
        """The sequence of the last record appended (0 without a journal)."""
        return self.writer.last_sequence if self.writer is not None else 0

    @property
    def uncommitted(self) -> bool:
        return self.writer is not None and self.writer.last_sequence > self.committed

    def append(self, record: JournalRecord) -> None:
        writer = self.writer
        if writer is None:
            raise BrokerFailure("the core asked to journal a record but the broker has no journal")
        written = writer.append_record(record)  # this runs for every publish
        if written != record.sequence:
            raise BrokerFailure(f"journal sequence mismatch: the core numbered a record {record.sequence}, "
                                f"the journal wrote {written}")

    def hold(self, sequence: int, conn: int, frame: bytes) -> bool:
        """Keep ``frame`` until ``sequence`` is committed; False when it may be sent now."""
        if sequence <= self.committed and not self._held:
            return False
        self._held.append((sequence, conn, frame))
        return True

    def commit(self) -> list[tuple[int, bytes]]:
        """Commit the journal now (blocking on the fsync); the held frames it releases (``release``)."""
        if self.writer is not None and self.uncommitted:
            try:
                self.writer.commit()
            except AmpsctlError as exc:
                self._failed(exc)
                raise
            self.committed = self.writer.last_sequence
        return self.release()

    def _failed(self, error: AmpsctlError) -> None:
        if self.error is None:
            self.error = error

    def begin_commit(self) -> SyncJob | None:
        """Write what is pending; the fsync to run off the loop, or None when none is owed.

        With None the records are as durable as the policy makes them already: ``release``."""
        writer = self.writer
        if writer is None or not self.uncommitted:
            return None
        job = writer.start_sync()
        if job is None:
            self._advance(writer.synced_sequence)
        return job

    def end_commit(self, job: SyncJob, error: BaseException | None) -> list[tuple[int, bytes]]:
        """``job`` ran (``error``: it failed, fatal): the held frames it releases, in order."""
        assert self.writer is not None
        self.writer.finish_sync(job, error)  # raises EnvironmentProblem after a failed fsync
        self._advance(job.sequence)
        return self.release()

    def _advance(self, sequence: int) -> None:
        if sequence > self.committed:  # a synchronous commit may have gone further meanwhile
            self.committed = sequence

    def holds(self, conn: int) -> bool:
        """Whether a frame for ``conn`` is held (its commit has not returned yet)."""
        return any(held_conn == conn for _, held_conn, _ in self._held)

    def release(self) -> list[tuple[int, bytes]]:
        """The held (conn, frames) pairs that the commits so far cover, in order.

        Consecutive frames for one connection come joined into one write (a publisher's
        persisted acks for a whole group commit are typically one run): the bytes each
        connection receives, and their order, are the same as one pair per frame."""
        held, committed = self._held, self.committed
        released: list[tuple[int, bytes]] = []
        run_conn, run = 0, []
        while held and held[0][0] <= committed:
            _, conn, frame = held.popleft()
            if run and conn != run_conn:
                released.append((run_conn, run[0] if len(run) == 1 else b"".join(run)))
                run = []
            run_conn = conn
            run.append(frame)
        if run:
            released.append((run_conn, run[0] if len(run) == 1 else b"".join(run)))
        return released

    def checkpoint(self) -> int:
        """Write what changed in each persistent SOW topic to its file, now; the groups written.

        The caller commits first (see the module docstring)."""
        snapshots = self.snapshot()
        try:
            return self.write(snapshots)
        except BaseException as exc:
            self.restore(snapshots)
            if isinstance(exc, AmpsctlError):
                self._failed(exc)
            raise

    def snapshot(self) -> list[tuple[Path, Snapshot]]:
        """Each changed persistent group as its checkpoint writes it (``sow.checkpoint.take_snapshot``),
        taken now, between two commands; ``write`` may then run on another thread.

        The caller commits first: a snapshot's sequence must be durable when its file is written."""
        snapshots = []
        for group in self.store.groups:
            path = sow_path(group.spec, self.base_dir)
            if path is None or not (group.dirty or group.needs_rewrite):
                continue
            rewrite = group.needs_rewrite or not path.exists()
            snapshots.append((path, take_snapshot(group, sequence=self.store.group_sequence(group), rewrite=rewrite)))
        return snapshots

    def write(self, snapshots: list[tuple[Path, Snapshot]]) -> int:
        """Write the snapshots to their files (any thread; reads nothing the loop changes); how many."""
        for path, snapshot in snapshots:
            write_snapshot(path, snapshot, sync=self._sync)
        return len(snapshots)

    @staticmethod
    def restore(snapshots: list[tuple[Path, Snapshot]]) -> None:
        """The write failed: the next checkpoint writes those records again."""
        for _, snapshot in snapshots:
            snapshot.restore()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
