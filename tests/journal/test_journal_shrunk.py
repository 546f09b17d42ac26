"""A last segment that lost whole records after a clean close (a restored backup, a file cut
by hand or by the disk) is refused when the journal is opened for appending: the index the
clean close wrote says how far it went. Cut exactly at a record boundary it had looked like a
healthy journal, and the records acknowledged at its end vanished without a word (the broker
found this: tests/broker/test_crash_damage.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from journal_helpers import record_offsets, segment_files

from ampsctl.journal.errors import JournalCorruptError
from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy, JournalWriter


def _journal(directory: Path, count: int) -> Path:
    with JournalWriter.open(directory, fsync=FsyncPolicy.NEVER) as writer:
        for n in range(count):
            writer.append(1_000_000 + n, Command.PUBLISH, "orders", "json", b'{"id":%d}' % n)
    return segment_files(directory)[-1]


@pytest.mark.parametrize("where", ["boundary", "inside"])
def test_a_last_segment_shorter_than_its_index_is_refused(tmp_path: Path, where: str) -> None:
    last = _journal(tmp_path, 10)
    offsets = record_offsets(last)
    os.truncate(last, offsets[7] if where == "boundary" else offsets[7] + 5)
    with pytest.raises(JournalCorruptError) as caught:
        JournalWriter.open(tmp_path, fsync=FsyncPolicy.NEVER)
    message = str(caught.value)
    assert "index" in message and "sequence 10" in message and last.name in message, message
    assert last.with_suffix(".index").exists()  # left as it was, for the operator


def test_deleting_the_index_accepts_the_loss_and_a_crash_without_one_is_a_torn_tail(tmp_path: Path) -> None:
    last = _journal(tmp_path, 10)
    os.truncate(last, record_offsets(last)[7] + 5)
    last.with_suffix(".index").unlink()
    with JournalWriter.open(tmp_path, fsync=FsyncPolicy.NEVER) as writer:
        assert writer.last_sequence == 7 and writer.recovery is not None


def test_a_cleanly_closed_journal_reopens(tmp_path: Path) -> None:
    _journal(tmp_path, 10)
    with JournalWriter.open(tmp_path, fsync=FsyncPolicy.NEVER) as writer:
        assert writer.last_sequence == 10 and writer.recovery is None


def test_verify_says_records_were_lost_as_the_writer_does(tmp_path: Path) -> None:
    """`journal verify` told the user to delete the index ("readers rebuild it") without a word
    about the records the cut lost, while the writer refused the same journal for that loss."""
    import subprocess
    import sys

    last = _journal(tmp_path / "journal", 10)
    os.truncate(last, record_offsets(last)[7])
    done = subprocess.run([sys.executable, "-m", "ampsctl", "journal", "verify", str(tmp_path / "journal")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "records were lost from its end" in done.stdout and "through sequence 10" in done.stdout, done.stdout
    assert "readers rebuild it" not in done.stdout
