"""``ampsctl sow query --filter``: filters whose SQL pre-filter SQLite would refuse.

The memo-index pre-filter (``sqlfilter.py``) and the JSON pre-filter (``jsonfilter.py``) turn
a filter into SQL. Long IN lists and OR chains made an expression tree deeper than SQLite's
1000 levels, and deeply nested filters overflowed its parser stack: the query failed with
"SOW file is damaged" (exit 3) and a hint to rebuild a healthy file. Each case here must give
exactly the records the filter evaluator selects, on a topic with memo indexes and on a plain
JSON topic. The SOW files are built the way a user builds them (``journal import`` then
``journal compact``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inprocess import run_inprocess as ampsctl

from ampsctl.filter.evaluate import matches
from ampsctl.filter.parser import parse
from ampsctl.messages.json_record import JsonRecord

CONFIG = """<AMPSConfig><Name>limits</Name><SOW>
  <Topic><Name>memo</Name><MessageType>json</MessageType><FileName>sow/%n.sow</FileName><Key>/id</Key>
    <Index>/v</Index><Index>/w</Index></Topic>
  <Topic><Name>plain</Name><MessageType>json</MessageType><FileName>sow/%n.sow</FileName><Key>/id</Key></Topic>
</SOW></AMPSConfig>
"""
VALUES = [0, 1, 7, 47, "47", "abc", "", None, 2.5, -3, [5, 6], {"x": 1}, True, "1e3", 1500, 2999]
DOCS = [{"id": i, "v": v, "w": VALUES[(i * 7) % len(VALUES)]} for i, v in enumerate(VALUES)]


@pytest.fixture(scope="module")
def sow_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("prefilter-limits")
    (base / "config.xml").write_text(CONFIG)
    lines = [json.dumps({"command": "publish", "topic": topic, "data": doc}) for doc in DOCS for topic in ("memo", "plain")]
    (base / "in.jsonl").write_text("\n".join(lines) + "\n")
    assert ampsctl("journal", "import", str(base / "in.jsonl"), "--out", str(base / "journal"))[0] == 0
    assert ampsctl("journal", "compact", str(base / "journal"), "--config", str(base / "config.xml"),
                   "--out", str(base / "out"))[0] == 0
    return base / "out"


def nested(depth: int) -> str:
    text = "/v = 1"
    for level in range(depth):
        text = f"(/v > {level - 5} {'OR' if level % 2 else 'AND'} /w != 'zz' {'AND' if level % 2 else 'OR'} {text})"
    return text


FILTERS = {
    "in-1100": "/v IN (" + ", ".join(str(i) for i in range(1100)) + ")",
    "in-5000-text": "/v IN (" + ", ".join(f"'{i}'" for i in range(5000)) + ", 'abc')",
    "or-chain-2000": " OR ".join(f"/v = {i}" for i in range(2000)),
    "and-chain-1500": " AND ".join(f"/v != {i + 3000}" for i in range(1500)),
    "between-or-1200": " OR ".join(f"/v BETWEEN {i} AND {i}.5" for i in range(0, 2400, 2)),
    "nested-30": nested(30),
    "nested-60": nested(60),
}


@pytest.mark.parametrize("topic", ["memo", "plain"])
@pytest.mark.parametrize("name", list(FILTERS))
def test_the_query_answers_what_the_evaluator_selects(sow_files: Path, topic: str, name: str) -> None:
    text = FILTERS[name]
    code, out, err = ampsctl("sow", "query", str(sow_files / f"{topic}.json.sow"), "--filter", text, "--format", "jsonl")
    assert code == 0, err  # was 3: "SOW file is damaged: Expression tree is too large" / "parser stack overflow"
    got = sorted(json.loads(line)["message"]["id"] for line in out.splitlines())
    tree = parse(text)
    assert got == [doc["id"] for doc in DOCS if matches(tree, JsonRecord(doc))]
