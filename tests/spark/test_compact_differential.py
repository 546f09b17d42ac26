"""Local versus Spark compaction on generated journals: the results must be identical.

One 100k-record journal (``journals.generate``: three SOW topics, a Pattern topic with History, publish,
delta_publish, sow_delete by keys/data/filter, EXPIRE records, expirations, timestamps that
step back, refused records) compacted by both engines at several as-of points. Compared:
every stored record (topic, key, payload, sequence, timestamp, expiration, expires_at) in file
order, every
History state, each file's meta (last sequence, last timestamp, history horizon, spec), and
the counts of the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.journal.bookmarks import format_timestamp
from ampsctl.journal.reader import JournalReader
from ampsctl.pipeline.engines import run_compact
from ampsctl.pipeline.jobs import CompactJob, Engine, OutputFormat
from ampsctl.sow.errors import ReplayError
from ampsctl.sow.sowfile import SowFile
from journals import SPECS, generate

RECORDS = 100_000


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("differential") / "journal"
    generate(directory, RECORDS)
    return directory


def _files(outcome) -> list:
    found = []
    for compacted in outcome.result.files:
        with SowFile.open(compacted.path) as sow:
            # in file order: unordered query results (and a top-n without order_by) follow it
            rows = [(r.topic, r.key, r.payload, r.sequence, r.timestamp, r.expiration, r.expires_at) for r in sow.records()]
            history = sorted(sow.history(), key=lambda state: (state[0], state[1]))  # write order kept per key
            found.append((Path(compacted.path).name, rows, history, sow.meta.history_horizon, sow.meta.last_sequence,
                          sow.meta.last_timestamp, sow.meta.spec, compacted.records, compacted.topics))
    return found


def _both(spark, journal: Path, tmp_path: Path, **job: object) -> tuple:
    results = []
    for engine in (Engine.LOCAL, Engine.SPARK):
        refused: list[ReplayError] = []
        outcome = run_compact(CompactJob(str(journal), SPECS, str(tmp_path / engine.value), keep_going=True, **job),  # type: ignore[arg-type]
                              engine, spark=spark, on_error=refused.append)
        result = outcome.result
        counts = (result.scanned, result.applied, result.last_sequence, result.now, result.expired, result.skipped)
        results.append((counts, [(e.sequence, e.message) for e in refused], _files(outcome)))
    return tuple(results)


def _points(journal: Path) -> dict[str, str]:
    reader = JournalReader(journal)
    at = {n: reader.record_at(n) for n in (30_000, 64_000, 85_000)}
    return {
        "timestamp-30k": format_timestamp(at[30_000].timestamp),  # type: ignore[union-attr]
        "bookmark-64k": at[64_000].bookmark,  # type: ignore[union-attr]
        "timestamp-85k": format_timestamp(at[85_000].timestamp),  # type: ignore[union-attr]
    }


@pytest.mark.parametrize("point", [None, "timestamp-30k", "bookmark-64k", "timestamp-85k"])
def test_engines_agree(spark, journal: Path, tmp_path: Path, point: str | None) -> None:
    as_of = _points(journal)[point] if point else None
    local, remote = _both(spark, journal, tmp_path, as_of=as_of)
    counts, refused, files = local
    # The run did what the journal asks for: every kind of work happened.
    scanned, applied, last_sequence, now, expired, skipped = counts
    assert scanned > 20_000 and applied < scanned and expired > 0 and skipped == len(refused) > 0
    assert all(rows for _, rows, *_ in files)
    assert files[1][2] and any(payload is None for *_, payload in files[1][2])  # History, deletions included
    if point is None:
        assert scanned == last_sequence == RECORDS
    assert remote == local


def test_engines_agree_on_now_and_on_nothing(spark, journal: Path, tmp_path: Path) -> None:
    later = JournalReader(journal).record_at(RECORDS).timestamp + 20 * 1_000_000  # type: ignore[union-attr]
    local, remote = _both(spark, journal, tmp_path / "now", now=later, as_of=_points(journal)["bookmark-64k"])
    assert remote == local and local[0][3] == later
    local, remote = _both(spark, journal, tmp_path / "zero", as_of="0")
    assert remote == local and local[0][:3] == (0, 0, 0)


def test_first_refused_record_fails_both_engines_alike(spark, journal: Path, tmp_path: Path) -> None:
    errors = []
    for engine in (Engine.LOCAL, Engine.SPARK):
        with pytest.raises(ReplayError) as info:
            run_compact(CompactJob(str(journal), SPECS, str(tmp_path / engine.value)), engine, spark=spark)
        errors.append((info.value.sequence, info.value.message, info.value.exit_code))
        assert not any((tmp_path / engine.value).glob("*.sow"))  # nothing written
    assert errors[0] == errors[1]


@pytest.mark.parametrize("output", [OutputFormat.PARQUET, OutputFormat.JSONL])
def test_parquet_and_jsonl_outputs_agree(spark, journal: Path, tmp_path: Path, output: OutputFormat) -> None:
    as_of = _points(journal)["timestamp-30k"]
    contents = []
    for engine in (Engine.LOCAL, Engine.SPARK):
        outcome = run_compact(CompactJob(str(journal), SPECS, str(tmp_path / engine.value), as_of=as_of, keep_going=True,
                                         output=output), engine, spark=spark)
        contents.append([(Path(f.path).name, f.records, Path(f.path).read_bytes()) for f in outcome.result.files])
    assert contents[0] == contents[1]
    assert [name for name, *_ in contents[0]] == [f"orders.json.{output.value}", f"prices.json.{output.value}",
                                                  f"accounts.json.{output.value}"]
    assert all(count > 0 for _, count, _ in contents[0])


def test_damage_counts_only_when_the_scan_reaches_it(spark, tmp_path: Path) -> None:
    directory = tmp_path / "journal"
    generate(directory, 4000, segment_bytes=64 * 1024)
    segments = sorted(directory.glob("*.journal"))
    assert len(segments) >= 4
    reader = JournalReader(directory)
    third = reader.segments[2]
    data = bytearray(segments[2].read_bytes())
    data[len(data) // 2] ^= 0x40  # damage in the middle of the third segment
    segments[2].write_bytes(bytes(data))
    before = reader.record_at(third.first_sequence - 10)
    after = reader.record_at(third.last_sequence + 10)
    assert before is not None and after is not None
    points = {"bookmark-before": before.bookmark, "timestamp-before": format_timestamp(before.timestamp)}
    for name, as_of in points.items():
        local, remote = _both(spark, directory, tmp_path / name, as_of=as_of)
        assert remote == local, name
    for as_of in (None, format_timestamp(after.timestamp)):
        failures = []
        for engine in (Engine.LOCAL, Engine.SPARK):
            with pytest.raises(Exception) as info:
                run_compact(CompactJob(str(directory), SPECS, str(tmp_path / "fail" / engine.value), as_of=as_of,
                                       keep_going=True), engine, spark=spark)
            failures.append((type(info.value).__name__, str(info.value)))
        assert failures[0] == failures[1] and failures[0][0] == "JournalCorruptError"
    # --skip-corrupt on Spark: completes, and reports only the region before the as-of point.
    outcome = run_compact(CompactJob(str(directory), SPECS, str(tmp_path / "skip"), keep_going=True, skip_corrupt=True),
                          Engine.SPARK, spark=spark)
    assert [(s.path, s.records is not None and s.records > 0) for s in outcome.corrupt] == [(str(segments[2]), True)]
    assert outcome.result.scanned == 4000 - sum(s.records or 0 for s in outcome.corrupt)
    outcome = run_compact(CompactJob(str(directory), SPECS, str(tmp_path / "skip-before"), as_of=before.bookmark,
                                     keep_going=True, skip_corrupt=True), Engine.SPARK, spark=spark)
    assert outcome.corrupt == [] and outcome.result.last_sequence == before.sequence
