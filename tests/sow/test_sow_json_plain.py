"""``records.json_plain`` (SOW format 2): which rows skip the JSON pre-filter's text guards.

A row marked plain must be read by SQLite's JSON paths exactly as orjson reads it, or a full
scan drops matches; so the mark is tested on its own, a forged mark is shown to change answers
(the column is really consulted) and to be caught by ``sow stats --verify``, and a format-1
file (no column: every row guarded) is still read correctly and rewritten as format 2. The
second half is adversarial: raw payload bytes (Hypothesis and hand-picked) against an
independent reading of the mark, against SQLite's own reading of every path, and through full
scans, both compaction writers and verify, compared with the reference evaluator.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ampsctl.filter import ast
from ampsctl.filter.errors import FilterSyntaxError
from ampsctl.filter.parser import parse
from ampsctl.filter.printer import string_text
from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from ampsctl.sow import filequery, jsonfilter
from ampsctl.sow.checkpoint import checkpoint, load_group
from ampsctl.sow.compact import compact
from ampsctl.sow.errors import SowFileError
from ampsctl.sow.filequery import query_file
from ampsctl.sow.jsonfilter import JsonPrefilter, _JsonValues
from ampsctl.sow.payloads import json_plain
from ampsctl.sow.query import Query
from ampsctl.sow.sowfile import FORMAT_VERSION, SowFile, meta_crc
from ampsctl.sow.stats import file_stats
from ampsctl.sow.store import TopicGroup
from sow_helpers import T0, spec
from test_sow_jsonfilter import FILTERS, RAW, _check, _file, parts  # noqa: F401 (parts: a fixture)


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
    (b' "x"\n', 1), (b"5", 1), (b"null", 1),  # top-level scalars
    (b'[{"a":1}, {"a" :1,\r\n"a"\t: 2}]', 0),  # a duplicate inside an array, spaced
    (b'{"":1,"":2}', 0),
    (b'{"a":{"x":1},"b":{"x":2},"c":[{"x":3}]}', 1),  # one name in three objects
    ('{"\u00e9":1,"e\u0301":2,"a":1,"a ":2}'.encode(), 1),  # names that only look alike
    # orjson writes 254 levels, no more: deeper is 0 (safe). Pinned, as files keep the mark and
    # verify recomputes a 1: an orjson that lowered the limit would report such files as damaged.
    (b"[" * 254 + b"]" * 254, 1), (b'{"a":' * 254 + b"1" + b"}" * 254, 1),
    (b"[" * 255 + b"]" * 255, 0), (b'{"a":' * 255 + b"1" + b"}" * 255, 0), (b"[" * 1000 + b"]" * 1000, 0),
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
        with pytest.raises(SowFileError, match="json_plain mark of record .* does not match") as caught:
            file_stats(sow, verify=True)
    assert caught.value.damaged


@pytest.mark.parametrize(("mark", "healthy"), [(0, True), (2, False), (-1, False)])
def test_verify_accepts_a_zero_mark_and_nothing_else_unearned(tmp_path: Path, mark: int, healthy: bool) -> None:
    """0 only costs the guards (another orjson may write back less), so it is never damage."""
    path = _file(tmp_path, RAW)
    with sqlite3.connect(path) as connection:  # {"id":120,...} is plain: json_plain 1
        connection.execute("UPDATE records SET json_plain = ? WHERE CAST(payload AS TEXT) GLOB '*\"id\":120,*'", (mark,))
    with SowFile.open(path) as sow:
        if healthy:
            assert file_stats(sow, verify=True)["records"] == len(RAW)
        else:
            with pytest.raises(SowFileError, match="json_plain mark"):
                file_stats(sow, verify=True)
    _check(path, RAW, FILTERS)


def test_json_plain_reads_a_memoryview_as_its_bytes() -> None:
    assert json_plain(memoryview(b'{"a":1, "b":2}')) == 1 and json_plain(memoryview(b'{"a":1,"a":2}')) == 0
    assert json_plain(memoryview(b'{"\\u0061":1}')) == 0


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


# ------------------------------------------------ adversarial: raw payload bytes against the mark
#
# A row marked plain skips the text guards, so SQLite's reading of it is all that stands between
# a match and a dropped row. The payloads below are raw bytes, never orjson's output: whitespace
# in every legal place, names that are prefixes, suffixes and copies of each other at any depth,
# duplicates, non-ASCII and astral text, U+2028, numbers in every notation, text that looks like
# JSON. Each test runs both spellings of the payload argument (BLOB before SQLite 3.45, the CAST
# to text after), so the SQL of either is exercised on the SQLite at hand.

NAMES = ["a", "ab", "b", "ba", "c", "cc", "a.b", "é", "0", "", " ", "a b", "e\u0301", "\U0001f600", "\u2028", "x:y",
         "{", "}", "[", ",", ":", "'", "$", "*", "\x7f", "\u00a0", "c\u2029"]
PLAIN_NAMES = NAMES[:9]  # those a /a/b path can spell; the others are reached as [/name]
STRINGS = ["", "a", "ab", "b", "c", "é", "\U0001f600", "\u2028", "{", "}", "[1]", "{c:999}", ":", ",", "1", "01", "999",
           "-0", "1e3", "true", "null", " ", "\t", "a:b", "\x7f", "\ufeff", "\uffff", "c", "cc"]  # a raw tab: not JSON
NUMBERS = ["0", "-0", "0.0", "-0.0", "1", "-1", "999", "9.99e2", "99900e-2", "999.0", "1E3", "1e+3", "1e-3", "1.5E-3",
           "998.9999999999", "18446744073709551615", "18446744073709551616", "9223372036854775807", "9223372036854775808",
           "-9223372036854775808", "-9223372036854775809", "123456789012345678901234567890", "1e308",
           "1.7976931348623157e308", "5e-324", "1e-320", "1e-400", "2.2250738585072014e-308", "1" + "0" * 300, "0e0",
           "-0E-0", "1.000000000000000000001"]
SPACE = ["", "", "", " ", "\t", "\n", "\r\n", " \t\r\n "]
ESCAPED = [b'"\\u0061"', b'"\\u0063"', b'"a\\"b"', b'"\\\\"', b'"\\u2028"', b'"\\ud83d\\ude00"']  # "a", "c", ...


def _text(value: str) -> bytes:
    return b'"' + value.encode() + b'"'


@st.composite
def raw_values(draw: st.DrawFn, depth: int = 0) -> bytes:
    """One JSON value as raw text; now and then an escape (the mark is then 0, and the text
    guards decide)."""
    kind = draw(st.sampled_from(["small", "num", "str", "lit", *(["obj", "obj", "arr"] if depth < 3 else [])]))
    if kind == "small":  # values the filters' literals often hit
        return draw(st.sampled_from([b"1", b"999", b"1e3", b'"c"', b'"999"', *ESCAPED]))
    if kind == "num":
        return draw(st.sampled_from(NUMBERS)).encode()
    if kind == "str":
        return _text(draw(st.sampled_from(STRINGS)))
    if kind == "lit":
        return draw(st.sampled_from([b"true", b"false", b"null"]))
    space = st.sampled_from(SPACE).map(str.encode)
    if kind == "arr":
        items = [draw(space) + draw(raw_values(depth + 1)) + draw(space) for _ in range(draw(st.integers(0, 3)))]
        return b"[" + (b",".join(items) or draw(space)) + b"]"
    return b"{" + (b",".join(draw(raw_members(depth))) or draw(space)) + b"}"


@st.composite
def raw_members(draw: st.DrawFn, depth: int = 0, size: int = 4) -> list[bytes]:
    """``"name" : value`` members, names drawn so that copies (duplicates, or the same name one
    level down) are common."""
    space = st.sampled_from(SPACE).map(str.encode)
    members = []
    for _ in range(draw(st.integers(0, size))):
        name = _text(draw(st.sampled_from(draw(st.sampled_from([PLAIN_NAMES[:2], PLAIN_NAMES[:6], NAMES])))))
        if not draw(st.integers(0, 30)):
            name = draw(st.sampled_from(ESCAPED))
        members.append(draw(space) + name + draw(space) + b":" + draw(space) + draw(raw_values(depth + 1))
                       + draw(space))
    return members


@st.composite
def raw_documents(draw: st.DrawFn) -> bytes:
    """Any JSON text, top level included: arrays and scalars too."""
    space = st.sampled_from(SPACE).map(str.encode)
    return draw(space) + draw(raw_values()) + draw(space)


def _plain_by_hand(payload: bytes) -> int:
    """The mark from an independent reading: the standard library's parser, which reports every
    member of every object, so a duplicate is seen where orjson would drop it."""
    duplicate = False

    def members(pairs: list[tuple[str, object]]) -> dict[str, object]:
        nonlocal duplicate
        duplicate = duplicate or len({name for name, _ in pairs}) < len(pairs)
        return dict(pairs)

    try:
        orjson.loads(payload)
    except orjson.JSONDecodeError:
        return 0
    json.loads(payload.decode(), object_pairs_hook=members)
    return 0 if duplicate or b"\\" in payload else 1


@settings(max_examples=400, deadline=None)
@given(payload=raw_documents())
def test_the_mark_agrees_with_an_independent_reading(payload: bytes) -> None:
    assert json_plain(payload) == _plain_by_hand(payload)


def _object_paths(doc: object, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], object]]:
    """Every path of names through objects only (a step into an array is NULL in SQLite, and the
    pre-filter lets NULL through), each with orjson's value; absent names give None."""
    if isinstance(doc, dict):
        for name in NAMES:
            if name:  # the filter language has no empty name
                yield (*prefix, name), doc.get(name)
        for name, value in doc.items():
            if name:
                yield from _object_paths(value, (*prefix, name))


def _read_alike(found: object, value: object) -> bool:
    """SQLite's ``coalesce(json_extract(..), '')`` against orjson's value: NULL as '', booleans
    as 1/0, arrays and objects as their JSON text, numbers within SQLite's own float rounding
    (far inside the pre-filter's 1e-9 widening)."""
    if value is None:
        return found == ""
    if isinstance(value, bool):
        return type(found) is int and found == int(value)
    if isinstance(value, dict | list):
        return isinstance(found, str) and orjson.loads(found) == value
    if isinstance(value, str):
        return found == value
    assert isinstance(value, int | float)
    return isinstance(found, int | float) and math.isfinite(found) and abs(found - value) <= abs(value) * 1e-12 + 1e-300


_ARGUMENTS = ("payload", "CAST(payload AS TEXT)")  # jsonfilter's before SQLite 3.45 and from it on


@settings(max_examples=300, deadline=None)
@given(payload=raw_documents())
def test_sqlite_reads_every_plain_payload_as_orjson_does(payload: bytes) -> None:
    if not json_plain(payload):
        return
    doc = orjson.loads(payload)
    with sqlite3.connect(":memory:") as connection:
        for path, value in _object_paths(doc):
            column = _JsonValues().column(ast.Field(tuple(ast.Step(name) for name in path)))
            if column is None:
                continue  # a name the pre-filter leaves to Python
            for argument in _ARGUMENTS:
                sql = column.replace(f"json_extract({jsonfilter._PAYLOAD},", f"json_extract({argument},")
                (found,), = connection.execute(f"SELECT {sql} FROM (SELECT ? AS payload)", (payload,))
                assert _read_alike(found, value), (payload, path, argument, found, value)


def _field(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["short", "short", "path", "odd"]))
    if kind == "odd":
        return "[/" + draw(st.sampled_from([name for name in NAMES if name and "]" not in name])) + "]"
    names = PLAIN_NAMES[:2] if kind == "short" else PLAIN_NAMES[:8]
    return "/" + "/".join(draw(st.lists(st.sampled_from(names), min_size=1, max_size=3 if kind == "path" else 2)))


def _literal(text: str) -> bool:
    try:
        parse(f"/a = {text}")
    except FilterSyntaxError:
        return False  # integers beyond 64 bits are refused in a filter
    return True


LITERALS = [text for text in [*NUMBERS, "1e300", "-5", "TRUE", "FALSE", "NULL", *map(string_text, STRINGS)]
            if _literal(text)]


@st.composite
def raw_filters(draw: st.DrawFn, depth: int = 0) -> str:
    field, literal = _field(draw), st.sampled_from(["1", "999", "998", "'c'", "1e3"]) | st.sampled_from(LITERALS)
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "in", "between", *(["and", "or", "not"] if depth < 2 else [])]))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "=", "!=", "<", "<=", ">", ">="]))
        return f"{draw(literal)} {op} {field}" if draw(st.booleans()) else f"{field} {op} {draw(literal)}"
    if kind == "in":
        return f"{field} IN ({', '.join(draw(st.lists(literal, min_size=1, max_size=3)))})"
    if kind == "between":
        return f"{field} BETWEEN {draw(literal)} AND {draw(literal)}"
    if kind == "not":
        return f"NOT ({draw(raw_filters(depth + 1))})"
    return f"({draw(raw_filters(depth + 1))}) {kind.upper()} ({draw(raw_filters(depth + 1))})"


AGAIN = [b"", b"", b'"a":1', b'"b":"c"', b'"a":1,"a":999', b' "a" :\t999 , "a":1', b'"b":"c","b":1e3',
         b'"a":{"a":999},"a":{"a":1}', b'"a":[1],"a":999']


def _objects(members: list[list[bytes]], spaces: list[str], again: list[tuple[bytes, int]]) -> list[bytes]:
    """Publishable payloads: each object gets an id first (its SOW key), and often members the
    filters read, somewhere among the others: duplicates, or names the row may have already."""
    payloads = []
    for number, (row, space, (member, where)) in enumerate(zip(members, spaces, again, strict=False)):
        row = row[:where] + [member] + row[where:] if member else row
        payloads.append(b"{" + b",".join([b'"id":%d' % number, *row]) + space.encode() + b"}")
    return payloads


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(members=st.lists(raw_members(size=5), min_size=1, max_size=6), spaces=st.lists(st.sampled_from(SPACE), min_size=6),
       again=st.lists(st.tuples(st.sampled_from(AGAIN), st.integers(0, 5)), min_size=6),
       texts=st.lists(raw_filters(), min_size=1, max_size=4), argument=st.sampled_from(_ARGUMENTS))
def test_scans_of_raw_payloads_match_the_evaluator(tmp_path: Path, members: list[list[bytes]], spaces: list[str],
                                                   again: list[tuple[bytes, int]], texts: list[str], argument: str) -> None:
    payloads = [payload for payload in _objects(members, spaces, again) if _parses(payload)]
    if not payloads:
        return
    path = _file(tmp_path, payloads)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonfilter, "_PAYLOAD", argument)
        _check(path, payloads, texts)
    with SowFile.open(path) as sow:
        assert file_stats(sow, verify=True)["records"] == len(payloads)
    path.unlink()


def _parses(payload: bytes) -> bool:
    try:
        orjson.loads(payload)
    except orjson.JSONDecodeError:
        return False  # a number orjson refuses (1e400 and the like): not publishable
    return True


# Hand-picked plain payloads: each is marked 1, so only SQLite's reading of it decides whether a
# scan sees it (the old text guards would have let most of them through: a name twice in the
# text, as a value or one level down, is no duplicate).
PLAIN_RAW = [
    b'{"id":200,"c":{"c":999},"cc":1}',  # /c/c: the same name one level down; /c an object
    b'{ "id" : 201 ,\t"c"\r\n:\n999 \n}\r\n',  # whitespace in every place JSON allows it
    b'{"id":202,"c":"c","b":"999","cc":"c"}',  # the name as a value
    b'{"id":203,"d":[{"e":1},{"e":999}],"e":5}',  # /d/e maps over the array: NULL in SQLite
    b'{"id":204,"c":-0,"d":{"e":-0.0}}',
    b'{"id":205,"c":1E3,"cc":999}',
    b'{"id":206,"c":99900e-2,"d":{"e":9.99e+2}}',
    b'{"id":207,"c":18446744073709551616}',  # beyond 64 bits: orjson's float, SQLite's REAL
    b'{"id":208,"c":123456789012345678901234567890}',
    b'{"id":209,"c":1.7976931348623157e308}',
    b'{"id":210,"c":5e-324,"d":{"e":1e-400}}',
    '{"id":211,"é":"\u2028","a b":"\U0001f600","\U0001f600":"é"}'.encode(),
    b'{"id":212,"c":"{c:999}","x:y":"}","a.b":999}',
    b'{"id":213,"":999,"c":"[999]"}',  # an empty name; text that looks like an array
    b'{"id":214,"c":[999],"d":{"e":{"e":999}}}',
    b'{"id":215,"c":true,"d":{"e":false}}',
    b'{"id":216,"c":null,"d":{}}',
    b'{"id":217,"c":9223372036854775807,"cc":18446744073709551615}',
    b'{"id":218,"c":-9223372036854775809}',
    b'{"id":219,"c":998.9999999999,"d":{"e":"999"}}',
]
PLAIN_FILTERS = [
    "/c = 999", "/c > 998", "/c >= 999", "/c < 1", "/c <= 0", "/c = 0", "/c = -0.0", "/c >= 1e308",
    "/c <= 5e-324", "/c = 1.7976931348623157e308", "/c BETWEEN 999 AND 1000", "/c IN (999, 'c', 1000)", "/c/c = 999",
    "/c/c > 998", "/d/e = 0", "/d/e = 999", "/d/e = '999'", "/d/e/e = 999", "/c = 'c'", "/b = 999", "/b = '999'",
    "/é = '\u2028'", "[/a b] = '\U0001f600'", "[/\U0001f600] = 'é'", "[/x:y] = '}'", "/a.b = 999", "/c = TRUE",
    "/d/e = FALSE", "/c > 1e19", "/c = 18446744073709551615", "/cc = 18446744073709551615", "/c > 9223372036854775806",
    "/c < -9223372036854775808", "/c = '{c:999}'", "/c = '[999]'", "/c > 1.2e29", "/c = 1000", "/c = 1e3",
    "/c > 998.99999999989", "/c < 999 AND /c > 998", "/cc = 999 OR /c = 'c'", "/c = 999 OR /d/e = 999",
]


@pytest.mark.parametrize("argument", _ARGUMENTS)
def test_hand_picked_plain_payloads(tmp_path: Path, argument: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert [json_plain(payload) for payload in PLAIN_RAW] == [1] * len(PLAIN_RAW)
    payloads = PLAIN_RAW + RAW
    path = _file(tmp_path, payloads)
    monkeypatch.setattr(jsonfilter, "_PAYLOAD", argument)
    _check(path, payloads, PLAIN_FILTERS + FILTERS)


def test_hand_picked_plain_payloads_in_parts(tmp_path: Path, parts: list[int]) -> None:
    """The helper processes of a large scan run the same SQL on their own connections."""
    payloads = PLAIN_RAW + RAW
    _check(_file(tmp_path, payloads), payloads, PLAIN_FILTERS[::4])
    assert parts and sum(parts) > 0


def test_a_name_sql_text_cannot_hold_stays_in_python(tmp_path: Path) -> None:
    """A lone surrogate in a field name (from argv bytes that are not UTF-8) once reached the
    SQL text and raised UnicodeEncodeError: an internal error instead of an answer."""
    path = _file(tmp_path, RAW)
    _check(path, RAW, ["[/\udc80] = 1", "/c = 999 AND [/c\udc80] < 5", "[/c\udc80] = 1 OR /c = 1"])


def test_malformed_json_with_plain_rows_finishes_in_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's "malformed JSON" in the middle of a scan whose pre-filter reads json_plain: the
    rows before it came through the real pre-filter, the rest are read in Python."""
    payloads = PLAIN_RAW + RAW
    path = _file(tmp_path, payloads)
    real = filequery.json_prefilter
    for bad in (0, 5, 25, len(payloads) - 1):

        def failing(expr: ast.Expr, bad: int = bad, **options: bool) -> JsonPrefilter:
            found = real(expr, **options)
            assert found is not None and "json_plain = 0" in found.where
            return JsonPrefilter(f"(CASE WHEN id > {bad} THEN json_extract('{{', '$') ELSE 1 END) AND {found.where}",
                                 found.params)

        monkeypatch.setattr(filequery, "json_prefilter", failing)
        _check(path, payloads, ["/c = 999", "/d/e = 999", "/c > 998 AND /id > 200"])


def test_both_compaction_writers_store_the_mark_verify_recomputes(tmp_path: Path) -> None:
    """The fast compaction and the reference replay store json_plain(payload) for the bytes they
    store (deltas are stored as orjson writes the merge), and verify finds the files healthy."""
    payloads = PLAIN_RAW + RAW
    with JournalWriter.open(tmp_path / "journal", fsync=FsyncPolicy.NEVER) as writer:
        for number, payload in enumerate(payloads):
            writer.append(T0 + number, Command.PUBLISH, "orders", "json", payload)
        for number, payload in enumerate([b'{"id":200, "b" : 1}', b'{"id":100,"c":1,"c":2}', b'{"id":102,"e":"\\u0063"}']):
            writer.append(T0 + 100 + number, Command.DELTA_PUBLISH, "orders", "json", payload)
    columns = []
    for fast in (True, False):
        result = compact(tmp_path / "journal", [spec()], tmp_path / str(fast), fast=fast)
        (written,) = result.files
        with sqlite3.connect(written.path) as connection:
            rows = connection.execute("SELECT payload, json_plain FROM records ORDER BY id").fetchall()
        assert [plain for _, plain in rows] == [json_plain(payload) for payload, _ in rows]
        assert 0 < sum(plain for _, plain in rows) < len(rows)
        columns.append(rows)
        with SowFile.open(written.path) as sow:
            assert file_stats(sow, verify=True)["records"] == len(payloads)
        stored = [payload for payload, _ in rows]
        _check(Path(written.path), stored, ["/c = 999", "/b = 1", "/d/e = 999", "/c > 998"])
    assert columns[0] == columns[1]
