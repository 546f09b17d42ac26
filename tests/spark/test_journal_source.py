"""The ``ampsctl-journal`` data source against the local reader: rows, types, partitions, damage."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from ampsctl.journal.codec import HEADER_SIZE, decode_record
from ampsctl.journal.errors import JournalCorruptError
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from ampsctl.pipeline.journal_source import SCHEMA, scan_damage
from ampsctl.pipeline.errors import translated

T0 = 1_767_225_600_000_000


def _journal(directory: Path, count: int = 3000) -> list:
    with JournalWriter.open(directory, segment_bytes=32 * 1024, fsync=FsyncPolicy.NEVER) as writer:
        for i in range(count):
            command = (Command.PUBLISH, Command.DELTA_PUBLISH, Command.SOW_DELETE, Command.EXPIRE)[i % 4]
            payload = b'{"keys":["k%d"]}' % i if command is Command.SOW_DELETE else (b"" if command is Command.EXPIRE else b'{"id":%d}' % i)
            writer.append(T0 + i * 1000 - (5000 if i % 7 == 0 else 0), command, f"t{i % 3}", "json", payload,
                          sow_key=f"k{i}" if i % 2 else None, expiration=i % 5 or None,
                          correlation_id="c" if i % 11 == 0 else None, client_name=f"pub-{i % 3}",
                          publisher_sequence=i if i % 13 == 0 else None)
    return list(JournalReader(directory).scan())


def _rows(spark, path: Path, **options: str) -> list:
    frame = spark.read.format("ampsctl-journal").options(**options).load(str(path))
    with translated():
        return frame.select("*", F.unix_micros("timestamp").alias("ts")).orderBy("sequence").collect()


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> tuple[Path, list]:
    directory = tmp_path_factory.mktemp("source") / "journal"
    return directory, _journal(directory)


def test_rows_are_the_reader_records_with_typed_columns(spark, journal) -> None:
    directory, records = journal
    frame = spark.read.format("ampsctl-journal").load(str(directory))
    assert frame.schema == SCHEMA
    assert dict(frame.dtypes)["timestamp"] == "timestamp" and dict(frame.dtypes)["payload"] == "binary"
    rows = _rows(spark, directory)
    assert len(rows) == len(records)
    for row, record in zip(rows, records, strict=True):
        got = (row.sequence, row.ts, row.command, row.topic, row.message_type, bytes(row.payload), row.sow_key,
               row.expiration, row.correlation_id, row.client_name, row.publisher_sequence)
        assert got == (record.sequence, record.timestamp, record.command.label, *record[3:5], record.payload,
                       *record[6:])


def test_one_partition_per_segment_and_offsets_point_at_records(spark, journal) -> None:
    directory, _ = journal
    segments = JournalReader(directory).segments
    assert len(segments) > 3
    frame = spark.read.format("ampsctl-journal").load(str(directory))
    assert frame.rdd.getNumPartitions() == len(segments)
    placed = (frame.groupBy(F.spark_partition_id().alias("part")).agg(F.countDistinct("segment").alias("n"),
                                                                       F.first("segment").alias("segment"))
              .collect())
    assert all(row.n == 1 for row in placed)  # a partition never mixes segments
    assert sorted(row.segment for row in placed) == [s.number for s in segments]
    by_number = {s.number: Path(s.path).read_bytes() for s in segments}
    for row in frame.where(F.col("sequence") % 97 == 1).collect():
        assert row.offset >= HEADER_SIZE
        assert decode_record(by_number[row.segment], row.offset).sequence == row.sequence


def test_single_segment_file_and_torn_tail(spark, tmp_path: Path) -> None:
    directory = tmp_path / "j"
    records = _journal(directory, 300)
    last = sorted(directory.glob("*.journal"))[-1]
    with open(last, "ab") as stream:
        stream.write(b"\x50\x00\x00\x00partial record the writer never finished")
    assert [row.sequence for row in _rows(spark, directory)] == [r.sequence for r in records]
    first = sorted(directory.glob("*.journal"))[0]
    assert len(_rows(spark, first)) == len([r for r in JournalReader(first).scan()])


def test_damaged_record_fails_with_segment_and_offset(spark, tmp_path: Path) -> None:
    directory = tmp_path / "j"
    _journal(directory, 2000)
    second = sorted(directory.glob("*.journal"))[1]
    offsets = _offsets(second)
    data = bytearray(second.read_bytes())
    data[offsets[5] + 30] ^= 0x20
    second.write_bytes(bytes(data))
    with pytest.raises(JournalCorruptError) as local:
        list(JournalReader(directory).scan())
    with pytest.raises(JournalCorruptError) as info:
        _rows(spark, directory)
    assert (info.value.path, info.value.offset) == (str(second), offsets[5]) == (local.value.path, local.value.offset)
    assert info.value.exit_code == 3 and "checksum" in info.value.reason

    rows = _rows(spark, directory, skip_corrupt="true")
    sequences = [row.sequence for row in rows]
    assert len(sequences) == 1999 and sorted(set(range(1, 2001)) - set(sequences)) == [_sequence_at(second, offsets[5])]
    skipped = scan_damage(spark, str(directory))
    assert [(s.path, s.offset, s.length, s.records) for s in skipped] == [(str(second), offsets[5], offsets[6] - offsets[5], 1)]
    assert "skipped" in str(skipped[0]) and str(offsets[5]) in str(skipped[0])


def test_missing_segment_is_a_gap(spark, tmp_path: Path) -> None:
    directory = tmp_path / "j"
    _journal(directory, 2000)
    segments = sorted(directory.glob("*.journal"))
    segments[2].unlink()
    with pytest.raises(JournalCorruptError) as info:
        _rows(spark, directory)
    with pytest.raises(JournalCorruptError) as local:
        list(JournalReader(directory).scan())
    # the local reader's error, word for word: the segment after the gap, at offset 0
    assert (info.value.path, info.value.offset, info.value.reason, info.value.hint) == \
        (local.value.path, local.value.offset, local.value.reason, local.value.hint)
    assert info.value.path == str(segments[3]) and "are missing" in info.value.reason


def test_missing_journal_is_an_input_error(spark, tmp_path: Path) -> None:
    from ampsctl.errors import InputError

    with pytest.raises(InputError) as info:
        _rows(spark, tmp_path / "nothing")
    assert "does not exist" in info.value.message


def _offsets(path: Path) -> list[int]:
    data = path.read_bytes()
    offsets, pos = [], HEADER_SIZE
    while pos + 4 <= len(data):
        offsets.append(pos)
        pos += int.from_bytes(data[pos:pos + 4], "little")
    return offsets


def _sequence_at(path: Path, offset: int) -> int:
    return int.from_bytes(path.read_bytes()[offset + 4:offset + 12], "little")




def test_to_sequence_reads_only_up_to_it(spark, journal) -> None:
    directory, records = journal
    frame = spark.read.format("ampsctl-journal").option("to_sequence", "1234").load(str(directory))
    assert frame.count() == 1234 and frame.agg(F.max("sequence")).first()[0] == 1234
    assert frame.rdd.getNumPartitions() < len(JournalReader(directory).segments)  # later segments are not planned
    assert spark.read.format("ampsctl-journal").option("to_sequence", "0").load(str(directory)).count() == 0


def test_empty_journal_directory_has_no_rows(spark, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert spark.read.format("ampsctl-journal").load(str(tmp_path / "empty")).count() == 0
