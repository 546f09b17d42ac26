"""Writing a journal: append, group commit, segment rotation, and recovery on open.

Theory of operation. The writer owns one journal directory (an exclusive ``flock`` on
``journal.lock`` keeps a second writer out) and appends to its last segment. ``append``
encodes a record into a pending buffer; the buffer goes to the OS when it reaches 1 MiB or on
``commit``, and is fsynced according to the policy:

* ALWAYS: every ``append`` writes and fsyncs before it returns;
* GROUP: ``commit`` writes and fsyncs. The caller commits on its own timer (every N ms) and
  after a batch: group commit without the journal reading a clock. A caller that must not
  block on the fsync splits the commit: ``start_sync`` writes the pending records (on the
  owner's thread) and returns a ``SyncJob`` whose ``run`` fsyncs them on any thread;
  ``finish_sync`` (owner's thread again) records the outcome. Only then are they acknowledged;
* NEVER: ``commit`` only hands the bytes to the OS.

Invariants:
* Sequences are assigned here, ``last_sequence + 1`` on, strictly increasing across segments
  and never reused, also after recovery.
* A record is acknowledged when ``append`` returns (ALWAYS) or the next ``commit`` returns
  (GROUP); from then on it is on disk and recovery never cuts it: recovery cuts only a torn
  tail, the bytes after the last intact record with no intact record after them.
* Only the last segment can have a torn tail: whatever the policy, a segment is written out,
  fsynced and indexed before the next one is created.
* An OS error (a full disk, a lost permission, an I/O error) stops the writer: the segment is
  cut back to the end of the last write that succeeded, so no partial record stays behind,
  and every later call raises EnvironmentProblem naming the last acknowledged sequence.
  Records not yet acknowledged may be lost; acknowledged ones are untouched. Reopening the
  journal continues from what the files hold.
* Opening recovers (recovery.py): a torn last-segment header is removed, a torn tail is cut
  and reported in ``recovery``; damage, a gap between segments, or a file that is not a
  segment is refused. The last segment is checked whole, sealed ones through their index.
* No clock: timestamps are the caller's. Not thread-safe: the writer has one owner (the
  broker's event loop, an import). The one exception is ``SyncJob.run``: it fsyncs its own
  duplicate of the segment's descriptor and touches no writer state, so appends, a rotation
  (which fsyncs and closes the segment itself) or a synchronous ``commit`` may run meanwhile.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from ampsctl.errors import EnvironmentProblem, InputError
from ampsctl.journal import files
from ampsctl.journal.codec import HEADER_SIZE, Encoder, encode_header
from ampsctl.journal.files import LOCK_NAME, environment_error
from ampsctl.journal.index import NO_TIMESTAMP, SPACING, SegmentIndex
from ampsctl.journal.record import COMMANDS, Command, JournalRecord
from ampsctl.journal.recovery import Recovery, recover
from ampsctl.journal.segment import segment_name

__all__ = ["DEFAULT_SEGMENT_BYTES", "FsyncPolicy", "JournalWriter", "LOCK_NAME", "Recovery", "SyncJob"]

MIB = 1 << 20
DEFAULT_SEGMENT_BYTES = 64 * MIB
MIN_SEGMENT_BYTES = 512
FLUSH_BYTES = MIB  # pending bytes handed to the OS before commit (GROUP, NEVER)


class FsyncPolicy(enum.Enum):
    ALWAYS = "always"
    GROUP = "group"
    NEVER = "never"


class SyncJob:
    """The fsync half of a split commit (``JournalWriter.start_sync``): makes every record up to
    ``sequence`` durable. ``run`` may be called on any thread, exactly once."""

    __slots__ = ("fd", "sequence")

    def __init__(self, fd: int, sequence: int) -> None:
        self.fd = fd  # a duplicate of the segment's descriptor, owned (and closed) by the job
        self.sequence = sequence

    def run(self) -> None:
        """fsync, then close the duplicate; an OSError goes to ``finish_sync``."""
        try:
            os.fsync(self.fd)
        finally:
            os.close(self.fd)


class JournalWriter:
    """Appends records to a journal directory; see the module docstring. Use ``open``."""

    def __init__(self, directory: Path, segment_bytes: int, fsync: FsyncPolicy, lock_fd: int) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.fsync = fsync
        self.recovery: Recovery | None = None
        self._lock_fd = lock_fd
        self._fd = -1
        self._path = directory
        self._index = SegmentIndex(0, 1)  # entries of the current segment; its summary is kept below
        self._first_timestamp: int | None = None
        self._last_timestamp: int | None = None
        self._max_timestamp = NO_TIMESTAMP
        self._next_entry = 0  # offset at or after which the next record gets an index entry
        self._flush_at = FLUSH_BYTES  # pending size that triggers a write (0 under ALWAYS: every append)
        self._written = 0  # bytes of the current segment handed to the OS
        self._end = 0  # size of the current segment with the pending records: where the next one goes
        self._usable = False  # False once closed or stopped: append checks one flag
        self._pending = bytearray()  # encoded records not yet handed to the OS
        self._next = 1  # the sequence the next record gets
        self._written_sequence = 0  # the last sequence handed to the OS
        self._synced_sequence = 0  # the last sequence known to be on disk
        self._encode = Encoder().encode
        self._stopped: str | None = None  # why the writer stopped after an OS error
        self._closed = False

    # ------------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        fsync: FsyncPolicy = FsyncPolicy.GROUP,
    ) -> JournalWriter:
        """Open (creating if needed) the journal in ``directory`` and recover it for appending."""
        if not isinstance(segment_bytes, int) or segment_bytes < MIN_SEGMENT_BYTES:
            raise InputError(f"segment size {segment_bytes!r} is too small", code="JOURNAL_CONFIG",
                             hint=f"give at least {MIN_SEGMENT_BYTES} bytes (the default is {DEFAULT_SEGMENT_BYTES})")
        path = Path(directory)
        files.make_directory(path)
        lock_fd = files.lock(path)
        writer = cls(path, segment_bytes, fsync, lock_fd)
        if fsync is FsyncPolicy.ALWAYS:
            writer._flush_at = 0
        try:
            writer._recover()
        except BaseException:
            writer._release()
            raise
        writer._usable = True
        return writer

    def _recover(self) -> None:
        found = recover(self.directory, durable=self.fsync is not FsyncPolicy.NEVER)
        self.recovery = found.report
        if found.path is None or found.index is None:
            self._start_segment(1, 1)
            return
        path, index = found.path, found.index
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            self._written = self._end = os.fstat(self._fd).st_size
            if self.fsync is not FsyncPolicy.NEVER:
                os.fsync(self._fd)  # records that survived a crash in the page cache are now durable too
        except OSError as exc:
            raise environment_error(exc, "open for appending", path) from None
        self._track(path, index)
        self._next = index.last_sequence + 1
        self._written_sequence = self._synced_sequence = index.last_sequence

    def _start_segment(self, number: int, first_sequence: int) -> None:
        path = self.directory / segment_name(number)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except OSError as exc:
            raise environment_error(exc, "create journal segment", path) from None
        self._fd = fd
        self._track(path, SegmentIndex(number, first_sequence, HEADER_SIZE))
        self._written = 0
        self._end = HEADER_SIZE
        self._pending[:0] = encode_header(number, first_sequence)
        self._write_pending()  # the header goes out now: an empty segment is still a valid one
        if self.fsync is not FsyncPolicy.NEVER:
            self._fsync(fd, path)
            self._sync_directory()

    # ------------------------------------------------------------------------ appending

    @property
    def last_sequence(self) -> int:
        """The sequence of the last record appended (0 for an empty journal)."""
        return self._next - 1

    @property
    def path(self) -> Path:
        """The segment being appended to."""
        return self._path

    def append(
        self,
        timestamp: int,
        command: Command,
        topic: str,
        message_type: str,
        payload: bytes,
        *,
        sow_key: str | None = None,
        expiration: int | None = None,
        correlation_id: str | None = None,
        client_name: str | None = None,
        publisher_sequence: int | None = None,
    ) -> JournalRecord:
        """Append one record and return it with its sequence. Under ALWAYS it is on disk now."""
        sequence = self._append(timestamp, command, topic, message_type, payload, sow_key, expiration,
                                correlation_id, client_name, publisher_sequence)
        if type(payload) is not bytes:
            payload = bytes(payload)
        return tuple.__new__(JournalRecord, (sequence, timestamp, COMMANDS[command], topic, message_type, payload,
                                             sow_key, expiration, correlation_id, client_name, publisher_sequence))

    def append_record(self, record: JournalRecord) -> int:
        """``append`` of a record's fields (its ``sequence`` is ignored); the sequence it got.

        For the broker, which checks that sequence against its own numbering and needs no
        record back: one positional call and no new tuple per publish."""
        (_, timestamp, command, topic, message_type, payload, sow_key, expiration, correlation_id, client_name,
         publisher_sequence) = record
        return self._append(timestamp, command, topic, message_type, payload, sow_key, expiration,
                            correlation_id, client_name, publisher_sequence)

    def _append(self, timestamp: int, command: Command, topic: str, message_type: str, payload: bytes,
                sow_key: str | None, expiration: int | None, correlation_id: str | None, client_name: str | None,
                publisher_sequence: int | None) -> int:
        if not self._usable:
            self._check_usable()
        sequence = self._next
        data = self._encode(sequence, timestamp, command, topic, message_type, payload, sow_key,
                            expiration, correlation_id, client_name, publisher_sequence)
        # _add, inlined: this is the broker's hot path
        offset = self._end
        end = offset + len(data)
        if end > self.segment_bytes and sequence != self._index.first_sequence:
            self._rotate()  # a record larger than a segment still gets a segment of its own
            offset = self._end
            end = offset + len(data)
        if offset >= self._next_entry:
            self._add_entry(sequence, offset, timestamp)
        if timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        self._last_timestamp = timestamp
        self._end = end
        self._next = sequence + 1
        pending = self._pending
        pending += data
        if len(pending) >= self._flush_at:
            self._flush()
        return sequence

    def append_many(self, records: Iterable[JournalRecord]) -> int:
        """Append records in order; each one's ``sequence`` is ignored and assigned here. The
        sequence of the last one (the journal's last sequence when ``records`` is empty).

        Under ALWAYS they are on disk when this returns (one fsync for the lot). An invalid
        record raises InputError; the records before it stay appended. No records are built
        back (``journal import`` needs none: about 0.25 µs a record).
        """
        self._check_usable()
        encode = self._encode
        add = self._add
        for record in records:
            sequence = self._next
            (_, timestamp, command, topic, message_type, payload, sow_key, expiration, correlation_id,
             client_name, publisher_sequence) = record
            add(encode(sequence, timestamp, command, topic, message_type, payload, sow_key, expiration,
                       correlation_id, client_name, publisher_sequence), sequence, timestamp)
            if len(self._pending) >= FLUSH_BYTES:
                self._write_pending()
        if self.fsync is FsyncPolicy.ALWAYS:
            self._sync()
        return self._next - 1

    def _add(self, data: bytes, sequence: int, timestamp: int) -> None:
        offset = self._end
        if offset + len(data) > self.segment_bytes and sequence != self._index.first_sequence:
            self._rotate()
            offset = self._end
        if offset >= self._next_entry:
            self._add_entry(sequence, offset, timestamp)
        if timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        self._last_timestamp = timestamp
        self._end = offset + len(data)
        self._pending += data
        self._next = sequence + 1

    def _add_entry(self, sequence: int, offset: int, timestamp: int) -> None:
        index = self._index
        index.sequences.append(sequence)
        index.offsets.append(offset)
        index.max_before.append(self._max_timestamp)
        self._next_entry = offset + SPACING
        if sequence == index.first_sequence:  # the segment's first record always starts an entry
            self._first_timestamp = timestamp

    def _flush(self) -> None:
        if self.fsync is FsyncPolicy.ALWAYS:
            self._sync()
        else:
            self._write_pending()

    def _track(self, path: Path, index: SegmentIndex) -> None:
        """Make ``index`` (entries and summary) the running index of the segment at ``path``."""
        self._path, self._index = path, index
        self._first_timestamp = index.first_timestamp
        self._last_timestamp = index.last_timestamp
        self._max_timestamp = index.max_timestamp
        self._next_entry = index.next_entry

    def _summary(self) -> SegmentIndex:
        """The current segment's index, summary brought up to date."""
        index = self._index
        index.records = self._next - index.first_sequence
        index.last_sequence = self._next - 1
        index.covered_bytes = self._end
        index.first_timestamp = self._first_timestamp
        index.last_timestamp = self._last_timestamp
        index.max_timestamp = self._max_timestamp
        index.next_entry = self._next_entry
        return index

    def commit(self) -> None:
        """Hand pending records to the OS and, unless the policy is NEVER, fsync them."""
        self._check_usable()
        self._write_pending()
        if self.fsync is not FsyncPolicy.NEVER and self._synced_sequence != self._written_sequence:
            self._fsync(self._fd, self._path)
            self._synced_sequence = self._written_sequence

    def start_sync(self) -> SyncJob | None:
        """The first half of a split ``commit``: hand pending records to the OS now; the fsync
        still owed for them, or None when nothing is (NEVER, or everything written is synced).

        The job fsyncs a duplicate descriptor: the segment may rotate and close meanwhile
        (rotation fsyncs it itself first), and the duplicate still names the same file."""
        self._check_usable()
        self._write_pending()
        if self.fsync is FsyncPolicy.NEVER or self._synced_sequence == self._written_sequence:
            return None
        try:
            fd = os.dup(self._fd)
        except OSError as exc:
            raise self._stop(exc, "fsync journal segment") from None
        return SyncJob(fd, self._written_sequence)

    def finish_sync(self, job: SyncJob, error: BaseException | None) -> None:
        """The second half, on the owner's thread: ``job`` ran (``error``: how it failed).

        A failed fsync stops the writer (EnvironmentProblem) like one made by ``commit``; a
        writer that stopped or closed meanwhile raises too, and acknowledges nothing more."""
        self._check_usable()
        if error is not None:
            if not isinstance(error, OSError):
                raise error
            raise self._stop(error, "fsync journal segment")
        if job.sequence > self._synced_sequence:  # a synchronous commit may have gone further meanwhile
            self._synced_sequence = job.sequence

    @property
    def synced_sequence(self) -> int:
        """The last sequence known to be durable (under NEVER: handed to the OS)."""
        return self._written_sequence if self.fsync is FsyncPolicy.NEVER else self._synced_sequence

    def close(self) -> None:
        """Commit, write the last segment's index, release the journal. Idempotent."""
        if self._closed:
            return
        try:
            if self._stopped is None:
                self.commit()
                self._write_index(self._path, self._summary())
        finally:
            self._release()

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:  # the caller failed: keep what is acknowledged, but do not hide its error behind ours
            try:
                self.close()
            except EnvironmentProblem:
                pass

    # ------------------------------------------------------------------------ file work

    def _rotate(self) -> None:
        """Seal the current segment (written, fsynced, indexed) and start the next one."""
        self._write_pending()
        self._fsync(self._fd, self._path)
        self._synced_sequence = self._written_sequence
        os.close(self._fd)
        self._fd = -1
        self._write_index(self._path, self._summary(), sync=True)
        self._start_segment(self._index.number + 1, self._next)

    def _write_pending(self) -> None:
        pending = self._pending
        if not pending:
            return
        try:
            files.write_all(self._fd, pending)
        except OSError as exc:
            raise self._stop(exc, "write journal segment") from None
        self._written += len(pending)
        self._written_sequence = self._next - 1
        self._pending = bytearray()

    def _sync(self) -> None:
        self._write_pending()
        self._fsync(self._fd, self._path)
        self._synced_sequence = self._written_sequence

    def _fsync(self, fd: int, path: Path) -> None:
        try:
            os.fsync(fd)
        except OSError as exc:
            raise self._stop(exc, "fsync journal segment") from None

    def _write_index(self, segment: Path, index: SegmentIndex, *, sync: bool | None = None) -> None:
        durable = self.fsync is not FsyncPolicy.NEVER if sync is None else sync
        try:
            files.write_index_file(segment, index, durable=durable)
        except OSError as exc:
            raise self._stop(exc, "write journal index") from None

    def _sync_directory(self) -> None:
        try:
            files.sync_directory(self.directory)
        except OSError as exc:
            raise self._stop(exc, "fsync journal directory") from None

    def _stop(self, exc: OSError, action: str) -> EnvironmentProblem:
        """Stop for good after an OS error: cut the partial write, drop what was not acknowledged."""
        safe = self._synced_sequence if self.fsync is not FsyncPolicy.NEVER else self._written_sequence
        lost = self._next - 1 - safe
        self._stopped = f"{action} failed: {files.reason(exc)}"
        if self._fd >= 0:
            try:
                os.ftruncate(self._fd, self._written)  # no partial record stays behind
            except OSError:
                pass  # then reopening finds it as a torn tail and cuts it
        self._pending = bytearray()
        self._end = self._written
        self._usable = False
        detail = (f"; records up to sequence {safe} are safely written"
                  + (f"; the {lost} after it were not acknowledged" if lost > 0 else ""))
        return environment_error(exc, action, self._path, detail)

    def _check_usable(self) -> None:
        if self._closed:
            raise EnvironmentProblem(f"journal writer for '{self.directory}' is closed", code="JOURNAL_CLOSED",
                                     hint="open the journal again with JournalWriter.open")
        if self._stopped is not None:
            raise EnvironmentProblem(f"journal writer for '{self.directory}' stopped after an error: {self._stopped}",
                                     code="JOURNAL_STOPPED", hint="fix the cause, then close and open the journal again")

    def _release(self) -> None:
        self._closed = True
        self._usable = False
        for fd in (self._fd, self._lock_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._fd = self._lock_fd = -1
