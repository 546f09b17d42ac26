"""SOW queries: order_by, top_n, select, SowKeys, and the index invariant.

The index invariant (ampsctl/sow/indexing.py, sqlfilter.py): a hash-index lookup or a memo
pre-filter only narrows; the answer is always what ``filter.evaluate.matches`` gives on every
record. The Hypothesis property checks it over awkward values (numeric text, floats equal to
integers, booleans, NULLs, arrays, objects, NaN, huge integers) and mixed filters, for the
in-memory topic and for a SOW file.
"""

from __future__ import annotations

import math
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ampsctl.errors import InputError
from ampsctl.filter.evaluate import matches
from ampsctl.filter.parser import parse
from ampsctl.filter.printer import literal_text
from ampsctl.journal.record import Command
from ampsctl.messages.json_record import JsonRecord
from ampsctl.sow.checkpoint import write_group
from ampsctl.sow.filequery import query_file
from ampsctl.sow.query import Query, execute, memory_candidates, parse_order_by, plan
from ampsctl.sow.sowfile import SowFile
from ampsctl.sow.store import SowStore
from sow_helpers import record, spec

ROWS = [
    {"id": 1, "name": "b", "qty": 10, "px": 2.5, "tag": "10"},
    {"id": 2, "name": "a", "qty": 9, "px": None, "tag": "9"},
    {"id": 3, "name": "c", "qty": "11", "tag": "x"},
    {"id": 4, "name": "a", "qty": 10, "px": 1, "tag": None},
    {"id": 5, "name": "d", "qty": True},
]


def store_of(rows: list[dict], **changes) -> SowStore:
    store = SowStore([spec(**changes)])
    for number, row in enumerate(rows, 1):
        store.apply(record(number, Command.PUBLISH, row))
    return store


def run(store: SowStore, query: Query) -> list:
    group = store.groups[0]
    chosen = plan(query, group.indexer)
    rows = execute(chosen, group.payloads, memory_candidates(chosen, group.topics.values()),
                   expiration_enabled=group.spec.expiration_enabled)
    return [row.doc for row in rows]


def ids(store: SowStore, **query) -> list[int]:
    return [doc["id"] for doc in run(store, Query(**query))]


def test_filter_and_unordered_results_in_store_order() -> None:
    store = store_of(ROWS)
    assert ids(store, filter="/qty >= 10") == [1, 3, 4]
    assert ids(store) == [1, 2, 3, 4, 5]


def test_order_by_mixed_types_desc_text_and_nulls_last() -> None:
    store = store_of(ROWS)
    assert ids(store, order_by="/qty") == [5, 2, 1, 4, 3]  # true=1, 9, 10, 10, "11" (numeric text sorts as a number)
    assert ids(store, order_by="/qty DESC, /name") == [3, 4, 1, 2, 5]  # ties on 10 broken by /name
    assert ids(store, order_by="/px DESC") == [1, 4, 2, 3, 5]  # NULLs (null, absent) last in both directions
    assert ids(store, order_by="/px") == [4, 1, 2, 3, 5]
    assert ids(store, order_by="/tag") == [2, 1, 3, 4, 5]  # numbers (9, 10) before text, then NULLs
    assert ids(store, order_by="/tag TEXT") == [1, 2, 3, 4, 5]  # "10" < "9" < "x" as text
    assert ids(store, order_by="/name ASC, /id DESC") == [4, 2, 1, 3, 5]


def test_top_n_after_ordering_and_select() -> None:
    store = store_of(ROWS)
    assert ids(store, order_by="/id DESC", top_n=2) == [5, 4]
    assert ids(store, filter="/qty >= 10", top_n=2) == [1, 3]
    assert ids(store, top_n=0) == []
    assert run(store, Query(filter="/id = 1", select=("/id", "/px"))) == [{"id": 1, "px": 2.5}]


def test_sow_keys_narrow_the_query() -> None:
    from ampsctl.messages.keys import generate_key

    store = store_of(ROWS)
    keys = (generate_key("orders", (4,)), generate_key("orders", (2,)), "missing")
    assert sorted(ids(store, keys=keys)) == [2, 4]
    assert ids(store, keys=keys, filter="/px = 1") == [4]


@pytest.mark.parametrize("text", ["", "/x SIDEWAYS", "/x ASC DESC", "/x TEXT TEXT", "'a'", "/x,,/y"])
def test_bad_order_by_is_refused(text: str) -> None:
    with pytest.raises(InputError):
        parse_order_by(text)


def test_order_by_accepts_odd_field_names() -> None:
    (key,) = parse_order_by("[/odd name] DESC")
    assert key.descending and key.field.steps[0].name == "odd name"


def test_query_with_now_leaves_out_due_records() -> None:
    store = SowStore([spec(expiration=10)])
    store.apply(record(1, Command.PUBLISH, {"id": 1}, timestamp=0))
    store.apply(record(2, Command.PUBLISH, {"id": 2}, timestamp=5_000_000))
    assert ids(store, now=12_000_000) == [2]
    assert ids(store) == [1, 2]


def test_plan_uses_the_widest_matching_hash_index() -> None:
    store = store_of(ROWS, hash_indexes=(("/name",), ("/name", "/qty")))
    indexer = store.groups[0].indexer
    assert plan(Query(filter="/name = 'a' AND /qty = 10"), indexer).lookup[0] == 2  # type: ignore[index]
    assert plan(Query(filter="/name IN ('a', 'b')"), indexer).lookup[0] == 1  # type: ignore[index]
    assert plan(Query(filter="/id = 3"), indexer).lookup[0] == 0  # type: ignore[index]  # the Key fields
    assert plan(Query(filter="/name = 'a' OR /qty = 10"), indexer).lookup is None
    assert plan(Query(filter="/name LIKE 'a'"), indexer).lookup is None
    assert ids(store, filter="/name = 'a' AND /qty = 10") == [4]


# ---------------------------------------------------------------- the index invariant

FIELDS = ("a", "b")
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 12), st.sampled_from([2**60, -(2**53) - 1, 9007199254740993]),
    st.floats(allow_nan=True, allow_infinity=True, width=32), st.sampled_from([1.0, 10.0, -0.0, 2.5]),
    st.sampled_from(["", "1", "01", "10", "1.0", "2.5", "a", "b", "ab", "1e1", "é", "-3"]),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.fixed_dictionaries({"z": scalars}))
documents = st.fixed_dictionaries({}, optional={"a": values, "b": values})
literals = st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.sampled_from([2.5, 10.0, 1e300, 2**60]),
                     st.sampled_from(["", "1", "01", "10", "a", "ab", "1.0", "-3", "é"]))


def _literal(value: object) -> str:
    return "NULL" if value is None else literal_text(value)


@st.composite
def predicates(draw: st.DrawFn, depth: int = 0) -> str:
    field = "/" + draw(st.sampled_from(FIELDS))
    kind = draw(st.sampled_from(["cmp", "cmp", "in", "between", "null", "and", "or", "not", "like"] if depth < 2 else ["cmp", "in", "null"]))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        left, right = field, _literal(draw(literals))
        return f"{right} {op} {left}" if draw(st.booleans()) else f"{left} {op} {right}"
    if kind == "in":
        options = ", ".join(_literal(v) for v in draw(st.lists(literals, min_size=1, max_size=3)))
        return f"{field} {'NOT ' if draw(st.booleans()) else ''}IN ({options})"
    if kind == "between":
        return f"{field} BETWEEN {_literal(draw(literals))} AND {_literal(draw(literals))}"
    if kind == "null":
        return f"{field} IS {'NOT ' if draw(st.booleans()) else ''}NULL"
    if kind == "like":
        return f"{field} LIKE '^a'"
    if kind == "not":
        return f"NOT ({draw(predicates(depth + 1))})"
    word = "AND" if kind == "and" else "OR"
    return f"({draw(predicates(depth + 1))}) {word} ({draw(predicates(depth + 1))})"


def _expected(docs: list[dict], text: str) -> list[int]:
    expr = parse(text)
    return [doc["id"] for doc in docs if matches(expr, JsonRecord(doc))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.lists(documents, max_size=8), text=predicates())
def test_indexes_never_change_the_answer(tmp_path: Path, rows: list[dict], text: str) -> None:
    docs = [{"id": number, **row} for number, row in enumerate(rows)]
    store = SowStore([spec(hash_indexes=(("/a",), ("/b",), ("/a", "/b")), indexes=("/a", "/b"))])
    for number, doc in enumerate(docs, 1):
        store.apply(record(number, Command.PUBLISH, orjson.dumps(doc, option=orjson.OPT_SERIALIZE_NUMPY)))
    expected = _expected([orjson.loads(orjson.dumps(doc)) for doc in docs], text)
    assert sorted(doc["id"] for doc in run(store, Query(filter=text))) == sorted(expected)
    path = tmp_path / f"q{abs(hash(text)) % 10**8}.sow"
    write_group(path, store.groups[0], sequence=len(docs), sync=False)
    with SowFile.open(path) as sow:
        found = query_file(sow, Query(filter=text))
    assert sorted(row.doc["id"] for row in found.rows) == sorted(expected), found.strategy
    path.unlink()


STORED = [None, True, False, 0, 1, 5, 10, -3, 2**60, 9007199254740993, 1.0, 2.5, -0.0, 1e300, math.inf, math.nan,
          "", "1", "01", "1.0", "10", "5", "a", "ab", "x", "é", "1e1", "-3", [], [1, "a"], ["5"], {"z": 1}]
LITERALS = [None, True, False, 0, 1, 5, 10, -3, 2.5, 10.0, 1e300, 2**60, "", "1", "01", "5", "10", "a", "ab", "é", "-3"]


def test_every_comparison_branch_agrees_with_the_filter(tmp_path: Path) -> None:
    """Every stored value type against every literal type, every operator, through both indexes."""
    docs = [{"id": number, "a": value, "b": value} for number, value in enumerate(STORED)]
    store = SowStore([spec(hash_indexes=(("/a",),), indexes=("/b",))])
    for number, doc in enumerate(docs, 1):
        store.apply(record(number, Command.PUBLISH, orjson.dumps(doc)))
    write_group(tmp_path / "all.sow", store.groups[0], sequence=len(docs), sync=False)
    parsed = [orjson.loads(orjson.dumps(doc)) for doc in docs]  # NaN and inf travel as JSON null
    texts = [f"/{field} {op} {_literal(value)}" for field in "ab" for op in ("=", "!=", "<", "<=", ">", ">=") for value in LITERALS]
    texts += [f"{_literal(value)} > /b" for value in LITERALS] + ["/b IS NULL", "/b IS NOT NULL", "/a IN (1, 'a', NULL, 2.5)",
              "/b BETWEEN 1 AND 'b'", "/b BETWEEN -1 AND 5", "/b IN ('01', 10)", "/b > 1 AND /b < 'z'", "/b = 'a' OR /b = 5"]
    with SowFile.open(tmp_path / "all.sow") as sow:
        for text in texts:
            found = query_file(sow, Query(filter=text))
            assert sorted(row.doc["id"] for row in found.rows) == _expected(parsed, text), (text, found.strategy)
            assert sorted(doc["id"] for doc in run(store, Query(filter=text))) == _expected(parsed, text), text


def test_file_query_strategies(tmp_path: Path) -> None:
    store = store_of(ROWS, hash_indexes=(("/name",),), indexes=("/qty",))
    write_group(tmp_path / "o.sow", store.groups[0], sequence=5, sync=False)
    with SowFile.open(tmp_path / "o.sow") as sow:
        cases = {
            "/name = 'a'": ("hash index /name", [2, 4]),
            "/id = 3": ("hash index /id", [3]),
            "/qty > 9.5": ("memo pre-filter", [1, 3, 4]),
            "/px > 1": ("JSON pre-filter", [1]),  # was reported as "scan"
            "/tag LIKE '^1'": ("scan", [1]),  # nothing SQLite can test: a plain scan
        }
        for text, (strategy, expected) in cases.items():
            result = query_file(sow, Query(filter=text))
            assert (result.strategy, [row.doc["id"] for row in result.rows]) == (strategy, expected), text
        assert query_file(sow, Query(keys=("nope",))).strategy == "sow keys"


def test_nan_and_huge_integers_are_complex_memo_values() -> None:
    from ampsctl.sow.indexing import memo_value, value_token

    assert memo_value(math.nan)[2] and memo_value(2**60)[2] and memo_value([1])[2] and memo_value({"z": 1})[2]
    assert memo_value("007") == (7, "007", False)
    assert value_token(True) == value_token(1) == value_token("1") == value_token(1.0) == value_token("01") == b"n1"
    assert value_token("") is None and value_token([]) is None and value_token({"z": 1}) is None


def test_topic_regex_limits_pattern_topics() -> None:
    store = SowStore([spec("prices", keys=("/sym",), pattern=True, regex=r"^prices\.")])
    for number, (topic, sym) in enumerate((("prices.us", "IBM"), ("prices.eu", "SAP"), ("prices.us", "MSFT")), 1):
        store.apply(record(number, Command.PUBLISH, {"sym": sym}, topic=topic))
    assert [doc["sym"] for doc in run(store, Query(topic="us$"))] == ["IBM", "MSFT"]
    with pytest.raises(InputError, match="invalid topic regex"):
        run(store, Query(topic="("))
