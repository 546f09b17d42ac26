"""The JSON pre-filter of SOW file scans (ampsctl/sow/jsonfilter.py): never a wrong answer.

Every query runs through ``query_file`` (the public entry point, pre-filter on) and is compared
with ``filter.evaluate.matches`` on every stored document, the reference semantics. The payloads
include what SQLite's JSON reader sees differently from orjson: duplicate keys, escaped key
names, paths through arrays, numbers in every notation, text that looks like JSON.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ampsctl.filter.evaluate import matches
from ampsctl.filter.parser import parse
from ampsctl.journal.record import Command
from ampsctl.messages.json_record import JsonRecord
from ampsctl.sow import filequery, jsonscan
from ampsctl.sow.checkpoint import write_group
from ampsctl.sow.filequery import query_file
from ampsctl.sow.jsonfilter import JsonPrefilter, json_prefilter
from ampsctl.sow.query import Query
from ampsctl.sow.sowfile import SowFile
from ampsctl.sow.store import SowStore
from sow_helpers import record, spec
from test_sow_query import LITERALS, STORED, _literal, predicates

# Raw payloads, kept byte for byte by the SOW (orjson would normalise them).
RAW = [
    b'{"id":100,"c":1,"c":999}',  # duplicate key: orjson keeps the last
    b'{"id":101,"c":999,"c":1}',
    b'{"id":102,"\\u0063":999}',  # an escaped name is still "c"
    b'{"id":103,"c":1,"\\u0063":999}',
    b'{"id":104,"c":"a\\"b"}',
    b'{"id":105,"d":[{"e":999},{"e":1}]}',  # /d/e maps over the array
    b'{"id":106,"d":{"e":999},"d":{"f":1}}',
    b'{"id":107,"d":{"e":"[1]"}}',
    b'{"id":108,"c":9.99e2,"d":{"e":-0.0}}',
    b'{"id":109,"c":99900e-2}',
    b'{"id":110,"c":18446744073709551615}',
    b'{"id":111,"c":1e-320}',
    b'{"id":112, "c" : "999" }',
    b'{"id":113,"c":"[999]"}',
    b'{"id":114,"c":"{x"}',
    b'{"id":115,"c":["a",999]}',
    b'{"id":116,"c":{"z":1}}',
    b'{"id":117,"c":null}',
    b'{"id":118,"c":true}',
    b'{"id":119,"c":"\xc3\xa9"}',
    b'{"id":120,"cc":999,"c":5}',
]
FILTERS = [
    "/c = 999", "/c > 998", "/c >= 999", "/c < 2", "/c <= 1", "/c != 1", "/c = 'a\"b'", "/c = 'é'", "/c > 'b'",
    "/c < 'b'", "/c = '999'", "/c = '[999]'", "/c = '{x'", "/c IN (1, 'a', 999)", "/c BETWEEN 998 AND 1000",
    "/c BETWEEN 'a' AND 'z'", "/d/e = 999", "/d/e = 1", "/d/e > 0", "/d/e = '[1]'", "/d/e = 0", "/c = 1e-320",
    "/c = 18446744073709551615", "/c > 1e19", "/c = 1 OR /d/e = 999", "/c > 0 AND /id < 110", "NOT /c = 1",
    "/c = true", "/c = 0.0000001", "/cc = 999", "/c IS NULL", "/c > -5 AND /c LIKE '9'",
]


def _file(tmp_path: Path, payloads: list[bytes], **changes: object) -> Path:
    store = SowStore([spec(**changes)])
    for number, payload in enumerate(payloads, 1):
        store.apply(record(number, Command.PUBLISH, payload))
    path = tmp_path / f"j{len(list(tmp_path.iterdir()))}.sow"
    write_group(path, store.groups[0], sequence=len(payloads), sync=False)
    return path


def _check(path: Path, payloads: list[bytes], texts: list[str]) -> None:
    docs = [orjson.loads(payload) for payload in payloads]
    with SowFile.open(path) as sow:
        for text in texts:
            expected = [doc["id"] for doc in docs if matches(parse(text), JsonRecord(doc))]
            found = query_file(sow, Query(filter=text))
            assert [row.doc["id"] for row in found.rows] == expected, text


def test_raw_payloads_that_sqlite_reads_differently(tmp_path: Path) -> None:
    _check(_file(tmp_path, RAW), RAW, FILTERS)


def test_every_stored_value_against_every_literal(tmp_path: Path) -> None:
    payloads = [orjson.dumps({"id": number, "c": value}) for number, value in enumerate(STORED)]
    texts = [f"/c {op} {_literal(value)}" for op in ("=", "!=", "<", "<=", ">", ">=") for value in LITERALS]
    texts += [f"{_literal(value)} < /c" for value in LITERALS]
    _check(_file(tmp_path, payloads), payloads, texts)


def test_the_prefilter_is_used_and_sound_sql() -> None:
    found = json_prefilter(parse("/c > 5 AND /d/e = 'x'"))
    assert found is not None and "'$.\"d\".\"e\"')" in found.where and "json_extract(" in found.where
    assert json_prefilter(parse("/c LIKE 'x'")) is None and json_prefilter(parse("NOT /c = 1")) is None
    assert json_prefilter(parse("[/a*b] = 1")) is None  # names SQLite GLOB could misread stay in Python


def test_malformed_json_in_sqlite_finishes_in_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    payloads = [orjson.dumps({"id": number, "c": number % 3}) for number in range(10)]
    path = _file(tmp_path, payloads)
    failing = JsonPrefilter("CASE WHEN id > 4 THEN json_extract('{', '$') ELSE 1 END", [])
    monkeypatch.setattr(filequery, "json_prefilter", lambda expr, **_: failing)
    with SowFile.open(path) as sow:
        assert [row.doc["id"] for row in query_file(sow, Query(filter="/c = 1")).rows] == [1, 4, 7]


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.sampled_from([2**64 - 1, 1e300, 2.5, -0.0]),
              st.sampled_from(["", "1", "01", "a", "ab", "[1]", "{", "é", "a\"b"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)),
    max_leaves=4,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.lists(st.dictionaries(st.sampled_from(["a", "b"]), json_values, max_size=2), max_size=6), text=predicates(),
       duplicate=st.booleans())
def test_prefiltered_scans_match_the_evaluator(tmp_path: Path, rows: list[dict], text: str, duplicate: bool) -> None:
    payloads = [orjson.dumps({"id": number, **row}) for number, row in enumerate(rows)]
    if duplicate and payloads:  # a duplicate key the evaluator reads last and SQLite first
        payloads[0] = payloads[0][:-1] + b',"a":1}'
    path = _file(tmp_path, payloads)
    _check(path, payloads, [text, text.replace("/a", "/a/b")])
    path.unlink()


@pytest.fixture
def parts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every scan of more than 2 ids in parts of at least 2 ids, one per CPU but at least 3, a
    helper returning a few rows at most; the list gets the number of rows of each helper's answer."""
    started: list[int] = []
    monkeypatch.setattr(jsonscan, "PARALLEL_ROWS", 2)
    monkeypatch.setattr(jsonscan, "BUFFER_BYTES", 300)  # a few rows: each counts its payload and 100 bytes
    monkeypatch.setattr(jsonscan, "FETCH_ROWS", 2)
    monkeypatch.setattr(jsonscan, "_cpus", lambda: 3)
    monkeypatch.setattr(jsonscan, "_worth_parts", lambda sow: not sow.connection.in_transaction)
    original = jsonscan._Helper.result

    def result(self: jsonscan._Helper) -> tuple[list[jsonscan.Row], int | None, bool]:
        found = original(self)
        started.append(len(found[0]))
        return found

    monkeypatch.setattr(jsonscan._Helper, "result", result)
    return started


def test_parts_give_the_same_rows_in_order(tmp_path: Path, parts: list[int]) -> None:
    payloads = [orjson.dumps({"id": number, "c": number % 7, "d": {"e": str(number % 3)}}) for number in range(60)]
    path = _file(tmp_path, payloads)
    _check(path, payloads, ["/c = 1", "/c > 2", "/c < 5 AND /d/e = '1'", "/c >= 0", "/d/e = 'x'"])
    assert len(parts) == 5 * 2 and sum(parts) > 0  # three parts: the caller's and two helpers that read
    with SowFile.open(path) as sow:  # a query that stops early stops the helpers and ends the transaction
        assert len(query_file(sow, Query(filter="/c >= 0", top_n=2)).rows) == 2
        assert not sow.connection.in_transaction
        assert len(query_file(sow, Query(filter="/c = 1")).rows) == 9


def test_malformed_json_in_any_part_finishes_in_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       parts: list[int]) -> None:
    payloads = [orjson.dumps({"id": number, "c": number % 3}) for number in range(40)]
    path = _file(tmp_path, payloads)
    with SowFile.open(path) as sow:
        for bad in (5, 20, 30):  # the caller's part, then each helper's
            failing = JsonPrefilter(f"CASE WHEN id > {bad} THEN json_extract('{{', '$') ELSE 1 END", [])
            monkeypatch.setattr(filequery, "json_prefilter", lambda expr, failing=failing, **_: failing)
            assert [row.doc["id"] for row in query_file(sow, Query(filter="/c = 1")).rows] == list(range(1, 40, 3))
    assert len(parts) == 3 * 2


def test_a_helper_that_cannot_run_leaves_its_part_to_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               parts: list[int]) -> None:
    payloads = [orjson.dumps({"id": number, "c": number % 3}) for number in range(40)]
    path = _file(tmp_path, payloads)
    for script in (str(tmp_path / "missing.py"), "-c", __file__):  # no script, no answer, a crash
        monkeypatch.setattr(jsonscan, "_SCRIPT", script)
        with SowFile.open(path) as sow:
            assert [row.doc["id"] for row in query_file(sow, Query(filter="/c = 1")).rows] == list(range(1, 40, 3))
    assert len(parts) == 3 * 2 and sum(parts) == 0


def test_a_helper_reads_only_the_file_the_caller_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        parts: list[int]) -> None:
    payloads = [orjson.dumps({"id": number, "c": number % 3}) for number in range(40)]
    path = _file(tmp_path, payloads)
    original = jsonscan._Helper.__init__
    monkeypatch.setattr(jsonscan._Helper, "__init__", lambda self, sow, crc, *rest: original(self, sow, crc + "x", *rest))
    with SowFile.open(path) as sow:  # another meta_crc: as if another file had been renamed over the path
        assert [row.doc["id"] for row in query_file(sow, Query(filter="/c = 1")).rows] == list(range(1, 40, 3))
    assert len(parts) == 2 and sum(parts) == 0
