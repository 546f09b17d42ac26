"""docs/formats.md's worked examples and documented messages, checked on files the CLI writes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from docs_example_tools import ROOT, doc_block_after

EXAMPLE_RECORD = {"command": "publish", "topic": "orders", "message_type": "json", "data": {"id": 1},
                  "sow_key": "1", "client_name": "pub-1", "timestamp": "20260101T000000Z"}


def test_the_journal_record_example(ampsctl, tmp_path: Path) -> None:
    """"Example: sequence 1 at 2026-01-01T00:00:00Z, publish on orders, ..." byte for byte."""
    block = doc_block_after("docs/formats.md", "Example: sequence 1 at 2026-01-01T00:00:00Z")
    expected = bytes.fromhex(block)
    (tmp_path / "one.jsonl").write_text(json.dumps(EXAMPLE_RECORD) + "\n")
    assert ampsctl("journal", "import", "one.jsonl", "--out", "journal").code == 0
    segment = (tmp_path / "journal" / "00000001.journal").read_bytes()
    assert segment[:8] == b"\x89AJL\r\n\x1a\n" and len(segment) == 36 + len(expected) == 36 + 80
    assert segment[36:] == expected


def test_sow_file_identity_and_refusals(ampsctl, tmp_path: Path) -> None:
    """"Identity" and "Reading and damage": what a SOW file holds and what the readers refuse."""
    (tmp_path / "records.jsonl").write_text('{"topic":"orders","data":{"id":1,"qty":5}}\n')
    assert ampsctl("journal", "import", "records.jsonl", "--out", "journal").code == 0
    compact = ampsctl("journal", "compact", "journal", "--config", ROOT / "samples" / "amps.xml", "--out", "sow")
    assert compact.code == 0
    with sqlite3.connect(f"file:{tmp_path / 'sow' / 'orders.json.sow'}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA application_id").fetchone()[0] == 0x61534F57
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
        meta = dict(db.execute("SELECT name, value FROM meta"))
    assert (meta["format"], meta["format_version"], meta["key_scheme"], meta["last_sequence"]) == (
        "ampsctl-sow", "2", "2", "1")
    assert set(meta) == {"format", "format_version", "spec", "columns", "key_scheme", "last_sequence",
                         "last_timestamp", "history_horizon", "meta_crc"}

    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "truncated.sow").write_bytes((tmp_path / "sow" / "orders.json.sow").read_bytes()[:5000])
    for path, message in [("missing.sow", "no such SOW file"),
                          ("sow", "this is a directory, not a SOW file"),
                          ("notes.txt", "not a SOW file: it looks like a text file"),
                          ("truncated.sow", "SOW file is damaged: the file is truncated")]:
        result = ampsctl("sow", "query", path)
        assert result.code == 3, path
        assert f"{path}: {message}" in result.stderr, result.stderr
