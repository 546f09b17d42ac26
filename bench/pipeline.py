#!/usr/bin/env python3
"""Benchmark journal compaction: the local engine, the Spark engine and DuckDB (issue 8, Performance).

Run with `.venv/bin/python bench/pipeline.py` (`--help` for options; the full size takes a
while and a few GB of disk: try `--records 1000000 --keys 100000` first).

1. Generates a journal of RECORDS plain publishes over KEYS keys (JSON `{"id": k, "v": i,
   "pad": ...}`, Key field /id, the key journaled as the broker journals it), with a fixed
   seed. Not timed.
2. Exports it to Parquet through the `ampsctl-journal` Spark source (`journal export`). Not
   timed: it is the peer's input.
3. Times, once each (a run is long; the machine's other load shows in the figures):
   (a) the local engine: `ampsctl.sow.compact` into a SOW file (its fast path, for this
       journal of plain publishes; `--reference` also times the reference replay alone,
       `compact(..., fast=False)`, which is slow);
   (b) the Spark engine on --master (default local[2]) into a SOW file, the session started
       before the clock starts (a cluster's session outlives one job);
   (c) the peer: DuckDB over the Parquet export, the equivalent last-value-per-key window
       query (`row_number() OVER (PARTITION BY sow_key ORDER BY sequence DESC) = 1`),
       written to Parquet so the result is materialised;
   (d) the pure-Python floor: the cheapest pass over the journal the local engine must make,
       `JournalReader(dir).scan_views()` iterated by a Python `for` loop that only parses each
       payload with orjson (the reference refuses a payload that is not JSON wherever it is, so
       every one is parsed; the cyclic GC paused, as the local engine pauses it). No local
       engine written in Python can beat it in one process, so its ratio to (c) bounds what
       (a) can reach; split over processes it could at best divide by the CPU count.
   Target: (a) at most 2x (c). (b) prints records/s per core: it should scale with cores.
   Wall seconds decide; the process CPU seconds (all threads) of (a) and (c) are printed too,
   since on a shared machine the wall time mostly measures the other load.
4. Checks agreement: the three results hold KEYS records, both SOW files hold the same
   records, and the floor walked RECORDS records.

Files go to bench/out/pipeline-bench/ and are removed afterwards unless --keep. Nothing here
asserts on time: exit 0 when the figures were printed, 1 when a check disagreed.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ampsctl.journal import Command, FsyncPolicy, JournalRecord, JournalWriter  # noqa: E402
from ampsctl.messages.keys import generate_key  # noqa: E402
from ampsctl.sow.spec import TopicSpec  # noqa: E402

T0 = 1_767_225_600_000_000
SPEC = TopicSpec(name="orders", message_type="json", key_fields=("/id",), key_domain=None, expiration=None,
                 hash_indexes=(), indexes=(), history_window=None, history_granularity=None, pattern=False,
                 persistent=True, recovery_point="epoch", file_name="%n.sow")


def generate(directory: Path, records: int, keys: int, seed: int) -> None:
    rng = random.Random(seed)
    pad = "x" * 40
    with JournalWriter.open(directory, fsync=FsyncPolicy.NEVER) as writer:
        batch: list[JournalRecord] = []
        for i in range(records):
            key = rng.randrange(keys) if i >= keys else i  # every key at least once
            payload = orjson.dumps({"id": key, "v": i, "pad": pad})
            batch.append(JournalRecord(0, T0 + i, Command.PUBLISH, "orders", "json", payload,
                                       generate_key("orders", [key]), None, None, "bench"))
            if len(batch) >= 10_000:
                writer.append_many(batch)
                batch = []
        if batch:
            writer.append_many(batch)


def scan_floor(journal: Path) -> int:
    """Walk the journal's record views and parse each payload, nothing else; how many records.

    The parse is part of the floor: the local engine must refuse a payload that is not valid
    JSON wherever it is in the journal, as the reference replay does, so it parses every one."""
    import orjson

    from ampsctl.gcpause import paused_gc
    from ampsctl.journal.codec import RECORD_HEAD
    from ampsctl.journal.reader import JournalReader

    count = 0
    loads, head = orjson.loads, RECORD_HEAD.unpack_from
    with paused_gc():
        for count, view in enumerate(JournalReader(journal).scan_views(), 1):  # noqa: B007
            data, offset, length = view[0], view[1], view[2]
            end = offset + length - 4  # the payload ends where the 4-byte checksum starts
            loads(data[end - head(data, offset)[-1]:end])  # the head's last field: the payload length
    return count


def sow_rows(path: Path) -> set[tuple[str, bytes, int]]:
    from ampsctl.sow.sowfile import SowFile

    with SowFile.open(path) as sow:
        return {(r.key, r.payload, r.sequence) for r in sow.records()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--keep", action="store_true", help="keep bench/out/pipeline-bench/")
    parser.add_argument("--reference", action="store_true", help="also time the local engine's reference replay (slow)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="Spark configuration (e.g. spark.driver.memory=4g: the driver collects every record kept)")
    args = parser.parse_args()
    if args.keys > args.records:
        parser.error("--keys must not exceed --records")

    import duckdb

    from ampsctl.pipeline.engines import run_compact, run_export
    from ampsctl.pipeline.jobs import CompactJob, Engine, ExportJob, OutputFormat
    from ampsctl.pipeline.session import SessionOptions, start, stop
    from ampsctl.sow.compact import compact

    base = ROOT / "bench" / "out" / "pipeline-bench"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    journal = base / "journal"
    print(f"generating {args.records:,} publishes over {args.keys:,} keys ...", flush=True)
    generate(journal, args.records, args.keys, args.seed)
    conf = dict(item.split("=", 1) for item in args.conf)
    spark = start(SessionOptions(master=args.master, conf=conf))
    try:
        cores = spark.sparkContext.defaultParallelism
        run_export(ExportJob(str(journal), str(base / "parquet"), OutputFormat.PARQUET), Engine.SPARK, spark=spark)

        began, cpu = time.perf_counter(), time.process_time()
        floor_count = scan_floor(journal)
        floor_s, floor_cpu = time.perf_counter() - began, time.process_time() - cpu
        print(f"  pure-Python floor: {floor_s:.2f} s", flush=True)

        began, cpu = time.perf_counter(), time.process_time()
        local = compact(journal, [SPEC], base / "local")
        local_s, local_cpu = time.perf_counter() - began, time.process_time() - cpu
        print(f"  local engine: {local_s:.2f} s", flush=True)  # a Spark failure later must not lose it
        reference_s = None
        if args.reference:
            began = time.perf_counter()
            reference = compact(journal, [SPEC], base / "reference", fast=False)
            reference_s = time.perf_counter() - began
            print(f"  reference replay: {reference_s:.2f} s", flush=True)

        began = time.perf_counter()
        remote = run_compact(CompactJob(str(journal), (SPEC,), str(base / "spark")), Engine.SPARK, spark=spark).result
        spark_s = time.perf_counter() - began
    finally:
        stop(spark)

    began, cpu = time.perf_counter(), time.process_time()
    connection = duckdb.connect()
    connection.execute(f"""
        COPY (SELECT * EXCLUDE (rn) FROM (
                SELECT *, row_number() OVER (PARTITION BY sow_key ORDER BY sequence DESC) AS rn
                FROM read_parquet('{base / "parquet"}/*.parquet'))
              WHERE rn = 1)
        TO '{base / "duckdb.parquet"}' (FORMAT parquet)""")
    duck_s, duck_cpu = time.perf_counter() - began, time.process_time() - cpu
    duck_rows = connection.execute(f"SELECT count(*) FROM read_parquet('{base / 'duckdb.parquet'}')").fetchone()[0]

    ok = local.files[0].records == remote.files[0].records == duck_rows == args.keys and floor_count == args.records
    local_rows = sow_rows(Path(local.files[0].path))
    ok = ok and local_rows == sow_rows(Path(remote.files[0].path))
    if args.reference:
        ok = ok and local_rows == sow_rows(Path(reference.files[0].path))
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"Spark master {args.master} ({cores} cores)")
    print(f"{'engine':<38}{'seconds':>10}{'records/s':>14}{'CPU s':>10}")
    lines = [("(a) local engine", local_s, local_cpu), (f"(b) Spark engine, {args.master}", spark_s, None),
             ("(c) DuckDB window query", duck_s, duck_cpu), ("(d) pure-Python floor: walk + parse", floor_s, floor_cpu)]
    if reference_s is not None:
        lines.insert(1, ("(a') local engine, reference replay", reference_s, None))
    for name, seconds, cpu_s in lines:
        print(f"{name:<38}{seconds:>10.2f}{args.records / seconds:>14,.0f}{'' if cpu_s is None else f'{cpu_s:.2f}':>10}")
    print(f"local / DuckDB: {local_s / duck_s:.2f}x (target: at most 2x); CPU seconds: {local_cpu / duck_cpu:.2f}x")
    print(f"Spark / DuckDB: {spark_s / duck_s:.2f}x; Spark records/s per core: {args.records / spark_s / cores:,.0f}")
    print(f"pure-Python floor / DuckDB: {floor_s / duck_s:.2f}x; CPU seconds: {floor_cpu / duck_cpu:.2f}x "
          f"(local / floor: {local_s / floor_s:.2f}x)")
    print("results agree" if ok else "RESULTS DISAGREE")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
