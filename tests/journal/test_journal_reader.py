"""JournalReader: scans and their bounds, index seeking, bookmarks, verify, and clear errors for bad files."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from journal_helpers import BASE_TIME, build, flip, record_offsets, segment_files

from ampsctl.errors import InputError
from ampsctl.journal import reader as reader_module
from ampsctl.journal.bookmarks import format_bookmark
from ampsctl.journal.errors import JournalCorruptError, JournalFormatError, ProblemKind
from ampsctl.journal.index import SPACING
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command
from ampsctl.journal.writer import JournalWriter


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    """3,000 records over nine 32 KiB segments, three topics."""
    directory = tmp_path_factory.mktemp("big")
    return directory, build(directory, 3000, segment_bytes=32 * 1024, topics=("orders", "trades", "quotes"))


def test_summary(big: tuple[Path, list]) -> None:
    directory, written = big
    reader = JournalReader(directory)
    assert reader.first_sequence == 1 and reader.last_sequence == 3000 and reader.torn_tail is None
    segments = reader.segments
    assert len(segments) > 5 and sum(s.records for s in segments) == 3000
    assert all(s.indexed for s in segments)  # a cleanly closed journal is read through its index files
    assert segments[0].first_timestamp == BASE_TIME and segments[-1].last_timestamp == written[-1].timestamp


def test_scan_bounds(big: tuple[Path, list]) -> None:
    directory, written = big
    reader = JournalReader(directory)
    assert list(reader.scan()) == written
    assert [r.sequence for r in reader.scan(after_sequence=2995)] == [2996, 2997, 2998, 2999, 3000]
    assert [r.sequence for r in reader.scan(after_sequence=10, to_sequence=13)] == [11, 12, 13]
    assert list(reader.scan(after_sequence=3000)) == []
    assert list(reader.scan(after_sequence=5, to_sequence=5)) == []
    at = BASE_TIME + 1234 * 1000
    assert [r.sequence for r in reader.scan(from_timestamp=at, to_timestamp=at + 2000)] == [1235, 1236, 1237]
    assert [r.sequence for r in reader.scan(from_timestamp=at - 1)][0] == 1235
    assert [r.sequence for r in reader.scan(after_sequence=1500, from_timestamp=at)][0] == 1501  # the later start wins
    trades = list(reader.scan(topics=lambda topic: topic == "trades", to_sequence=20))
    assert [r.sequence for r in trades] == [2, 5, 8, 11, 14, 17, 20]
    assert [v.record() for v in reader.scan_views(after_sequence=100, to_sequence=120)] == written[100:120]
    assert sum(1 for _ in reader.scan_views()) == 3000


def test_unbounded_scans_by_start_and_topic_match_a_filtered_full_scan(big: tuple[Path, list]) -> None:
    """The plain and topic-only scans (whole batches, no per-record generator) against the full scan."""
    directory, written = big
    reader = JournalReader(directory)
    for after in (0, 1, 63, 64, 1000, 2999, 3000, 5000):
        for name, test in (("all", None), ("trades", lambda topic: topic == "trades"),
                           ("not quotes", lambda topic: topic != "quotes"), ("none", lambda topic: False)):
            expected = [r for r in written if r.sequence > after and (test is None or test(r.topic))]
            assert list(reader.scan(after_sequence=after, topics=test)) == expected, (after, name)
            views = reader.scan_views(after_sequence=after, topics=test)
            assert [view.sequence for view in views] == [r.sequence for r in expected], (after, name)
    asked: list[str] = []
    list(reader.scan(topics=lambda topic: asked.append(topic) is None))
    assert sorted(asked) == ["orders", "quotes", "trades"]  # asked once per topic


def test_seeking_reads_one_index_step_not_the_journal(big: tuple[Path, list], monkeypatch: pytest.MonkeyPatch) -> None:
    directory, _ = big
    reader = JournalReader(directory)
    reads: list[tuple[str, int, int]] = []
    real = reader_module.read_span

    def spy(path: Path, start: int, end: int, decode):  # noqa: ANN001, ANN202
        reads.append((path.name, start, end))
        return real(path, start, end, decode)

    monkeypatch.setattr(reader_module, "read_span", spy)
    record = reader.record_at(2500)
    assert record is not None and record.sequence == 2500
    assert len(reads) == 1  # one segment opened
    segment = next(s for s in reader.segments if s.first_sequence <= 2500 <= s.last_sequence)
    assert reads[0][0] == Path(segment.path).name
    reads.clear()
    first = next(reader.scan(from_timestamp=BASE_TIME + 2700 * 1000))
    assert first.sequence == 2701 and len(reads) == 1


def test_index_starts_near_the_record(tmp_path: Path) -> None:
    build(tmp_path, 5000, segment_bytes=16 << 20)  # one segment, several index entries
    reader = JournalReader(tmp_path)
    (segment,) = reader._segments
    index = segment.index
    assert len(index.offsets) > 3
    offsets = record_offsets(Path(segment.path))
    for sequence in (1, 700, 2500, 4999):
        start = index.offset_for_sequence(sequence)
        assert start <= offsets[sequence - 1] < start + SPACING + 200
        start = index.offset_for_timestamp(BASE_TIME + (sequence - 1) * 1000)
        assert start <= offsets[sequence - 1] < start + SPACING + 200


def test_timestamps_need_not_increase(tmp_path: Path) -> None:
    """Timestamps mark places in the log: a scan starts at the first record at or after
    ``from_timestamp`` and stops at the first one after ``to_timestamp``."""
    stamps = [50, 10, 60, 20, 70, 30]
    with JournalWriter.open(tmp_path) as writer:
        for stamp in stamps:
            writer.append(stamp, Command.PUBLISH, "t", "json", b"{}")
    reader = JournalReader(tmp_path)
    assert [r.timestamp for r in reader.scan(from_timestamp=55)] == [60, 20, 70, 30]
    assert [r.timestamp for r in reader.scan(to_timestamp=55)] == [50, 10]
    assert list(reader.scan(from_timestamp=71)) == []


def test_bookmarks(big: tuple[Path, list]) -> None:
    directory, written = big
    reader = JournalReader(directory)
    assert reader.seek_bookmark(written[41].bookmark) == 42
    assert reader.seek_bookmark("0") == 0
    assert reader.seek_bookmark("0|1|") == 3000
    assert reader.seek_bookmark(f"{written[99].bookmark},{written[9].bookmark}") == 10
    with pytest.raises(InputError, match="not found: the journal holds sequences 1 to 3000"):
        reader.seek_bookmark(format_bookmark("pub-0", 3001))
    with pytest.raises(InputError, match="that record.s bookmark is") as info:
        reader.seek_bookmark(format_bookmark("someone-else", 42))
    assert "another journal" in (info.value.hint or "")
    with pytest.raises(InputError, match="invalid bookmark"):
        reader.seek_bookmark("12|x|")
    with pytest.raises(InputError, match="is a timestamp"):
        reader.seek_bookmark("20260101T000000Z")


def test_reader_never_writes(tmp_path: Path) -> None:
    build(tmp_path, 40, segment_bytes=1024)
    last = segment_files(tmp_path)[-1]
    last.with_suffix(".index").unlink()
    with open(last, "ab") as stream:
        stream.write(b"\x50\x00\x00\x00partial")  # a torn tail
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    reader = JournalReader(tmp_path)
    assert reader.torn_tail is not None and reader.torn_tail.length == 11
    assert len(list(reader.scan())) == 40 and reader.verify() == []
    assert {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in tmp_path.iterdir()} == before


# ------------------------------------------------------------------------------ bad input


def test_flipped_byte_in_a_sealed_segment(tmp_path: Path) -> None:
    written = build(tmp_path, 200, segment_bytes=2048)
    second = segment_files(tmp_path)[1]
    offsets = record_offsets(second)
    flip(second, offsets[3] + 40)
    reader = JournalReader(tmp_path)
    got = []
    with pytest.raises(JournalCorruptError) as info:
        for record in reader.scan():
            got.append(record)
    assert got == written[: len(got)] and got[-1].sequence == reader.segments[1].first_sequence + 2
    assert (info.value.path, info.value.offset) == (str(second), offsets[3])
    assert "checksum mismatch" in str(info.value) and "verify" in (info.value.hint or "")
    # Past the damage is still readable by sequence: the index says where to start.
    assert next(reader.scan(after_sequence=written[-5].sequence)).sequence == written[-4].sequence


def test_verify_lists_every_problem(tmp_path: Path) -> None:
    build(tmp_path, 300, segment_bytes=2048)
    files = segment_files(tmp_path)
    damaged = [(files[1], record_offsets(files[1])[2]), (files[1], record_offsets(files[1])[9]), (files[4], record_offsets(files[4])[0])]
    for path, offset in damaged:
        flip(path, offset + 50)
    files[6].with_suffix(".index").write_bytes(b"junk")
    problems = JournalReader(tmp_path).verify()
    records = [(Path(p.path), p.offset) for p in problems if p.kind is ProblemKind.RECORD]
    assert records == damaged
    assert all("intact records resume" in p.reason for p in problems if p.kind is ProblemKind.RECORD)
    assert [(Path(p.path).name, p.kind) for p in problems if p.kind is not ProblemKind.RECORD] == [
        (files[6].with_suffix(".index").name, ProblemKind.INDEX)]


def test_verify_finds_a_missing_segment(tmp_path: Path) -> None:
    build(tmp_path, 200, segment_bytes=2048)
    files = segment_files(tmp_path)
    files[2].unlink()
    reader = JournalReader(tmp_path)
    problems = reader.verify()
    assert [(Path(p.path), p.kind) for p in problems] == [(files[3], ProblemKind.SEQUENCE)]
    assert "are missing" in problems[0].reason
    with pytest.raises(JournalCorruptError, match="are missing"):
        list(reader.scan())


def test_truncated_header_of_a_sealed_segment(tmp_path: Path) -> None:
    build(tmp_path, 100, segment_bytes=2048)
    first = segment_files(tmp_path)[0]
    first.write_bytes(first.read_bytes()[:20])
    reader = JournalReader(tmp_path)
    with pytest.raises(JournalCorruptError, match="truncated segment header: 20 of 36 bytes"):
        list(reader.scan())
    problems = reader.verify()
    assert problems[0].kind is ProblemKind.HEADER and problems[0].path == str(first)


def test_damaged_header_checksum(tmp_path: Path) -> None:
    build(tmp_path, 10)
    (segment,) = segment_files(tmp_path)
    flip(segment, 20)
    with pytest.raises(JournalCorruptError, match="header checksum mismatch"):
        list(JournalReader(tmp_path).scan())


def test_wrong_magic(tmp_path: Path) -> None:
    build(tmp_path, 10)
    (segment,) = segment_files(tmp_path)
    flip(segment, 1)
    with pytest.raises(JournalFormatError, match="wrong magic number") as info:
        JournalReader(tmp_path)
    assert info.value.path == str(segment) and "journal import" in (info.value.hint or "")


def test_unknown_version(tmp_path: Path) -> None:
    build(tmp_path, 10)
    (segment,) = segment_files(tmp_path)
    data = bytearray(segment.read_bytes())
    data[8:10] = struct.pack("<H", 7)
    segment.write_bytes(bytes(data))
    with pytest.raises(JournalFormatError, match="unsupported journal format version 7") as info:
        JournalReader(tmp_path)
    assert "newer ampsctl" in (info.value.hint or "")


def test_text_file_given_as_a_journal(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("a journal? no, a shopping list\neggs\n")
    with pytest.raises(JournalFormatError, match="looks like text"):
        JournalReader(text)
    with pytest.raises(InputError, match="does not exist"):
        JournalReader(tmp_path / "missing")


def test_a_single_segment_file_can_be_read(tmp_path: Path) -> None:
    written = build(tmp_path, 100, segment_bytes=2048)
    second = segment_files(tmp_path)[1]
    reader = JournalReader(second)
    records = list(reader.scan())
    assert records == written[records[0].sequence - 1: records[-1].sequence]
    renamed = tmp_path / "copy.bin"
    renamed.write_bytes(second.read_bytes())
    assert list(JournalReader(renamed).scan()) == records


def test_flipped_byte_in_the_last_record_is_a_torn_tail(tmp_path: Path) -> None:
    """Bytes that never reached the disk look like damage at the very end; with no intact
    record after them they are a torn tail (reported, excluded) rather than an error."""
    build(tmp_path, 20)
    (segment,) = segment_files(tmp_path)
    segment.with_suffix(".index").unlink()  # as after a crash: no index for the last segment
    last = record_offsets(segment)[-1]
    flip(segment, last + 30)
    reader = JournalReader(tmp_path)
    assert reader.torn_tail is not None and reader.torn_tail.offset == last
    assert reader.last_sequence == 19 and len(list(reader.scan())) == 19
    assert reader.verify() == []


def test_damage_followed_by_many_intact_records_in_the_last_segment(tmp_path: Path) -> None:
    build(tmp_path, 2000, segment_bytes=16 << 20)
    (segment,) = segment_files(tmp_path)
    segment.with_suffix(".index").unlink()
    offsets = record_offsets(segment)
    data = bytearray(segment.read_bytes())
    data[offsets[500]:offsets[900]] = bytes(offsets[900] - offsets[500])  # a zeroed stretch of 400 records
    segment.write_bytes(bytes(data))
    reader = JournalReader(tmp_path)
    assert reader.torn_tail is None
    problems = reader.verify()
    assert [(p.offset, p.length) for p in problems] == [(offsets[500], offsets[900] - offsets[500])]
    assert "(sequence 901)" in problems[0].reason
    with pytest.raises(JournalCorruptError):
        JournalWriter.open(tmp_path)
    assert os.path.getsize(segment) == len(data)
