"""Compaction's fast path against the reference replay, through ``compact`` (``fast=False``: reference).

Generated journals (seeded) of what the fast path replays itself: publish and delta_publish
over keyed JSON topics with hash and memo indexes, a Pattern topic, publisher SowKeys, an
NVFIX topic, per-message and default expirations (expired on write and by the final sweep),
timestamps that step back, records the SOW refuses, a topic without a SOW. Compared: every
row of every file as stored (index columns and first-insert order included), the meta table,
the counts, the refused records, the progress calls. Then the journals it hands back to the
reference (sow_delete, EXPIRE, History, colliding keys) give the reference's result too.
"""

from __future__ import annotations

import random
import re
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command, sow_delete_payload
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from ampsctl.sow import fastcompact
from ampsctl.sow.compact import compact
from ampsctl.sow.errors import ReplayError
from ampsctl.sow.sowfile import SowFile
from sow_helpers import SECOND, T0, spec

ORDERS = spec("orders", expiration=0, hash_indexes=(("/status",),), indexes=("/qty",))
PRICES = spec("prices", keys=("/sym",), pattern=True, regex=r"^prices\.", expiration=30)
ACCOUNTS = spec("accounts", keys=(), expiration=None)
QUOTES = spec("quotes", "nvfix", keys=("/Symbol",), expiration=10)
SPECS = [ORDERS, PRICES, ACCOUNTS, QUOTES]
STEP = 10_000


def _entry(rng: random.Random) -> tuple[Command, str, str, bytes, dict[str, Any]]:
    command = Command.DELTA_PUBLISH if rng.random() < 0.3 else Command.PUBLISH
    expiration = rng.choice((None, None, 0, 1, 5))
    family, odd = rng.random(), rng.random()
    if family < 0.4:
        key = rng.randrange(300)
        doc: dict[str, Any] = {"id": key, "qty": rng.choice((rng.randrange(1000), "7", 2.5, [1], None)),
                               "status": rng.choice(("open", "filled", 3))}
        if command is Command.DELTA_PUBLISH:
            doc = {"id": key, rng.choice(("qty", "status", "note")): rng.randrange(9)}
        if odd < 0.004:
            return command, "orders", "json", b'{"id": 1, ', {}  # not JSON
        if odd < 0.008:
            return command, "orders", "json", b"[1, 2]", {}  # not an object
        if odd < 0.012:
            return command, "orders", "json", orjson.dumps({"qty": 1}), {}  # no key field
        if odd < 0.016:
            return command, "orders", "json", orjson.dumps({"id": [1, 2]}), {}  # an array key
        return command, "orders", "json", orjson.dumps(doc), {"expiration": expiration, "sow_key": "ignored"}
    if family < 0.65:
        topic = rng.choice(("prices.us", "prices.eu"))
        doc = {"sym": rng.choice((f"S{rng.randrange(80)}", rng.randrange(5), "5")), "px": rng.randrange(100)}
        return command, topic, "json", orjson.dumps(doc), {"expiration": expiration}
    if family < 0.85:
        key = rng.choice((f"acct{rng.randrange(100)}", f"acct{rng.randrange(100)}"))
        fields: dict[str, Any] = {"sow_key": key, "expiration": expiration}
        if odd < 0.01:
            fields = {}  # no SowKey on a topic without Key fields
        elif odd < 0.02:
            fields = {"sow_key": "not base64!"}
        return command, "accounts", "json", orjson.dumps({"balance": rng.randrange(10_000)}), fields
    if family < 0.95:
        symbol = f"Q{rng.randrange(40)}"
        payload = f"Symbol={symbol};Px={rng.randrange(100)};".encode()
        if odd < 0.02:
            payload = b"Px=1;"  # no key field
        return command, "quotes", "nvfix", payload, {"expiration": expiration}
    return Command.PUBLISH, "audit", "json", b"{}", {}


def _write(directory: Path, entries: list[tuple[Command, str, str, bytes, dict[str, Any]]], seed: int = 1) -> Path:
    rng = random.Random(seed)
    timestamp = T0
    with JournalWriter.open(directory, segment_bytes=64 * 1024, fsync=FsyncPolicy.NEVER) as writer:
        for command, topic, message_type, payload, fields in entries:
            timestamp += STEP * 50 if rng.random() > 0.03 else -rng.randrange(1, 200) * STEP
            writer.append(timestamp, command, topic, message_type, payload, **fields)
    return directory


def _generated(directory: Path, count: int, seed: int) -> Path:
    rng = random.Random(seed)
    return _write(directory, [_entry(rng) for _ in range(count)], seed)


def _run(journal: Path, out: Path, *, fast: bool, keep_going: bool = True, **options: Any) -> tuple[Any, ...]:
    refused: list[ReplayError] = []
    calls: list[int] = []
    result = compact(journal, SPECS, out, fast=fast, on_error=refused.append if keep_going else None,
                     progress=calls.append, **options)
    files = []
    for compacted in result.files:
        with SowFile.open(compacted.path) as sow:  # its schema is exactly a SOW file's
            assert list(sow.select("PRAGMA integrity_check")) == [("ok",)] and len(list(sow.records())) == compacted.records
        connection = sqlite3.connect(compacted.path)
        try:
            files.append((Path(compacted.path).name, compacted.records, compacted.topics,
                          connection.execute("SELECT * FROM records ORDER BY id").fetchall(),
                          connection.execute("SELECT * FROM meta ORDER BY name").fetchall(),
                          connection.execute("SELECT * FROM history").fetchall()))
        finally:
            connection.close()
    counts = (result.scanned, result.applied, result.last_sequence, result.now, result.expired, result.skipped)
    return counts, [(e.sequence, e.message, e.hint, e.code) for e in refused], calls, files


def _same(journal: Path, tmp_path: Path, name: str, **options: Any) -> tuple[Any, ...]:
    fast = _run(journal, tmp_path / name / "fast", fast=True, **options)
    reference = _run(journal, tmp_path / name / "reference", fast=False, **options)
    assert fast == reference, name
    return fast


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _generated(tmp_path_factory.mktemp("fast") / "journal", 3000, seed=8)


def test_the_fast_path_replays_publishes_and_deltas(journal: Path) -> None:
    state = fastcompact.scan(JournalReader(journal), SPECS, to_sequence=None, to_timestamp=None, keep_going=True,
                             progress=None)
    assert state.skipped > 0 and state.scanned == 3000  # it ran to the end, refusals included


def test_same_result_as_the_reference(journal: Path, tmp_path: Path) -> None:
    counts, refused, calls, files = _same(journal, tmp_path, "whole")
    assert counts[4] > 0 and counts[5] == len(refused) > 0 and calls == [3000]
    assert all(rows for _, _, _, rows, _, _ in files) and files[1][2] == 2  # both prices topics


def test_same_result_at_as_of_points_and_times(journal: Path, tmp_path: Path) -> None:
    reader = JournalReader(journal)
    middle = reader.record_at(1500)
    assert middle is not None
    from ampsctl.journal.bookmarks import format_timestamp

    _same(journal, tmp_path, "bookmark", as_of=middle.bookmark)
    _same(journal, tmp_path, "timestamp", as_of=format_timestamp(middle.timestamp))
    _same(journal, tmp_path, "epoch", as_of="0")
    _same(journal, tmp_path, "now", now=T0 + 10**6 * SECOND)
    _same(journal, tmp_path, "early-now", as_of=format_timestamp(middle.timestamp), now=T0)


def test_the_first_refused_record_stops_both_alike(journal: Path, tmp_path: Path) -> None:
    errors = []
    for fast in (True, False):
        with pytest.raises(ReplayError) as info:
            compact(journal, SPECS, tmp_path / str(fast), fast=fast)
        errors.append((info.value.sequence, info.value.message, info.value.hint))
        assert not list((tmp_path / str(fast)).glob("*.sow"))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_other_seeds(tmp_path: Path, seed: int) -> None:
    _same(_generated(tmp_path / "journal", 800, seed), tmp_path, f"seed-{seed}")


def test_progress_every_65536_records(tmp_path: Path) -> None:
    entries = [(Command.PUBLISH, "accounts", "json", b'{"n": 1}', {"sow_key": f"k{i % 50}"}) for i in range(66_000)]
    counts, _, calls, files = _same(_write(tmp_path / "journal", entries), tmp_path, "progress")
    assert calls == [65_536, 66_000] and files[2][1] == 50


@pytest.mark.parametrize("extra", [
    (Command.SOW_DELETE, "orders", "json", sow_delete_payload(keys=["x"]), {}),
    (Command.SOW_DELETE, "prices.us", "json", sow_delete_payload(filter="/px > 50"), {}),
    (Command.EXPIRE, "accounts", "json", b"", {"sow_key": "acct1"}),
])
def test_what_it_hands_back_to_the_reference(tmp_path: Path, extra: tuple[Any, ...]) -> None:
    rng = random.Random(5)
    entries = [_entry(rng) for _ in range(400)]
    journal = _write(tmp_path / "journal", entries[:200] + [extra] + entries[200:])
    with pytest.raises(fastcompact.Fallback):
        fastcompact.scan(JournalReader(journal), SPECS, to_sequence=None, to_timestamp=None, keep_going=True, progress=None)
    _same(journal, tmp_path, "mixed")
    _same(journal, tmp_path, "before", as_of=JournalReader(journal).record_at(200).bookmark)  # type: ignore[union-attr]


def test_an_expiry_past_the_last_storable_time_is_refused_alike(tmp_path: Path) -> None:
    rng = random.Random(6)
    entries = [_entry(rng) for _ in range(300)]
    huge = (Command.PUBLISH, "orders", "json", b'{"id": 1}', {"expiration": 10**13})
    journal = _write(tmp_path / "journal", entries[:150] + [huge] + entries[150:])
    _, refused, _, _ = _same(journal, tmp_path, "huge")
    assert any("ends after the last time a SOW can store" in message for _, message, _, _ in refused)


def test_history_topics_go_to_the_reference(tmp_path: Path) -> None:
    journal = _write(tmp_path / "journal", [(Command.PUBLISH, "orders", "json", b'{"id": 1}', {})])
    history = [spec("orders", history_window=60, history_granularity=1)]
    with pytest.raises(fastcompact.Fallback):
        fastcompact.scan(JournalReader(journal), history, to_sequence=None, to_timestamp=None, keep_going=True, progress=None)
    fast, reference = (compact(journal, history, tmp_path / str(flag), fast=flag) for flag in (True, False))
    assert (fast.files[0].records, fast.last_sequence) == (reference.files[0].records, reference.last_sequence) == (1, 1)


def test_colliding_keys_go_to_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ampsctl.sow.payloads as payloads

    real = payloads.generate_key
    monkeypatch.setattr(payloads, "generate_key", lambda domain, values: real(domain, [values[0] % 7]))
    entries = [(Command.PUBLISH, "orders", "json", orjson.dumps({"id": i, "status": "open"}), {}) for i in range(20)]
    journal = _write(tmp_path / "journal", entries)
    state = fastcompact.scan(JournalReader(journal), [ORDERS], to_sequence=None, to_timestamp=None, keep_going=True,
                             progress=None)
    with pytest.raises(fastcompact.Fallback, match="same SOW key"):
        fastcompact.keyed(state)
    _, _, _, files = _same(journal, tmp_path, "collide")
    assert files[0][1] == 7  # the reference's answer: ids 7 apart are one record


def test_a_file_that_cannot_be_written_fails_alike(journal: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    from ampsctl.errors import EnvironmentProblem, UsageError
    from ampsctl.sow import checkpoint

    real = os.replace

    def full(source: object, target: object) -> None:
        if "orders.json" in os.fspath(target):  # type: ignore[arg-type]
            raise OSError(errno.ENOSPC, "No space left on device")
        real(source, target)  # type: ignore[arg-type]

    failures = []
    for fast in (True, False):
        out = tmp_path / str(fast)
        out.mkdir()
        with monkeypatch.context() as patch:
            patch.setattr(checkpoint.os, "replace", full)
            with pytest.raises(EnvironmentProblem) as info:
                compact(journal, SPECS, out, fast=fast, overwrite=True, on_error=lambda error: None)
        failures.append((str(info.value).replace(str(out), "OUT"), info.value.hint))
        assert list(out.iterdir()) == []  # no scratch file left, and no other topic's file either
        (out / "orders.json.sow").mkdir()  # a directory where the file goes: refused before the replay
        with pytest.raises(UsageError, match="is a directory"):
            compact(journal, SPECS, out, fast=fast, overwrite=True, on_error=lambda error: None)
    assert failures[0] == failures[1]


# ------------------------------------------------------------------ number text (docs/messages.md)

_NUMBER = re.compile(rb"(?<=[:\[,])(-?[0-9]+(?:\.[0-9]+)?)(?=[,}\]])")


def _number_texts(payload: bytes, rng: random.Random) -> bytes:
    """``payload`` with some numbers written as orjson would not write them (same values)."""

    def other(match: re.Match[bytes]) -> bytes:
        text = match.group(1)
        choice = rng.random()
        if choice < 0.5:
            return text
        if b"." in text:
            return text + b"0" if choice < 0.75 else text + b"E0"
        if choice < 0.6 and text == b"0":
            return b"-0"
        return text + b"E0" if choice < 0.8 else text + b"0000000000000000000"[: 23 - len(text)]

    return _NUMBER.sub(other, payload)


def test_merged_number_text_is_the_references(tmp_path: Path) -> None:
    rng = random.Random(11)
    entries = [_entry(rng) for _ in range(1500)]
    texts = [(command, topic, kind, _number_texts(payload, rng) if kind == "json" else payload, fields)
             for command, topic, kind, payload, fields in entries]
    journal = _write(tmp_path / "journal", texts)
    fastcompact.scan(JournalReader(journal), SPECS, to_sequence=None, to_timestamp=None, keep_going=True,
                     progress=None)  # no Fallback: the fast path replays it
    _, _, _, files = _same(journal, tmp_path, "texts")
    stored = [row[3] for _, _, _, rows, _, _ in files for row in rows]
    assert any(b"E0" in payload for payload in stored) and any(b"-0," in payload for payload in stored)


def test_a_merge_keeps_number_text_and_keys(tmp_path: Path) -> None:
    entries = [
        (Command.PUBLISH, "orders", "json", b'{"id":1E5,"qty":1.50,"status":-0}', {}),
        (Command.DELTA_PUBLISH, "orders", "json", b'{"id":1E5,"note":2.50}', {}),
        (Command.PUBLISH, "orders", "json", b'{"id":2,"qty":12345678901234567890123,"status":"open"}', {}),
        (Command.DELTA_PUBLISH, "orders", "json", b'{"id":2,"qty":0.000001}', {}),
        (Command.DELTA_PUBLISH, "orders", "json", b'{"id":3, "qty":1E2}', {}),  # stored as it is
        (Command.DELTA_PUBLISH, "orders", "json", b'{"id":3,"status":1.0}', {}),
        (Command.PUBLISH, "orders", "json", b'{"id": 4, "qty": 5}', {}),
        (Command.DELTA_PUBLISH, "orders", "json", b'{"id": 4, "status": "x"}', {}),  # plain: written as orjson does
        (Command.PUBLISH, "accounts", "json", b'{"balance":1E3}', {"sow_key": "acct1"}),
        (Command.DELTA_PUBLISH, "accounts", "json", b'{"x":1}', {"sow_key": "acct1"}),
        (Command.PUBLISH, "prices.us", "json", b'{"sym":"S1","px":1.50}', {}),
        (Command.DELTA_PUBLISH, "prices.us", "json", b'{"sym":"S1","v":-0}', {}),
    ]
    journal = _write(tmp_path / "journal", entries)
    _, _, _, files = _same(journal, tmp_path, "merge")
    rows = {name: [(row[2], row[3]) for row in file_rows] for name, _, _, file_rows, _, _ in files}
    assert rows["orders.json.sow"] == [
        ("6896865913081296022", b'{"id":1E5,"qty":1.50,"status":-0,"note":2.50}'),  # the key of {"id":1E5} as before
        (rows["orders.json.sow"][1][0], b'{"id":2,"qty":0.000001,"status":"open"}'),
        (rows["orders.json.sow"][2][0], b'{"id":3,"qty":1E2,"status":1.0}'),
        (rows["orders.json.sow"][3][0], b'{"id":4,"qty":5,"status":"x"}'),
    ]
    assert [payload for _, payload in rows["accounts.json.sow"]] == [b'{"balance":1E3,"x":1}']
    assert [payload for _, payload in rows["prices.json.sow"]] == [b'{"sym":"S1","px":1.50,"v":-0}']
