"""Every test vector of spec/expressions.md §12, from tests/filter/vectors.toml (issue 3 item 7).

Each vector is parsed by ``ampsctl.filter.parser.parse`` and evaluated by the reference
evaluator against its sample record. JSON vectors (record M) always run. FIX (F) and XML (X)
vectors need a record implementation from the message-types issue: they run as soon as
``ampsctl.messages.record_from_bytes(message_type, raw)`` exists, and are skipped until then.
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path
from typing import Any

import orjson
import pytest

from ampsctl.filter.aggregate import aggregate, parse_projection
from ampsctl.filter.evaluate import evaluate, matches
from ampsctl.messages.json_record import JsonRecord

DATA = tomllib.loads((Path(__file__).parent / "vectors.toml").read_text(encoding="utf-8"))
VECTORS: list[dict[str, Any]] = DATA["vector"]
RECORDS: dict[str, str] = DATA["records"]
MESSAGE_TYPES = {"F": "fix", "X": "xml"}

SPEC_IDS = [str(n) for n in range(1, 91)] + [f"F{n}" for n in range(1, 5)] + [f"X{n}" for n in range(1, 5)]


def _parse(text: str):
    try:
        parser = importlib.import_module("ampsctl.filter.parser")
    except ModuleNotFoundError as exc:
        if exc.name != "ampsctl.filter.parser":
            raise
        pytest.skip("the parser (ampsctl/filter/parser.py) is not written yet; test_evaluate.py covers ASTs")
    return parser.parse(text)


def _record(kind: str):
    raw = RECORDS[kind]
    if kind == "M":
        return JsonRecord.from_bytes(raw)
    try:
        messages = importlib.import_module("ampsctl.messages")
    except ModuleNotFoundError as exc:
        if exc.name != "ampsctl.messages":
            raise
        messages = None
    factory = getattr(messages, "record_from_bytes", None)
    if factory is None:
        pytest.skip("FIX/XML records arrive with the message-types issue")
    return factory(MESSAGE_TYPES[kind], raw.encode("utf-8"))


def test_every_spec_vector_is_in_the_data_file():
    assert [vector["id"] for vector in VECTORS] == SPEC_IDS
    for vector in VECTORS:
        assert set(vector) == {"id", "filter", "record", "expect", "basis"}, vector["id"]
        assert vector["record"] in RECORDS
        assert vector["record"] == (vector["id"][0] if vector["id"][0] in "FX" else "M")


def test_data_file_matches_the_spec_text():
    """When the shared spec is checked out next to the repository, no vector may drift from it."""
    spec = Path(__file__).resolve().parents[3] / "shared" / "spec" / "expressions.md"
    if not spec.is_file():
        pytest.skip("spec/expressions.md is not next to this checkout")
    text = spec.read_text(encoding="utf-8")
    for vector in VECTORS:
        outcome = "match" if vector["expect"] else "no match"
        row = f"| {vector['id']} | `{vector['filter']}` | {outcome} |"
        assert row in text, row


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_vector(vector):
    record = _record(vector["record"])
    expr = _parse(vector["filter"])
    trace: list = []
    value = evaluate(expr, record, trace=trace)
    assert matches(expr, record) is vector["expect"], f"{vector['filter']!r} gave {value!r} ({vector['basis']})"
    assert trace and trace[-1] == (expr, value)


@pytest.mark.parametrize("example", DATA["aggregation"], ids=[a["id"] for a in DATA["aggregation"]])
def test_aggregation_example(example):
    """Aggregates run over a group of messages (a view projection), not as a filter."""
    projections = [parse_projection(text) for text in example["projection"]]
    grouping = [_parse(text) for text in example["grouping"]]
    records = [JsonRecord.from_bytes(raw.encode()) for raw in example["records"]]
    assert aggregate(projections, grouping, records) == [orjson.loads(example["expect"])]
