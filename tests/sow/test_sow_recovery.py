"""Recovery (seeds 001/003): file + journal replay, rebuilds, RecoveryPoint, start-up expiry."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ampsctl.errors import InputError
from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from ampsctl.sow.checkpoint import checkpoint
from ampsctl.sow.errors import SowFileError
from ampsctl.sow.recovery import recover, sow_path
from sow_helpers import SECOND, T0, by_id, spec

ORDERS = spec(expiration=0)
TICKS = spec("ticks", keys=("/s",), persistent=False, file_name=None)
LATEST = spec("latest", keys=("/s",), persistent=False, file_name=None, recovery_point="now")


def journal(directory: Path, entries: list[tuple]) -> None:
    """Append (command, topic, doc-or-bytes, fields) entries, one µs apart from T0."""
    with JournalWriter.open(directory, fsync=FsyncPolicy.NEVER) as writer:
        start = writer.last_sequence
        for number, (command, topic, payload, fields) in enumerate(entries, start + 1):
            data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
            writer.append(T0 + number * SECOND, command, topic, "json", data, **fields)


def publish(topic: str, doc: dict, **fields) -> tuple:
    return (Command.PUBLISH, topic, doc, fields)


def state(result, name: str = "orders", field: str = "id") -> dict:
    topic = next((t for t in result.store.topics() if t.topic == name), None)
    return {} if topic is None else by_id(topic, field)


def test_replay_after_the_files_last_sequence(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    journal(log, [publish("orders", {"id": 1, "v": 1}), publish("orders", {"id": 2, "v": 1})])
    first = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
    assert first.groups[0].source == "rebuilt" and first.groups[0].problem == "no SOW file yet"
    group = first.store.groups[0]
    checkpoint(sow_path(ORDERS, tmp_path), group, sequence=first.store.group_sequence(group), sync=False)
    journal(log, [(Command.DELTA_PUBLISH, "orders", {"id": 1, "v": 2}, {}), publish("orders", {"id": 3, "v": 1})])
    second = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
    report = second.groups[0]
    assert (report.source, report.loaded, report.file_sequence, report.replayed) == ("file", 2, 2, 2)
    assert state(second) == {1: {"id": 1, "v": 2}, 2: {"id": 2, "v": 1}, 3: {"id": 3, "v": 1}}
    assert second.journal_last_sequence == 4 and second.store.last_sequence == 4


def test_missing_journal_keeps_the_file(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    journal(log, [publish("orders", {"id": 1})])
    first = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
    checkpoint(sow_path(ORDERS, tmp_path), first.store.groups[0], sequence=1, sync=False)
    result = recover([ORDERS], journal=tmp_path / "gone", now=T0, base_dir=tmp_path)
    assert state(result) == {1: {"id": 1}}
    assert "ahead of the journal" in (result.groups[0].problem or "")
    assert result.store.groups[0].sequence == 0  # a new journal's records apply


def test_damaged_file_is_set_aside_and_rebuilt_from_the_journal(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    journal(log, [publish("orders", {"id": 1, "text": "hello"}), publish("orders", {"id": 2})])
    first = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
    path = sow_path(ORDERS, tmp_path)
    assert path is not None
    checkpoint(path, first.store.groups[0], sequence=2, sync=False)
    data = bytearray(path.read_bytes())
    data[data.index(b"hello")] ^= 0x01
    path.write_bytes(bytes(data))
    result = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
    assert result.groups[0].source == "rebuilt" and "checksum" in (result.groups[0].problem or "")
    assert state(result) == {1: {"id": 1, "text": "hello"}, 2: {"id": 2}}
    assert path.with_name(path.name + ".damaged").exists() and not path.exists()


def test_a_second_damaged_file_never_overwrites_the_first(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    journal(log, [publish("orders", {"id": 1})])
    path = sow_path(ORDERS, tmp_path)
    assert path is not None
    path.parent.mkdir(parents=True)
    for damage in (b"first damage", b"second damage", b"third damage"):
        path.write_bytes(b"SQLite format 3\x00" + damage)  # a SOW file cut inside its header: damaged
        result = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
        assert result.groups[0].source == "rebuilt" and state(result) == {1: {"id": 1}}
    copies = {p.name: p.read_bytes() for p in path.parent.glob("*.damaged*")}
    assert {name: data[16:] for name, data in copies.items()} == {
        path.name + ".damaged": b"first damage",
        path.name + ".damaged.2": b"second damage",
        path.name + ".damaged.3": b"third damage",
    }


def test_a_file_that_is_not_a_sow_file_stops_recovery(tmp_path: Path) -> None:
    path = sow_path(ORDERS, tmp_path)
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_text("precious data of another program\n")
    with pytest.raises(SowFileError, match="not a SOW file"):
        recover([ORDERS], journal=None, now=T0, base_dir=tmp_path)
    assert path.read_text() == "precious data of another program\n"


def test_changed_key_fields_rebuild_from_the_journal(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    journal(log, [publish("orders", {"id": 1, "region": "A"}), publish("orders", {"id": 2, "region": "A"})])
    first = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
    checkpoint(sow_path(ORDERS, tmp_path), first.store.groups[0], sequence=2, sync=False)
    by_region = spec(keys=("/region",), expiration=0)
    result = recover([by_region], journal=log, now=T0, base_dir=tmp_path)
    assert result.groups[0].source == "rebuilt" and "Key fields" in (result.groups[0].problem or "")
    assert state(result, field="region") == {"A": {"id": 2, "region": "A"}}


def test_transient_topics_follow_their_recovery_point(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    journal(log, [publish("ticks", {"s": "A", "p": 1}), publish("latest", {"s": "A", "p": 1})])
    result = recover([TICKS, LATEST], journal=log, now=T0, base_dir=tmp_path)
    assert [(g.source, g.replayed) for g in result.groups] == [("journal", 1), ("empty", 0)]
    assert state(result, "ticks", "s") == {"A": {"s": "A", "p": 1}} and state(result, "latest", "s") == {}
    assert result.store.groups[1].sequence == 2  # RecoveryPoint now: records after start-up apply


def test_e6_expiry_is_processed_at_start_up(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    journal(log, [publish("orders", {"id": 1}, expiration=10), publish("orders", {"id": 2}, expiration=100)])
    early = recover([ORDERS], journal=log, now=T0 + 5 * SECOND, base_dir=tmp_path)
    assert sorted(state(early)) == [1, 2] and early.expired == []
    late = recover([ORDERS], journal=log, now=T0 + 20 * SECOND, base_dir=tmp_path)
    assert sorted(state(late)) == [2] and [c.key for c in late.expired] == [next(iter(
        r.key for r in early.store.groups[0].topics["orders"].records() if orjson.loads(r.payload)["id"] == 1))]


def test_e7_stored_expiry_times_survive_a_changed_default(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    thirty = spec(expiration=30)
    journal(log, [publish("orders", {"id": 1})])
    first = recover([thirty], journal=log, now=T0, base_dir=tmp_path)
    checkpoint(sow_path(thirty, tmp_path), first.store.groups[0], sequence=1, sync=False)
    sixty = spec(expiration=60)
    result = recover([sixty], journal=log, now=T0 + 40 * SECOND, base_dir=tmp_path)
    assert result.groups[0].source == "file" and state(result) == {}  # expired at T0 + 31 s, not T0 + 61 s


def test_torn_journal_tail_is_left_out(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    journal(log, [publish("orders", {"id": 1}), publish("orders", {"id": 2})])
    segment = next(log.glob("*.journal"))
    segment.write_bytes(segment.read_bytes()[:-5])
    result = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
    assert sorted(state(result)) == [1] and result.torn_tail is not None


def test_a_record_that_cannot_be_applied_is_named(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    journal(log, [publish("orders", {"id": 1}), publish("orders", {"no_id": 1})])
    with pytest.raises(InputError, match="journal record 2 .*key field /id is missing"):
        recover([ORDERS], journal=log, now=T0, base_dir=tmp_path)
    skipped = []
    result = recover([ORDERS], journal=log, now=T0, base_dir=tmp_path, on_error=skipped.append)
    assert sorted(state(result)) == [1] and [e.sequence for e in skipped] == [2]
