#!/usr/bin/env python3
"""Benchmark the journal: group-commit appends and sequential scans (issue 6, Performance).

Run with `make bench-journal` or `.venv/bin/python bench/journal.py` (`--help` for options).

1. Generates RECORDS publishes in memory with a fixed seed: 8 topics, 20 publishers (client
   names), JSON payloads of 60-120 bytes (orjson), a SOW key each, timestamps increasing by
   0-50 µs. Not timed.
2. Times, the median of --repeat runs, each run interleaved so both sides see the same load:
   (a) `JournalWriter.append` of every record, FsyncPolicy.GROUP, `commit()` every
       --commit-every records and at the end (open and close included): the broker's path;
   (a2) the same with `JournalWriter.append_many` of --commit-every records at a time, then
       `commit()` (the path of `journal import`; the input JournalRecords are built untimed);
   (b) the peer: the same records written as JSON Lines with orjson (one object per record,
       the same fields), through a buffered file, with flush + fsync every --commit-every
       records and at the end: the same durability;
   (c) `JournalReader(dir).scan()`: every record decoded into a JournalRecord, checksums
       checked (opening the reader included);
   (d) `JournalReader(dir).scan_views()`: the same scan yielding lazy RecordViews, checksums
       checked, sequence and timestamp read, other fields decoded only on access;
   (e) the peer: the JSONL file read line by line and parsed with `orjson.loads`.
   Targets: (a) at least 500,000 records/s; a sequential scan at least 2,000,000 records/s.
3. Checks agreement: both scans and the peer read return RECORDS records, and the last
   record read back equals the last one written.

The cyclic garbage collector is paused during every timed step (both sides; ampsctl.gcpause).
Files go to bench/out/journal-bench/ and are removed afterwards unless --keep. Nothing here
asserts on time: exit code 0 when the figures were printed, 1 when a check disagreed.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ampsctl.gcpause import paused_gc  # noqa: E402
from ampsctl.journal import Command, FsyncPolicy, JournalReader, JournalRecord, JournalWriter  # noqa: E402
from report import table  # noqa: E402

RECORDS = 1_000_000
COMMIT_EVERY = 1000
SEED = 1729
TARGET_APPEND = 500_000
TARGET_SCAN = 2_000_000
TOPICS = ["orders", "trades", "quotes", "positions", "fills", "risk", "prices", "alerts"]
SYMBOLS = ["MSFT", "IBM", "ORCL", "AAPL", "GOOG", "AMZN", "NVDA", "TSLA"]

Row = tuple[int, int, str, str, bytes, str, str]  # timestamp, command, topic, type, payload, key, client


def generate(count: int, seed: int) -> list[Row]:
    rng = random.Random(seed)
    clients = [f"publisher-{n:02d}" for n in range(20)]
    timestamp = 1_795_339_800_000_000  # 2026-11-22T09:30:00Z
    rows = []
    for n in range(count):
        timestamp += rng.randrange(51)
        order = n % 50_000
        message = {"id": order, "symbol": rng.choice(SYMBOLS), "qty": rng.randrange(1, 10_000),
                   "price": round(rng.uniform(1, 500), 2), "side": rng.choice(("buy", "sell"))}
        if rng.random() < 0.5:
            message["note"] = "x" * rng.randrange(0, 40)
        rows.append((timestamp, Command.PUBLISH, TOPICS[n % len(TOPICS)], "json", orjson.dumps(message), str(order),
                     clients[n % len(clients)]))
    return rows


def append_journal(rows: list[Row], directory: Path, every: int) -> None:
    with JournalWriter.open(directory, fsync=FsyncPolicy.GROUP) as writer:
        append, commit = writer.append, writer.commit
        pending = every
        for timestamp, command, topic, kind, payload, key, client in rows:
            append(timestamp, command, topic, kind, payload, sow_key=key, client_name=client)
            pending -= 1
            if not pending:
                commit()
                pending = every
        commit()


def append_many_journal(records: list[JournalRecord], directory: Path, every: int) -> None:
    with JournalWriter.open(directory, fsync=FsyncPolicy.GROUP) as writer:
        for start in range(0, len(records), every):
            writer.append_many(records[start:start + every])
            writer.commit()


def write_jsonl(rows: list[Row], path: Path, every: int) -> None:
    dumps = orjson.dumps
    with open(path, "wb", buffering=1 << 20) as stream:
        write, fileno = stream.write, stream.fileno()
        pending = every
        for sequence, (timestamp, command, topic, kind, payload, key, client) in enumerate(rows, 1):
            write(dumps({"sequence": sequence, "timestamp": timestamp, "command": "publish", "topic": topic,
                         "message_type": kind, "sow_key": key, "client_name": client, "payload": payload.decode()}))
            write(b"\n")
            pending -= 1
            if not pending:
                stream.flush()
                os.fsync(fileno)
                pending = every
        stream.flush()
        os.fsync(fileno)


def scan_journal(directory: Path) -> tuple[int, Any]:
    last, count = None, 0
    for count, last in enumerate(JournalReader(directory).scan(), 1):  # noqa: B007
        pass
    return count, last


def scan_views(directory: Path) -> tuple[int, Any]:
    last, count = None, 0
    for count, last in enumerate(JournalReader(directory).scan_views(), 1):  # noqa: B007
        pass
    return count, last.record() if last is not None else None


def read_jsonl(path: Path) -> tuple[int, Any]:
    loads = orjson.loads
    last, count = None, 0
    with open(path, "rb", buffering=1 << 20) as stream:
        for count, line in enumerate(stream, 1):  # noqa: B007
            last = loads(line)
    return count, last


def timed(step: Callable[[], Any]) -> tuple[float, Any]:
    with paused_gc():
        start = time.perf_counter()
        result = step()
        return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=RECORDS, help=f"records to write and read (default {RECORDS:,})")
    parser.add_argument("--commit-every", type=int, default=COMMIT_EVERY, help=f"records per group commit (default {COMMIT_EVERY})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is shown (default 3)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--keep", action="store_true", help="keep the files in bench/out/journal-bench/")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    rows = generate(args.records, args.seed)
    payload_bytes = sum(len(row[4]) for row in rows)
    print(f"generated {args.records:,} publishes (seed {args.seed}, {payload_bytes / 1e6:.1f} MB of JSON payload, "
          f"{len(TOPICS)} topics, 20 publishers) in {time.perf_counter() - start:.1f} s")
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; median of {args.repeat} "
          f"runs, ampsctl and peer interleaved; GC paused in every timed step; group commit every {args.commit_every:,} records")
    out = ROOT / "bench" / "out" / "journal-bench"
    records = [JournalRecord(0, ts, command, topic, kind, payload, key, None, None, client)
               for ts, command, topic, kind, payload, key, client in rows]
    times: dict[str, list[float]] = {key: [] for key in ("a", "a2", "b", "c", "d", "e")}
    checks: list[str] = []
    try:
        for _ in range(args.repeat):
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            journal, jsonl = out / "journal", out / "peer.jsonl"
            times["a"].append(timed(lambda: append_journal(rows, journal, args.commit_every))[0])
            shutil.rmtree(journal)
            times["a2"].append(timed(lambda: append_many_journal(records, journal, args.commit_every))[0])
            times["b"].append(timed(lambda: write_jsonl(rows, jsonl, args.commit_every))[0])
            for key, step in (("c", lambda: scan_journal(journal)), ("d", lambda: scan_views(journal)),
                              ("e", lambda: read_jsonl(jsonl))):
                took, (count, last) = timed(step)
                times[key].append(took)
                checks.append(_check(key, count, last, rows))
        sizes = (sum(p.stat().st_size for p in journal.iterdir()), jsonl.stat().st_size)
        segments = len(list(journal.glob("*.journal")))
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)

    n = args.records
    median = {key: statistics.median(values) for key, values in times.items()}
    rate = {key: n / seconds for key, seconds in median.items()}
    print(f"on disk: journal {sizes[0] / 1e6:.1f} MB in {segments} segment(s) with indexes; JSONL {sizes[1] / 1e6:.1f} MB")
    print()
    rows_out = [
        ("measurement", "time", "records/s", "vs peer", "target", "result"),
        ("(a) JournalWriter.append, GROUP fsync", *_cells(median["a"], rate["a"], rate["a"] / rate["b"], TARGET_APPEND)),
        ("(a2) JournalWriter.append_many, GROUP fsync", *_cells(median["a2"], rate["a2"], rate["a2"] / rate["b"], TARGET_APPEND)),
        ("(b) peer: orjson JSONL write + fsync", *_cells(median["b"], rate["b"], 1.0, None)),
        ("(c) JournalReader.scan() -> JournalRecord", *_cells(median["c"], rate["c"], rate["c"] / rate["e"], TARGET_SCAN)),
        ("(d) JournalReader.scan_views() -> RecordView", *_cells(median["d"], rate["d"], rate["d"] / rate["e"], TARGET_SCAN)),
        ("(e) peer: orjson.loads per JSONL line", *_cells(median["e"], rate["e"], 1.0, None)),
    ]
    print(table(rows_out))
    print()
    bad = [check for check in checks if check]
    if bad:
        print("DISAGREE: " + "; ".join(sorted(set(bad))))
        return 1
    print(f"checks: every scan and the peer read returned {n:,} records; the last one equals the last written")
    return 0


def _check(key: str, count: int, last: Any, rows: list[Row]) -> str:
    timestamp, command, topic, kind, payload, key_, client = rows[-1]
    if count != len(rows):
        return f"({key}) read {count:,} records, not {len(rows):,}"
    if isinstance(last, dict):
        same = (last["timestamp"], last["topic"], last["payload"].encode(), last["sow_key"]) == (timestamp, topic, payload, key_)
    else:
        same = (last.timestamp, last.command, last.topic, last.message_type, last.payload, last.sow_key, last.client_name) == rows[-1]
    return "" if same else f"({key}) the last record read differs from the last written"


def _cells(seconds: float, rate: float, ratio: float, target: int | None) -> tuple[str, ...]:
    verdict = "" if target is None else ("ok" if rate >= target else "MISSED")
    return (f"{seconds:.2f} s", f"{rate:,.0f}", f"{ratio:.2f}x", "" if target is None else f">= {target:,}/s", verdict)


if __name__ == "__main__":
    sys.exit(main())
