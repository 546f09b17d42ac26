"""A stateful model of the writer under crashes: appends, commits, rotations, and a crash that
cuts the last segment at any byte after its last commit (what an OS may lose), then reopen.

Model: the list of records appended. Properties after every reopen:
* every acknowledged record (appended before the last commit) is there, unchanged;
* what the journal holds is a prefix of what was appended (a torn tail is cut, never skipped,
  and nothing is invented), so sequences run 1, 2, 3 ... with no gap;
* the next append continues right after the last record the journal holds.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ampsctl.journal.codec import HEADER_SIZE
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command, JournalRecord
from ampsctl.journal.writer import FsyncPolicy, JournalWriter


class CrashingJournal(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="journal-crash-"))
        self.writer: JournalWriter | None = JournalWriter.open(self.directory, segment_bytes=700, fsync=FsyncPolicy.GROUP)
        self.appended: list[JournalRecord] = []
        self.acknowledged = 0
        self.durable = (self.writer.path, HEADER_SIZE)  # the last segment and its size at the last commit

    def teardown(self) -> None:
        if self.writer is not None:
            self.writer.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    @precondition(lambda self: self.writer is not None)
    @rule(command=st.sampled_from(Command), key=st.integers(0, 20), size=st.integers(0, 120), delta=st.integers(-5, 1000))
    def append(self, command: Command, key: int, size: int, delta: int) -> None:
        assert self.writer is not None
        timestamp = (self.appended[-1].timestamp if self.appended else 1_000_000) + delta
        payload = b"" if command is Command.EXPIRE else b"x" * size
        record = self.writer.append(timestamp, command, "orders", "json", payload, sow_key=str(key))
        assert record.sequence == len(self.appended) + 1
        self.appended.append(record)

    @precondition(lambda self: self.writer is not None)
    @rule()
    def commit(self) -> None:
        assert self.writer is not None
        self.writer.commit()
        self.acknowledged = len(self.appended)
        self.durable = (self.writer.path, self.writer.path.stat().st_size)

    @precondition(lambda self: self.writer is not None)
    @rule(fraction=st.floats(0, 1))
    def crash(self, fraction: float) -> None:
        """Lose the process (pending records vanish) and any bytes written after the last sync."""
        assert self.writer is not None
        last = self.writer.path
        self.writer._release()  # no commit, no index: like a kill -9
        self.writer = None
        size = last.stat().st_size
        path, synced = self.durable
        floor = synced if path == last else HEADER_SIZE  # a segment created since was synced with its header
        cut = floor + int((size - floor) * fraction)
        with open(last, "r+b") as stream:
            stream.truncate(cut)

    @precondition(lambda self: self.writer is None)
    @rule()
    def reopen(self) -> None:
        self.writer = JournalWriter.open(self.directory, segment_bytes=700, fsync=FsyncPolicy.GROUP)
        held = list(JournalReader(self.directory).scan())
        assert len(held) >= self.acknowledged
        assert held == self.appended[: len(held)]
        assert self.writer.last_sequence == len(held)
        self.appended = held
        self.acknowledged = len(held)  # what survived a crash is on disk now (recovery synced the cut)
        self.durable = (self.writer.path, self.writer.path.stat().st_size)

    @invariant()
    def sequences_never_skip(self) -> None:
        assert [r.sequence for r in self.appended] == list(range(1, len(self.appended) + 1))


CrashingJournal.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
test_crashes = CrashingJournal.TestCase
