"""``records.json_plain`` (SOW format 2): which rows skip the JSON pre-filter's text guards.

A row marked plain must be read by SQLite's JSON paths exactly as orjson reads it, or a full
scan drops matches; so the mark is tested on its own, a forged mark is shown to change answers
(the column is really consulted) and to be caught by ``sow stats --verify``, and a format-1
file (no column: every row guarded) is still read correctly and rewritten as format 2.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from ampsctl.sow.checkpoint import checkpoint, load_group
from ampsctl.sow.errors import SowFileError
from ampsctl.sow.filequery import query_file
from ampsctl.sow.payloads import json_plain
from ampsctl.sow.query import Query
from ampsctl.sow.sowfile import FORMAT_VERSION, SowFile, meta_crc
from ampsctl.sow.stats import file_stats
from ampsctl.sow.store import TopicGroup
from sow_helpers import spec
from test_sow_jsonfilter import FILTERS, RAW, _check, _file


@pytest.mark.parametrize(("payload", "plain"), [
    (b'{"a":1,"b":[1,{"a":2}]}', 1),  # canonical; the same name in another object is no duplicate
    (b'{ "a" : 1 ,\n\t"b": {"a": "x y"} }', 1),  # spaced: counted by names, not compared as text
    (b'{"a":" :","b":":"}', 1),  # colons inside strings are not names
    (b'[1, 2]', 1),
    (b'{"a":1,"a":2}', 0),  # SQLite reads the first, orjson the last
    (b'{"b":{"c":1, "c" :2}}', 0),
    (b'{"\\u0061":1}', 0),  # an escaped name: SQLite's path does not match it
    (b'{"a":"x\\"y"}', 0),  # any backslash
    (b'{"a":', 0),  # not JSON
    (b'{"a":1e400}', 0),  # orjson refuses it; 0 is always safe
])
def test_json_plain(payload: bytes, plain: int) -> None:
    assert json_plain(payload) == plain


def _plain_column(path: Path) -> dict[int, int]:
    with sqlite3.connect(path) as connection:
        return {orjson.loads(payload)["id"]: plain for payload, plain in connection.execute("SELECT payload, json_plain FROM records")}


def test_checkpoints_store_the_mark(tmp_path: Path) -> None:
    path = _file(tmp_path, RAW)
    assert _plain_column(path) == {orjson.loads(payload)["id"]: json_plain(payload) for payload in RAW}
    assert _plain_column(path)[100] == 0 and _plain_column(path)[120] == 1  # a duplicate name; a plain row


def test_a_forged_mark_changes_answers_and_verify_finds_it(tmp_path: Path) -> None:
    path = _file(tmp_path, RAW)
    with SowFile.open(path) as sow:
        assert 100 in [row.doc["id"] for row in query_file(sow, Query(filter="/c = 999")).rows]
    with sqlite3.connect(path) as connection:  # {"id":100,"c":1,"c":999}: SQLite reads /c as 1
        connection.execute("UPDATE records SET json_plain = 1 WHERE CAST(payload AS TEXT) GLOB '*\"id\":100,*'")
    with SowFile.open(path) as sow:
        assert 100 not in [row.doc["id"] for row in query_file(sow, Query(filter="/c = 999")).rows]
        with pytest.raises(SowFileError, match="index columns of record .* do not match") as caught:
            file_stats(sow, verify=True)
    assert caught.value.damaged


def _as_format_1(path: Path) -> None:
    """What a format-1 writer wrote: no json_plain column, version 1 in the header and the meta."""
    with sqlite3.connect(path) as connection:
        connection.execute("ALTER TABLE records DROP COLUMN json_plain")
        connection.execute("PRAGMA user_version = 1")
        values = dict(connection.execute("SELECT name, value FROM meta"))
        values["format_version"] = "1"
        values["meta_crc"] = str(meta_crc(values))
        connection.executemany("UPDATE meta SET value = ? WHERE name = ?", [(v, k) for k, v in values.items()])


def test_format_1_files_are_read_with_every_row_guarded(tmp_path: Path) -> None:
    path = _file(tmp_path, RAW)
    _as_format_1(path)
    with SowFile.open(path) as sow:
        assert sow.meta.format_version == 1
        assert file_stats(sow, verify=True)["records"] == len(RAW)
    _check(path, RAW, FILTERS)


def test_format_1_files_are_rewritten_as_format_2(tmp_path: Path) -> None:
    path = _file(tmp_path, RAW)
    _as_format_1(path)
    group = TopicGroup(spec())
    load_group(path, group)
    assert group.needs_rewrite  # an update in place would write a column the file lacks
    checkpoint(path, group, sequence=group.sequence + 1, sync=False)
    with SowFile.open(path) as sow:
        assert sow.meta.format_version == FORMAT_VERSION == 2
    assert _plain_column(path)[100] == 0
    _check(path, RAW, FILTERS)


def test_header_and_meta_must_agree_on_the_version(tmp_path: Path) -> None:
    path = _file(tmp_path, RAW)
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 1")
    with pytest.raises(SowFileError, match="header says format version 1, its meta table 2"):
        SowFile.open(path)
