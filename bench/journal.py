#!/usr/bin/env python3
"""Benchmark the journal: group-commit appends and sequential scans (issue 6, Performance).

Run with `make bench-journal` or `.venv/bin/python bench/journal.py` (`--help` for options).

1. Generates RECORDS publishes in memory with a fixed seed: 8 topics, 20 publishers (client
   names), JSON payloads of 60-120 bytes (orjson), a SOW key each, timestamps increasing by
   0-50 µs. Not timed.
2. Times, the median of --repeat runs, each run interleaved so both sides see the same load:
   (a) the broker's path: `JournalWriter.append_record` per record, FsyncPolicy.GROUP, group
       commit with the fsync on a worker thread, one in flight (`start_sync` / `SyncJob.run` /
       `finish_sync`, as the broker's FlushInterval commit): after every --commit-every
       records, if the previous fsync has returned, its group is durable and the next fsync
       starts for everything written since; if not, appends go on and join the next group.
       The last group is committed synchronously; open and close included. The input
       JournalRecords are built untimed;
   (a1) `JournalWriter.append` (keyword arguments, a JournalRecord returned) and `commit()`
       every --commit-every records on the caller's thread, fsync included: no overlap;
   (a2) `JournalWriter.append_many` of --commit-every records at a time, then `commit()` (the
       path of `journal import`);
   (b) the peer: the same records written as JSON Lines with orjson (one object per record,
       the same fields), through a buffered file, with flush + fsync every --commit-every
       records and at the end: the same durability;
   (c) `JournalReader(dir).scan()`: every record decoded into a JournalRecord, checksums
       checked (opening the reader included);
   (d) `JournalReader(dir).scan_views()`: the same scan yielding lazy RecordViews, checksums
       checked, sequence and timestamp read, other fields decoded only on access;
   (e) the peer: the JSONL file read line by line and parsed with `orjson.loads`.
   Targets: (a) at least 500,000 records/s; the sequential scan (d) at least 2,000,000
   records/s. (c) adds building a full JournalRecord for every record, which the issue's scan
   target does not ask for: its rate is printed with no target (docs/decisions.md, Storage).
3. Checks agreement: both scans and the peer read return RECORDS records, and the last
   record read back equals the last one written.

The cyclic garbage collector is paused during every timed step (both sides; ampsctl.gcpause).
Each step also reports its CPU time (process time, fsync threads included), which other jobs on
a shared machine disturb far less than the wall-clock rate the targets are judged on.
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
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ampsctl.gcpause import paused_gc  # noqa: E402
from ampsctl.journal import Command, FsyncPolicy, JournalReader, JournalRecord, JournalWriter  # noqa: E402
from ampsctl.journal.writer import SyncJob  # noqa: E402
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


def group_commit_journal(records: list[JournalRecord], directory: Path, every: int) -> tuple[int, list[float]]:
    """(a): the broker's appends and split commits; (fsyncs, seconds of each fsync)."""
    took: list[float] = []

    def run(job: SyncJob) -> None:
        started = time.perf_counter()
        job.run()
        took.append(time.perf_counter() - started)

    with ThreadPoolExecutor(1) as pool, JournalWriter.open(directory, fsync=FsyncPolicy.GROUP) as writer:
        append = writer.append_record
        syncing: tuple[SyncJob, Future[None]] | None = None
        for start in range(0, len(records), every):
            for record in records[start:start + every]:
                append(record)
            if syncing is not None:
                if not syncing[1].done():
                    continue  # the group grows until the fsync in flight returns
                writer.finish_sync(syncing[0], syncing[1].exception())
            job = writer.start_sync()
            syncing = (job, pool.submit(run, job)) if job is not None else None
        if syncing is not None:
            writer.finish_sync(syncing[0], syncing[1].exception())
        writer.commit()
    return len(took) + 1, took


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


def timed(step: Callable[[], Any], cpu: list[float] | None = None) -> tuple[float, Any]:
    """Wall seconds and result of ``step``; its process time is appended to ``cpu``."""
    with paused_gc():
        start, start_cpu = time.perf_counter(), time.process_time()
        result = step()
        took = time.perf_counter() - start
        if cpu is not None:
            cpu.append(time.process_time() - start_cpu)
        return took, result


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
    keys = ("a", "a1", "a2", "b", "c", "d", "e")
    times: dict[str, list[float]] = {key: [] for key in keys}
    cpu: dict[str, list[float]] = {key: [] for key in keys}
    groups: list[tuple[int, list[float]]] = []
    checks: list[str] = []
    try:
        for _ in range(args.repeat):
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            journal, jsonl = out / "journal", out / "peer.jsonl"
            took, group = timed(lambda: group_commit_journal(records, journal, args.commit_every), cpu["a"])
            times["a"].append(took)
            groups.append(group)
            shutil.rmtree(journal)
            times["a1"].append(timed(lambda: append_journal(rows, journal, args.commit_every), cpu["a1"])[0])
            shutil.rmtree(journal)
            times["a2"].append(timed(lambda: append_many_journal(records, journal, args.commit_every), cpu["a2"])[0])
            times["b"].append(timed(lambda: write_jsonl(rows, jsonl, args.commit_every), cpu["b"])[0])
            for key, step in (("c", lambda: scan_journal(journal)), ("d", lambda: scan_views(journal)),
                              ("e", lambda: read_jsonl(jsonl))):
                took, (count, last) = timed(step, cpu[key])
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
    cpu_us = {key: statistics.median(values) * 1e6 / n for key, values in cpu.items()}
    fsyncs = statistics.median(count for count, _ in groups)
    fsync_ms = statistics.median(seconds for _, took in groups for seconds in took) * 1000 if any(t for _, t in groups) else 0.0
    print(f"on disk: journal {sizes[0] / 1e6:.1f} MB in {segments} segment(s) with indexes; JSONL {sizes[1] / 1e6:.1f} MB")
    print(f"(a) made {fsyncs:,.0f} group commits ({n / fsyncs:,.0f} records each on average, one fsync in flight at a "
          f"time, the median fsync {fsync_ms:.2f} ms); (a1) and (a2) fsync every {args.commit_every:,} records and wait for it")
    print()
    labels = {
        "a": "(a) append_record, group commit, fsync on a thread", "a1": "(a1) append + commit() every N, fsync inline",
        "a2": "(a2) append_many + commit() every N", "b": "(b) peer: orjson JSONL write + fsync",
        "c": "(c) scan() decoding every field -> JournalRecord", "d": "(d) sequential scan: scan_views() -> RecordView",
        "e": "(e) peer: orjson.loads per JSONL line",
    }
    peers = {"a": "b", "a1": "b", "a2": "b", "b": "b", "c": "e", "d": "e", "e": "e"}
    targets = {"a": TARGET_APPEND, "a1": TARGET_APPEND, "a2": TARGET_APPEND, "d": TARGET_SCAN}
    rows_out = [("measurement", "time", "records/s", "CPU µs/record", "vs peer", "target", "result")]
    for key in keys:
        time_cell, rate_cell, ratio_cell, target_cell, verdict_cell = _cells(
            median[key], rate[key], rate[key] / rate[peers[key]], targets.get(key))
        rows_out.append((labels[key], time_cell, rate_cell, f"{cpu_us[key]:.2f}", ratio_cell, target_cell, verdict_cell))
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
