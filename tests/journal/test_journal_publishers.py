"""``publisher_marks``: the broker's publisher memory read from record views must equal what
the decoded records say (the broker used to decode every record at start-up for it)."""

from __future__ import annotations

import random
from pathlib import Path

from ampsctl.journal.publishers import publisher_marks
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy, JournalWriter

NAMES = [None, "", "pub-a", "pub-b", "pübl€r", "x" * 300]


def _decoded_marks(reader: JournalReader) -> dict[str, tuple[int | None, int]]:
    marks: dict[str, tuple[int | None, int]] = {}
    for record in reader.scan():
        if record.command not in (Command.PUBLISH, Command.DELTA_PUBLISH) or record.client_name is None:
            continue
        highest, _ = marks.get(record.client_name, (None, 0))
        if record.publisher_sequence is not None and (highest is None or record.publisher_sequence > highest):
            highest = record.publisher_sequence
        marks[record.client_name] = (highest, record.sequence)
    return marks


def test_marks_equal_the_decoded_records_across_segments(tmp_path: Path) -> None:
    rng = random.Random(7)
    with JournalWriter.open(tmp_path, fsync=FsyncPolicy.NEVER, segment_bytes=64 * 1024) as writer:
        for n in range(5000):
            command = rng.choice(list(Command))
            writer.append(n, command, rng.choice(["orders", "t/ü"]), "json", b'{"id":1}' if command != Command.EXPIRE else b"",
                          sow_key=rng.choice([None, "k1", "kkkk2"]), correlation_id=rng.choice([None, "", "corr"]),
                          client_name=rng.choice(NAMES), expiration=rng.choice([None, 0, 60]),
                          publisher_sequence=rng.choice([None, 0, rng.randrange(1, 2**64)]))
    assert len(list(tmp_path.glob("*.journal"))) > 3
    reader = JournalReader(tmp_path)
    expected = _decoded_marks(reader)
    assert publisher_marks(reader) == expected
    assert set(expected) == {name for name in NAMES if name is not None}


def test_an_empty_journal_has_no_marks(tmp_path: Path) -> None:
    JournalWriter.open(tmp_path, fsync=FsyncPolicy.NEVER).close()
    assert publisher_marks(JournalReader(tmp_path)) == {}
