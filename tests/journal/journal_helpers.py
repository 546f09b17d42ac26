"""Shared helpers for the journal tests: build small journals and damage them on purpose."""

from __future__ import annotations

from pathlib import Path

from ampsctl.journal.codec import HEADER_SIZE
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command, JournalRecord
from ampsctl.journal.writer import FsyncPolicy, JournalWriter

BASE_TIME = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z


def build(directory: Path, count: int, *, segment_bytes: int = 4096, topics: tuple[str, ...] = ("orders",),
          fsync: FsyncPolicy = FsyncPolicy.NEVER, step: int = 1000) -> list[JournalRecord]:
    """A journal of ``count`` publishes (one per ms, topics round-robin); returns what was written."""
    written = []
    with JournalWriter.open(directory, segment_bytes=segment_bytes, fsync=fsync) as writer:
        for i in range(count):
            written.append(writer.append(
                BASE_TIME + i * step, Command.PUBLISH, topics[i % len(topics)], "json",
                b'{"id":%d,"qty":%d}' % (i, i * 10), sow_key=str(i), client_name=f"pub-{i % 3}",
            ))
    return written


def segment_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.journal"))


def flip(path: Path, offset: int, mask: int = 0x20) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    path.write_bytes(bytes(data))


def record_offsets(path: Path) -> list[int]:
    """Offsets of the records of a segment file (read by walking the lengths)."""
    data = path.read_bytes()
    offsets, pos = [], HEADER_SIZE
    while pos + 4 <= len(data):
        length = int.from_bytes(data[pos:pos + 4], "little")
        if pos + length > len(data) or length == 0:
            break
        offsets.append(pos)
        pos += length
    return offsets


def read_all(directory: Path) -> list[JournalRecord]:
    return list(JournalReader(directory).scan())
