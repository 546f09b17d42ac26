"""The SOW file format: round trip, checkpoints, and every kind of bad file (issue 6 corruption tests).

Each bad file must give a SowFileError (an InputError: exit 3) that says what is wrong and
whether recovery may rebuild it (``damaged``), never a traceback or a wrong answer.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from ampsctl.errors import InputError
from ampsctl.journal.record import Command
from ampsctl.sow.checkpoint import checkpoint, load_group, write_group
from ampsctl.sow.errors import SowFileError
from ampsctl.sow.sowfile import APPLICATION_ID, FORMAT_VERSION, SowFile
from ampsctl.sow.stats import file_stats, verify_file
from ampsctl.sow.store import SowStore, TopicGroup
from sow_helpers import SECOND, T0, record, spec

SPEC = spec(expiration=0, hash_indexes=(("/region",),), indexes=("/qty",), history_window=3600, history_granularity=0)


def build(path: Path, count: int = 5) -> SowStore:
    store = SowStore([SPEC])
    for number in range(1, count + 1):
        store.apply(record(number, Command.PUBLISH, {"id": number, "region": "EMEA" if number % 2 else "APAC",
                                                     "qty": number * 10, "text": "payload-%d" % number},
                           expiration=60 if number == 2 else None))
    write_group(path, store.groups[0], sequence=store.last_sequence, sync=False)
    return store


def loaded(path: Path) -> TopicGroup:
    group = TopicGroup(SPEC)
    load_group(path, group)
    return group


def test_round_trip_keeps_records_history_and_meta(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    store = build(path)
    with SowFile.open(path) as sow:
        assert sow.meta.spec == SPEC and sow.meta.format_version == FORMAT_VERSION
        assert sow.meta.last_sequence == 5 and sow.meta.hash_paths == (("/id",), ("/region",))
        assert [r.key for r in sow.records()] == [r.key for r in store.groups[0].topics["orders"].records()]
        assert sow.history_count() == 5
        stats = file_stats(sow, verify=True)
    assert stats["records"] == 5 and stats["expiring"] == 1 and stats["verified"].startswith("ok")
    group = loaded(path)
    original = store.groups[0].topics["orders"]
    again = group.topics["orders"]
    assert list(again.records()) == list(original.records())
    assert again.history is not None and original.history is not None
    assert {k: again.history.states(k) for k in again.history.keys()} == {k: original.history.states(k) for k in original.history.keys()}
    assert group.sequence == 5 and not group.needs_rewrite


def test_incremental_checkpoint_writes_changes_and_sequence(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    store = build(path)
    group = store.groups[0]
    group.needs_rewrite = False
    store.apply(record(6, Command.DELTA_PUBLISH, {"id": 1, "qty": 999}))
    store.apply(record(7, Command.SOW_DELETE, {"filter": "/id = 2"}))
    store.apply(record(8, Command.PUBLISH, {"id": 9, "region": "X", "qty": 1}))
    assert checkpoint(path, group, sequence=store.group_sequence(group), sync=False) == 3
    again = loaded(path)
    assert sorted(orjson.loads(r.payload)["id"] for r in again.topics["orders"].records()) == [1, 3, 4, 5, 9]
    assert again.sequence == 8
    with SowFile.open(path) as sow:
        assert verify_file(sow) == (5, 8)


def flip(path: Path, offset: int, mask: int = 0x04) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    path.write_bytes(bytes(data))


def test_flipped_byte_in_a_message_is_caught_by_its_crc(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    build(path)
    flip(path, path.read_bytes().index(b"payload-3") + 8)
    with pytest.raises(SowFileError, match="record .* does not match its checksum") as caught:
        loaded(path)
    assert caught.value.damaged and caught.value.code == "SOW_DAMAGED"
    with SowFile.open(path) as sow:  # opening works; reading the damaged record does not
        with pytest.raises(SowFileError, match="checksum"):
            list(sow.records())


def test_a_table_page_that_lost_a_row_is_caught_when_every_record_is_read(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    build(path)
    connection = sqlite3.connect(path)
    root, page_size = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = 'records'").fetchone()[0], \
        connection.execute("PRAGMA page_size").fetchone()[0]
    connection.close()
    data = bytearray(path.read_bytes())
    head = (root - 1) * page_size
    assert data[head] == 13 and int.from_bytes(data[head + 3:head + 5], "big") == 5  # a leaf page of 5 rows
    data[head + 3:head + 5] = (4).to_bytes(2, "big")  # one bit: SQLite now sees 4 rows, without an error
    path.write_bytes(bytes(data))
    with SowFile.open(path) as sow:
        with pytest.raises(SowFileError, match="records table gives 4 records but its key index 5"):
            list(sow.records())


def test_flipped_byte_in_meta_is_caught(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    build(path)
    data = path.read_bytes()
    flip(path, data.index(b'"last_sequence"') - 30 if b'"last_sequence"' in data else data.index(b"last_sequence") + 14)
    with pytest.raises(SowFileError, match="damaged"):
        SowFile.open(path)


def test_damaged_index_column_is_found_by_verify(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    build(path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE records SET h1 = X'00' WHERE rowid = 2")
    with SowFile.open(path) as sow, pytest.raises(SowFileError, match="index columns .* do not match"):
        verify_file(sow)


@pytest.mark.parametrize("size", [0, 10, 99, 4096])
def test_truncated_file(tmp_path: Path, size: int) -> None:
    path = tmp_path / "orders.sow"
    build(path, count=300)
    path.write_bytes(path.read_bytes()[:size])
    with pytest.raises(SowFileError, match="cut off|truncated") as caught:
        SowFile.open(path)
    assert caught.value.damaged


def test_text_file_is_not_a_sow_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.sow"
    path.write_text("orders,1,2\nthis is not a SOW file at all\n")
    with pytest.raises(SowFileError, match="not a SOW file: it looks like a text file") as caught:
        SowFile.open(path)
    assert not caught.value.damaged and isinstance(caught.value, InputError) and caught.value.exit_code == 3


def test_wrong_magic(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    build(path)
    flip(path, 0, 0x20)  # "SQLite" -> "sQLite"
    with pytest.raises(SowFileError, match="not a SOW file"):
        SowFile.open(path)
    path.write_bytes(b"\x00\x01\x02binary junk" * 20)
    with pytest.raises(SowFileError, match="not an SQLite database"):
        SowFile.open(path)


def test_other_sqlite_database_is_not_a_sow_file(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE t (x)")
    with pytest.raises(SowFileError, match="another application"):
        SowFile.open(path)


def test_unknown_version(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    build(path)
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA user_version = {FORMAT_VERSION + 1}")
    with pytest.raises(SowFileError, match=f"format version {FORMAT_VERSION + 1} is not supported") as caught:
        SowFile.open(path)
    assert caught.value.code == "SOW_VERSION" and not caught.value.damaged


def test_missing_meta_table(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
        connection.execute("CREATE TABLE x (y)")
    with pytest.raises(SowFileError, match="no meta table"):
        SowFile.open(path)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(SowFileError, match="no such SOW file"):
        SowFile.open(tmp_path / "nope.sow")
    with pytest.raises(SowFileError, match="directory"):
        SowFile.open(tmp_path)


def test_incompatible_key_fields_are_refused_for_recovery(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    build(path)
    with pytest.raises(SowFileError, match="Key fields") as caught:
        load_group(path, TopicGroup(spec(keys=("/region",))))
    assert caught.value.damaged  # recovery rebuilds it from the journal


def test_unwritable_directory_is_an_environment_problem(tmp_path: Path) -> None:
    import os

    from ampsctl.errors import EnvironmentProblem

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user that can write anywhere (root)")
        with pytest.raises(EnvironmentProblem, match="cannot write SOW file"):
            build(locked / "orders.sow")
    finally:
        locked.chmod(0o700)


def test_disk_full_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from ampsctl.errors import EnvironmentProblem
    from ampsctl.sow import checkpoint as module

    path = tmp_path / "orders.sow"
    store = build(path)
    before = path.read_bytes()

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(module.os, "replace", full)
    store.apply(record(6, Command.PUBLISH, {"id": 6, "region": "X", "qty": 1}))
    with pytest.raises(EnvironmentProblem, match="No space left") as caught:
        write_group(path, store.groups[0], sequence=6, sync=False)
    assert "free disk space" in (caught.value.hint or "")
    assert path.read_bytes() == before and not list(tmp_path.glob(".*tmp*"))


def test_expiring_records_are_indexed_for_the_sweep(tmp_path: Path) -> None:
    path = tmp_path / "orders.sow"
    build(path)
    with SowFile.open(path) as sow:
        due = [r.key for r in sow.records("expires_at <= ?", (T0 + 100 * SECOND,))]
    assert len(due) == 1


@pytest.mark.parametrize("indexes", [(), ("/qty",)])
def test_a_checkpoint_writes_the_index_columns_of_each_records_document(tmp_path: Path, indexes: tuple[str, ...]) -> None:
    # The hash tokens come from what the topic kept when it indexed the record (checkpoint._rows):
    # they must equal the tokens of the stored document, also after updates and delta merges.
    store = SowStore([spec(hash_indexes=(("/region",),), indexes=indexes)])
    for sequence, payload in enumerate([{"id": 1, "region": "A", "qty": 1}, {"id": 2, "region": "B", "qty": 2},
                                        {"id": 1, "region": "C", "qty": 3}], 1):
        store.apply(record(sequence, Command.PUBLISH, payload))
    store.apply(record(4, Command.DELTA_PUBLISH, {"id": 2, "region": "D"}))
    group = store.groups[0]
    path = tmp_path / "orders.sow"
    checkpoint(path, group, sequence=store.group_sequence(group), sync=False)
    hashes = len(group.indexer.hash_fields)
    with sqlite3.connect(path) as connection:
        rows = connection.execute(f"SELECT payload, {', '.join(f'h{i}' for i in range(hashes))} FROM records").fetchall()
    assert len(rows) == 2
    for payload, *tokens in rows:
        fields = group.payloads.record(group.payloads.parse(payload))
        assert tuple(tokens) == group.indexer.hash_tokens(fields)


def test_reading_every_record_while_a_checkpoint_waits_is_one_snapshot(tmp_path: Path) -> None:
    import threading
    import time

    path = tmp_path / "orders.sow"
    store = build(path, 3000)
    store.groups[0].needs_rewrite = False
    with SowFile.open(path) as sow:
        records = sow.records()
        read = [next(records) for _ in range(1500)]  # mid-scan: the reader holds the file
        for number in range(3001, 3011):
            store.apply(record(number, Command.PUBLISH, {"id": number, "region": "x", "qty": 1, "text": "t"}))
        writer = threading.Thread(target=checkpoint, args=(path, store.groups[0]),
                                  kwargs={"sequence": store.last_sequence, "sync": False})
        writer.start()
        time.sleep(0.3)  # the checkpoint waits for the reader; the count must not see its rows
        read += list(records)
        writer.join()
    assert len(read) == 3000
