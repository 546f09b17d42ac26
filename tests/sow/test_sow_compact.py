"""Journal compaction (local engine): as-of points, expiry, output files, refusals."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ampsctl.errors import InputError, UsageError
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from ampsctl.sow.compact import compact, file_name
from ampsctl.sow.errors import ReplayError
from ampsctl.sow.sowfile import SowFile
from sow_helpers import SECOND, T0, spec

ORDERS = spec(expiration=0)
PRICES = spec("prices", keys=("/sym",), pattern=True, regex=r"^prices\.")
TICKS = spec("/ett/order", "json", keys=("/s",), persistent=False, file_name=None)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    directory = tmp_path / "journal"
    entries = [
        (Command.PUBLISH, "orders", {"id": 1, "v": 1}, {"client_name": "pub"}),
        (Command.PUBLISH, "orders", {"id": 2, "v": 1}, {"expiration": 5}),
        (Command.DELTA_PUBLISH, "orders", {"id": 1, "v": 2}, {}),
        (Command.PUBLISH, "prices.us", {"sym": "IBM", "px": 1}, {}),
        (Command.PUBLISH, "prices.eu", {"sym": "SAP", "px": 2}, {}),
        (Command.PUBLISH, "/ett/order", {"s": "A"}, {}),
        (Command.SOW_DELETE, "orders", {"keys": []}, {}),
        (Command.PUBLISH, "elsewhere", {"x": 1}, {}),
        (Command.SOW_DELETE, "orders", {"filter": "/v = 2"}, {}),
    ]
    with JournalWriter.open(directory, fsync=FsyncPolicy.NEVER) as writer:
        for number, (command, topic, doc, fields) in enumerate(entries, 1):
            writer.append(T0 + number * SECOND, command, topic, "json", orjson.dumps(doc), **fields)
    return directory


def contents(path: str) -> dict:
    with SowFile.open(path) as sow:
        return {(r.topic, r.key): orjson.loads(r.payload) for r in sow.records()}


def test_whole_journal(tmp_path: Path, log: Path) -> None:
    result = compact(log, [ORDERS, PRICES, TICKS], tmp_path / "out")
    assert [Path(f.path).name for f in result.files] == ["orders.json.sow", "prices.json.sow", "%2Fett%2Forder.json.sow"]
    assert (result.scanned, result.applied, result.last_sequence, result.now) == (9, 8, 9, T0 + 9 * SECOND)
    assert result.expired == 1  # id 2 expired at T0 + 7 s, before the last record's time
    orders, prices, ticks = (contents(f.path) for f in result.files)
    assert list(orders.values()) == []
    assert sorted(doc["sym"] for doc in prices.values()) == ["IBM", "SAP"] and result.files[1].topics == 2
    assert list(ticks.values()) == [{"s": "A"}]
    with SowFile.open(result.files[0].path) as sow:
        assert sow.meta.last_sequence == 9 and sow.meta.spec == ORDERS


def test_as_of_timestamp_and_bookmarks(tmp_path: Path, log: Path) -> None:
    at = compact(log, [ORDERS], tmp_path / "a", as_of="2026-01-01T00:00:03Z")
    assert at.last_sequence == 3 and at.now == T0 + 3 * SECOND and at.expired == 0
    assert sorted(doc["v"] for doc in contents(at.files[0].path).values()) == [1, 2]
    bookmark = JournalReader(log).record_at(2).bookmark  # type: ignore[union-attr]
    by_bookmark = compact(log, [ORDERS], tmp_path / "b", as_of=bookmark)
    assert by_bookmark.last_sequence == 2 and len(contents(by_bookmark.files[0].path)) == 2
    epoch = compact(log, [ORDERS], tmp_path / "c", as_of="0")
    assert epoch.scanned == 0 and contents(epoch.files[0].path) == {}
    later = compact(log, [ORDERS], tmp_path / "d", as_of="2026-01-01T00:00:03Z", now=T0 + 100 * SECOND)
    assert later.expired == 1


def test_as_of_a_timestamp_stops_at_the_first_record_stamped_later(tmp_path: Path) -> None:
    # timestamps need not increase: a record after the first later one is left out, even stamped earlier
    directory = tmp_path / "journal"
    with JournalWriter.open(directory, fsync=FsyncPolicy.NEVER) as writer:
        for id_, seconds in ((1, 1), (2, 5), (3, 2)):
            writer.append(T0 + seconds * SECOND, Command.PUBLISH, "orders", "json", orjson.dumps({"id": id_}))
    for fast in (True, False):
        result = compact(directory, [ORDERS], tmp_path / f"out-{fast}", as_of="2026-01-01T00:00:03Z", fast=fast)
        assert result.last_sequence == 1 and [doc["id"] for doc in contents(result.files[0].path).values()] == [1]


def test_bad_as_of_and_existing_files(tmp_path: Path, log: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        compact(log, [ORDERS], tmp_path / "x", as_of="123|99|")
    with pytest.raises(InputError, match="neither a bookmark nor a timestamp"):
        compact(log, [ORDERS], tmp_path / "x", as_of="yesterday")
    compact(log, [ORDERS], tmp_path / "y")
    with pytest.raises(UsageError, match="already exists"):
        compact(log, [ORDERS], tmp_path / "y")
    assert compact(log, [ORDERS], tmp_path / "y", overwrite=True).files[0].records == 0


def test_records_that_cannot_be_applied(tmp_path: Path) -> None:
    directory = tmp_path / "journal"
    with JournalWriter.open(directory, fsync=FsyncPolicy.NEVER) as writer:
        writer.append(T0, Command.PUBLISH, "orders", "json", b'{"id": 1}')
        writer.append(T0, Command.PUBLISH, "orders", "json", b'{"missing": "id"}')
    with pytest.raises(ReplayError, match="journal record 2"):
        compact(directory, [ORDERS], tmp_path / "out")
    skipped: list[ReplayError] = []
    result = compact(directory, [ORDERS], tmp_path / "out2", on_error=skipped.append)
    assert result.skipped == 1 and [e.sequence for e in skipped] == [2] and result.files[0].records == 1


def test_file_names_are_safe() -> None:
    assert file_name(spec("orders")) == "orders.json.sow"
    assert file_name(spec("/ett/order", "fix")) == "%2Fett%2Forder.fix.sow"
    assert file_name(spec("a b*")) == "a%20b%2A.json.sow"
