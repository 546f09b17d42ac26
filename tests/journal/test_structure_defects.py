"""Records and files that are wrong although their checksums are intact, and segment files
that cannot be read: every reader reports them, with the segment and the offset; none skips
them silently, none crashes. Through the CLI (a subprocess) and the reader API it uses.

* a record with a valid checksum over a bad structure (unknown command byte, unknown flag bits,
  a text that is not UTF-8, field lengths that do not add up): verify reports it, dump and
  compact say damaged, the writer refuses to open the journal (never cuts it as a torn tail);
* a segment whose first sequence is 0 (sequences start at 1);
* a segment file that is a symbolic link loop or a dangling link;
* an index file (checksum intact) whose entry does not land on its record.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from journal_helpers import BASE_TIME, build, record_offsets, segment_files

from ampsctl.errors import InputError
from ampsctl.journal.codec import HEAD_SIZE, RESIDUE, encode_header
from ampsctl.journal.errors import JournalCorruptError, ProblemKind
from ampsctl.journal.index import ENTRY, INDEX_HEAD_SIZE
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command, JournalRecord
from ampsctl.journal.writer import JournalWriter

CONFIG = (Path(__file__).resolve().parents[1] / "data" / "compact" / "amps.xml").read_bytes()


def _ampsctl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _with_checksum(record: bytearray) -> bytes:
    record[-4:] = struct.pack("<I", zlib.crc32(bytes(record[:-4]), RESIDUE))
    return bytes(record)


def _cmd9(record: bytearray) -> None:
    record[20] = 9


def _flags80(record: bytearray) -> None:
    record[21] |= 0x80


def _topic_not_utf8(record: bytearray) -> None:
    record[HEAD_SIZE] = 0xFF  # the topic's first byte


def _client_not_utf8(record: bytearray) -> None:
    tl, ml, sl, cl, nl = struct.unpack_from("<HHHHH", record, 22)
    record[HEAD_SIZE + tl + ml + sl + cl] = 0xFE  # the client name's first byte


def _lengths(record: bytearray) -> None:
    struct.pack_into("<I", record, 48, struct.unpack_from("<I", record, 48)[0] - 1)  # payload length one short


BAD = {
    "command": (_cmd9, "unknown command byte 9"),
    "flags": (_flags80, "unknown flag bits 0x80"),
    "topic": (_topic_not_utf8, "topic is not valid UTF-8"),
    "client": (_client_not_utf8, "client name is not valid UTF-8"),
    "lengths": (_lengths, "field lengths do not add up"),
}


def _craft(segment: Path, which: int, change) -> int:  # noqa: ANN001
    """Change record ``which`` of ``segment`` in place (same size, checksum recomputed); its offset."""
    data = bytearray(segment.read_bytes())
    offset = record_offsets(segment)[which]
    length = struct.unpack_from("<I", data, offset)[0]
    record = bytearray(data[offset:offset + length])
    change(record)
    data[offset:offset + length] = _with_checksum(record)
    segment.write_bytes(bytes(data))
    return offset


@pytest.mark.parametrize("case", sorted(BAD))
def test_verify_and_dump_report_an_intact_checksum_over_a_bad_structure(case: str, tmp_path: Path) -> None:
    journal = tmp_path / "j"
    build(journal, 60)  # several 4 KiB segments, each sealed with an index file
    first = segment_files(journal)[0]
    assert first.with_suffix(".index").exists()
    change, reason = BAD[case]
    offset = _craft(first, 3, change)  # a record in the middle of a sealed, indexed segment

    problems = JournalReader(journal).verify()
    assert [(p.path, p.offset, p.kind) for p in problems if p.kind is ProblemKind.RECORD] == [
        (str(first), offset, ProblemKind.RECORD)]
    assert reason in problems[0].reason

    verify = _ampsctl("journal", "verify", str(journal))
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert f"{first}: offset {offset}: " in verify.stdout and reason in verify.stdout

    dump = _ampsctl("journal", "dump", str(journal), "-f", "jsonl")
    assert dump.returncode == 3, dump.stderr
    assert f"damaged at offset {offset}: {reason}" in dump.stderr
    assert len(dump.stdout.splitlines()) == 3  # the records before it, then the error


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_structure_ending_the_last_segment_is_damage_never_a_torn_tail(case: str, tmp_path: Path) -> None:
    journal = tmp_path / "j"
    build(journal, 5, segment_bytes=1 << 20)
    (segment,) = segment_files(journal)
    segment.with_suffix(".index").unlink()  # the reader walks the segment when it opens it
    change, reason = BAD[case]
    offset = _craft(segment, 4, change)  # the last record: nothing intact follows it
    size = segment.stat().st_size

    reader = JournalReader(journal)
    assert reader.torn_tail is None
    assert [(p.offset, reason in p.reason) for p in reader.verify()] == [(offset, True)]
    with pytest.raises(JournalCorruptError, match=reason):
        list(reader.scan_views())
    with pytest.raises(JournalCorruptError, match=reason):
        JournalWriter.open(journal)  # a torn tail would be cut here: an intact checksum is not a torn write
    assert segment.stat().st_size == size

    verify = _ampsctl("journal", "verify", str(journal))
    assert verify.returncode == 1 and f"offset {offset}: " in verify.stdout, verify.stdout + verify.stderr


def _compact_inputs(tmp_path: Path, *, keep_index: bool) -> tuple[Path, int]:
    journal = tmp_path / "j"
    with JournalWriter.open(journal, segment_bytes=1 << 20) as writer:
        for i in range(1, 6):
            writer.append(BASE_TIME + i, Command.PUBLISH, "orders", "json", json.dumps({"id": i, "region": "EU"}).encode())
    (segment,) = segment_files(journal)
    if not keep_index:
        segment.with_suffix(".index").unlink()
    (tmp_path / "compact.xml").write_bytes(CONFIG)
    return journal, _craft(segment, 2, _lengths)


@pytest.mark.parametrize("keep_index", [False, True], ids=["walked", "altered-after-its-index"])
def test_compact_refuses_a_record_whose_lengths_do_not_add_up(keep_index: bool, tmp_path: Path) -> None:
    journal, offset = _compact_inputs(tmp_path, keep_index=keep_index)
    done = _ampsctl("journal", "compact", "j", "--config", "compact.xml", "--out", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"damaged at offset {offset}: field lengths do not add up" in done.stderr
    assert "internal error" not in done.stderr


def test_a_view_topic_that_is_not_utf8_is_damage_in_a_topic_scan(tmp_path: Path) -> None:
    journal = tmp_path / "j"
    build(journal, 60)
    first = segment_files(journal)[0]
    offset = _craft(first, 3, _topic_not_utf8)  # its index file still vouches for the segment: scan_views trusts it
    for bounds in ({}, {"to_sequence": 50}):
        with pytest.raises(JournalCorruptError) as info:
            list(JournalReader(journal).scan_views(topics=lambda topic: True, **bounds))
        assert (info.value.path, info.value.offset, info.value.reason) == (str(first), offset, "topic is not valid UTF-8")


# ----------------------------------------------------------------------------- sequence 0


def _sequence_zero_journal(directory: Path) -> None:
    body = struct.pack("<QqBBHHHHHQQI", 0, BASE_TIME, 1, 0, 6, 4, 0, 0, 0, 0, 0, 8) + b"orders" + b"json" + b'{"id":1}'
    record = bytearray(struct.pack("<I", 4 + len(body) + 4) + body + b"\0\0\0\0")
    directory.mkdir()
    (directory / "00000001.journal").write_bytes(encode_header(1, 0) + _with_checksum(record))


def test_a_segment_starting_at_sequence_0_is_reported_never_skipped(tmp_path: Path) -> None:
    journal = tmp_path / "j"
    _sequence_zero_journal(journal)
    segment = str(journal / "00000001.journal")
    (problem,) = JournalReader(journal).verify()
    assert (problem.path, problem.offset, problem.kind) == (segment, 0, ProblemKind.HEADER)
    assert "first sequence is 0" in problem.reason

    verify = _ampsctl("journal", "verify", str(journal))
    assert verify.returncode == 1 and f"{segment}: offset 0: " in verify.stdout, verify.stdout
    dump = _ampsctl("journal", "dump", str(journal), "-f", "jsonl")
    assert dump.returncode == 3 and "damaged at offset 0" in dump.stderr and segment in dump.stderr, dump.stderr
    (tmp_path / "compact.xml").write_bytes(CONFIG)
    compact = _ampsctl("journal", "compact", "j", "--config", "compact.xml", "--out", "out", cwd=tmp_path)
    assert compact.returncode == 3 and "damaged at offset 0" in compact.stderr, compact.stdout + compact.stderr


# ----------------------------------------------------------------------------- symbolic links


def test_a_segment_that_is_a_symlink_loop_is_an_input_error(tmp_path: Path) -> None:
    journal = tmp_path / "j"
    journal.mkdir()
    os.symlink("00000002.journal", journal / "00000001.journal")
    os.symlink("00000001.journal", journal / "00000002.journal")
    with pytest.raises(InputError, match="00000001.journal"):
        JournalReader(journal)
    for command in ("verify", "dump"):
        done = _ampsctl("journal", command, str(journal))
        assert done.returncode == 3, done.stderr
        assert "internal error" not in done.stderr
        assert f"cannot read journal segment '{journal / '00000001.journal'}'" in done.stderr


def test_a_dangling_symlink_segment_is_reported_not_ignored(tmp_path: Path) -> None:
    journal = tmp_path / "j"
    build(journal, 60)
    last = segment_files(journal)[-1]
    moved = tmp_path / "elsewhere.journal"
    last.rename(moved)
    os.symlink(moved, last)
    assert len(list(JournalReader(journal).scan())) == 60  # a good link is read
    moved.unlink()
    with pytest.raises(InputError, match="which does not exist"):
        JournalReader(journal)
    done = _ampsctl("journal", "verify", str(journal))
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"journal segment '{last}' is a symbolic link to '{moved}', which does not exist" in done.stderr


# ----------------------------------------------------------------------------- index entries


def _big_journal(directory: Path) -> list[JournalRecord]:
    written = build(directory, 6000, segment_bytes=1 << 20)  # one segment, several 64 KiB index entries
    (segment,) = segment_files(directory)
    index = segment.with_suffix(".index").read_bytes()
    assert struct.unpack_from("<I", index, 12)[0] >= 4
    return written


def _rewrite_entry(index_file: Path, entry: int, offset: int) -> int:
    """Point index entry ``entry`` at ``offset`` (checksum recomputed); the entry's sequence."""
    data = bytearray(index_file.read_bytes())
    at = INDEX_HEAD_SIZE + entry * ENTRY.size
    sequence, _, before = ENTRY.unpack_from(data, at)
    ENTRY.pack_into(data, at, sequence, offset, before)
    data[-4:] = struct.pack("<I", zlib.crc32(bytes(data[:-4])))
    index_file.write_bytes(bytes(data))
    return sequence


def test_an_index_entry_that_lands_on_another_record_is_not_trusted(tmp_path: Path) -> None:
    journal = tmp_path / "j"
    written = _big_journal(journal)
    (segment,) = segment_files(journal)
    offsets = record_offsets(segment)
    index_file = segment.with_suffix(".index")
    entry_offset = ENTRY.unpack_from(index_file.read_bytes(), INDEX_HEAD_SIZE + 2 * ENTRY.size)[1]
    following = offsets[offsets.index(entry_offset) + 1]  # still in order: only landing on it tells
    sequence = _rewrite_entry(index_file, 2, following)

    reader = JournalReader(journal)
    assert reader.record_at(sequence) == written[sequence - 1]
    assert reader.seek_bookmark(written[sequence - 1].bookmark) == sequence
    assert [r.sequence for r in JournalReader(journal).scan(after_sequence=sequence - 1, to_sequence=sequence + 1)] == [
        sequence, sequence + 1]

    done = _ampsctl("journal", "dump", str(journal), "-f", "jsonl", "--from", written[sequence - 2].bookmark)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["sequence"] == sequence
    verify = _ampsctl("journal", "verify", str(journal))
    assert verify.returncode == 1 and "index file disagrees with its segment" in verify.stdout, verify.stdout


def test_an_index_whose_entries_are_out_of_order_is_not_used(tmp_path: Path) -> None:
    journal = tmp_path / "j"
    written = _big_journal(journal)
    (segment,) = segment_files(journal)
    index_file = segment.with_suffix(".index")
    third = ENTRY.unpack_from(index_file.read_bytes(), INDEX_HEAD_SIZE + 3 * ENTRY.size)[1]
    sequence = _rewrite_entry(index_file, 2, third)  # the fuzzer's index: entry 2 points at entry 3's record

    reader = JournalReader(journal)
    assert not reader.segments[0].indexed
    assert reader.record_at(sequence) == written[sequence - 1]
    done = _ampsctl("journal", "dump", str(journal), "-f", "jsonl", "--from", written[sequence + 29].bookmark)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["sequence"] == sequence + 31
    verify = _ampsctl("journal", "verify", str(journal))
    assert verify.returncode == 1 and "index file is damaged" in verify.stdout, verify.stdout
