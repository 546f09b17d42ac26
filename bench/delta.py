#!/usr/bin/env python3
"""Benchmark `ampsctl delta merge --stream` against `jq -c` doing the same recursive merge (`*`).

Run with `make bench-delta` (sets up .venv and jq) or `.venv/bin/python bench/delta.py`.

1. Generates --pairs JSON base/delta pairs (default 1,000,000; deterministic for --seed) into
   bench/out/delta.jsonl, one message per line, each id's base followed by its delta. A base
   is a realistic nested order (id, symbol, account, status, quantities, prices, a customer
   object with an address, a venue object, tags and fills arrays); a delta carries the id and
   a few changed fields: scalars, some nested object changes (a field or two inside customer,
   customer/address or venue), sometimes an array (replaced whole), sometimes a present null.
2. Times, in this run on the same file, output to files in bench/out/:
   (a) `ampsctl delta merge --stream --key /id bench/out/delta.jsonl` (one CLI run; with two
       CPUs it folds a large file in two processes, so its CPU time exceeds its wall time);
   (b) `jq -c -n '[inputs] | group_by(.id) | .[] | reduce .[] as $m ({}; . * $m)'` on the same
       file, the same fold by id (group_by is a stable sort): `*` merges objects recursively, replaces arrays and scalars whole
       and deletes nothing, like the JSON codec's merge (spec/messages.md §6).
3. Checks that both produced the same merged records (parsed JSON, compared per id, all
   records unless --check N) and prints both times (wall, and CPU: user + system) and
   jq / ampsctl (wall) against the 5x target.

Nothing here asserts: the script prints figures. Exit codes: 0 done and the outputs agree,
1 they disagree or a command failed, 4 jq or the ampsctl command is missing.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
PAIRS = 1_000_000
SEED = 1729
TARGET_RATIO = 5.0
# Group by id (a stable sort), then fold each group with `*`. The obvious `reduce inputs as $m
# ({}; .[$k] = ((.[$k] // {}) * $m))` is quadratic in jq 1.6 (the accumulator is copied on every
# update: 20,000 messages take 3.6 s), which would make the comparison meaningless.
JQ_PROGRAM = "[inputs] | group_by(.id) | .[] | reduce .[] as $m ({}; . * $m)"

SYMBOLS = ["IBM", "MSFT", "AAPL", "GOOG", "AMZN", "ORCL", "NVDA", "TSLA", "META", "SAP"]
STATUSES = ["new", "open", "partial", "filled", "cancelled", "rejected"]
VENUES = ["XNYS", "XNAS", "BATS", "ARCA", "XLON", "XETR"]
CITIES = ["New York", "London", "Frankfurt", "Tokyo", "Sydney", "Toronto"]
TAGS = ["algo", "dma", "care", "block", "odd-lot", "short", "vwap", "twap"]


def make_base(rng: random.Random, ident: int) -> dict[str, Any]:
    qty = rng.randrange(100, 10_000, 100)
    return {
        "id": ident,
        "symbol": rng.choice(SYMBOLS),
        "account": f"ACC{rng.randrange(100_000):05d}",
        "status": "new",
        "side": rng.choice(["buy", "sell"]),
        "qty": qty,
        "filled": 0,
        "price": round(rng.uniform(10, 500), 2),
        "ts": 1_700_000_000_000 + ident,
        "customer": {
            "name": f"Customer {rng.randrange(5000)}",
            "tier": rng.randrange(1, 4),
            "address": {"city": rng.choice(CITIES), "zip": f"{rng.randrange(100_000):05d}"},
        },
        "venue": {"mic": rng.choice(VENUES), "session": "regular", "latency_us": rng.randrange(50, 900)},
        "tags": rng.sample(TAGS, rng.randrange(1, 4)),
        "fills": [],
        "notes": "",
    }


def make_delta(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    delta: dict[str, Any] = {"id": base["id"]}
    filled = rng.randrange(0, base["qty"] + 1, 100)
    delta["status"] = rng.choice(STATUSES[1:])
    delta["filled"] = filled
    delta["ts"] = base["ts"] + rng.randrange(1, 60_000)
    roll = rng.random()
    if roll < 0.5:
        delta["price"] = round(base["price"] * rng.uniform(0.98, 1.02), 2)
    if rng.random() < 0.3:  # nested object change, two levels deep sometimes
        change: dict[str, Any] = {"tier": rng.randrange(1, 4)}
        if rng.random() < 0.5:
            change["address"] = {"city": rng.choice(CITIES)}
        delta["customer"] = change
    if rng.random() < 0.25:
        delta["venue"] = {"latency_us": rng.randrange(50, 900), "session": rng.choice(["regular", "closing"])}
    if filled and rng.random() < 0.6:  # arrays are replaced whole
        delta["fills"] = [{"qty": filled, "px": base["price"], "venue": rng.choice(VENUES)}]
    if rng.random() < 0.2:
        delta["tags"] = rng.sample(TAGS, rng.randrange(1, 3))
    if rng.random() < 0.05:
        delta["notes"] = None  # present null replaces, never deletes
    return delta


def generate(path: Path, pairs: int, seed: int) -> int:
    rng = random.Random(seed)
    dumps = orjson.dumps
    size = 0
    with path.open("wb") as out:
        chunk: list[bytes] = []
        for ident in range(1, pairs + 1):
            base = make_base(rng, ident)
            chunk.append(dumps(base))
            chunk.append(dumps(make_delta(rng, base)))
            if len(chunk) >= 20_000:
                chunk.append(b"")
                size += out.write(b"\n".join(chunk))
                chunk.clear()
        if chunk:
            chunk.append(b"")
            size += out.write(b"\n".join(chunk))
    return size


def timed(argv: list[str], stdout_path: Path) -> tuple[float, float, int]:
    """Wall time, CPU time (user + system, with any processes the command forks) and exit code."""
    with stdout_path.open("wb") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        code = subprocess.run(argv, stdout=out, check=False).returncode
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), code


def by_id(path: Path) -> dict[Any, Any]:
    loads = orjson.loads
    with path.open("rb") as stream:
        return {(doc := loads(line))["id"]: doc for line in stream if line.strip()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=PAIRS, help=f"base/delta pairs to generate (default {PAIRS:,})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"generator seed (default {SEED})")
    parser.add_argument("--check", type=int, default=0, help="compare only the first N ids of the outputs (default: all)")
    args = parser.parse_args(argv)

    bindir = Path(sys.executable).parent
    ampsctl = shutil.which("ampsctl", path=str(bindir)) or shutil.which("ampsctl")
    jq = shutil.which("jq")
    if ampsctl is None:
        print("error: the ampsctl command is missing; run make bench-delta (it sets up .venv)", file=sys.stderr)
        return 4
    if jq is None:
        print("error: jq not found; install it (sudo apt-get install jq) and rerun make bench-delta", file=sys.stderr)
        return 4
    OUT.mkdir(parents=True, exist_ok=True)
    data = OUT / "delta.jsonl"
    start = time.perf_counter()
    size = generate(data, args.pairs, args.seed)
    print(f"generated {args.pairs:,} base/delta pairs ({2 * args.pairs:,} messages, seed {args.seed}, {size / 1e6:.1f} MB) in {data.relative_to(ROOT)} in {time.perf_counter() - start:.1f} s")
    version = subprocess.run([jq, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"Python {sys.version.split()[0]}, {version}, {os.cpu_count()} CPUs; one run each, same file, output to bench/out/")

    amps_out, jq_out = OUT / "delta.ampsctl.jsonl", OUT / "delta.jq.jsonl"
    amps_time, amps_cpu, amps_code = timed([ampsctl, "delta", "merge", "--stream", "--key", "/id", str(data)], amps_out)
    jq_time, jq_cpu, jq_code = timed([jq, "-c", "-n", JQ_PROGRAM, str(data)], jq_out)
    ratio = jq_time / amps_time if amps_time else float("inf")

    rows = [
        ("(a) ampsctl delta merge --stream --key /id", f"{amps_time:.2f} s", f"{amps_cpu:.2f} s", f"{ratio:.2f}x", f">= {TARGET_RATIO:g}x", "ok" if ratio >= TARGET_RATIO else "MISSED"),
        ("(b) jq -c -n 'group_by(.id) ... . * $m' (peer)", f"{jq_time:.2f} s", f"{jq_cpu:.2f} s", "1.00x", "", ""),
    ]
    header = ("measurement", "time", "cpu", "jq / this", "target", "result")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))))
    if amps_code or jq_code:
        print(f"error: exit codes ampsctl {amps_code}, jq {jq_code}", file=sys.stderr)
        return 1

    ours, theirs = by_id(amps_out), by_id(jq_out)
    ids = list(ours)[: args.check] if args.check else list(ours)
    differ = [ident for ident in ids if ours[ident] != theirs.get(ident)]
    scope = f"first {len(ids):,}" if args.check else f"all {len(ids):,}"
    if len(ours) != len(theirs) or differ:
        print(f"outputs DISAGREE: ampsctl {len(ours):,} records, jq {len(theirs):,}; {len(differ):,} of the {scope} differ (e.g. id {differ[:3]})")
        return 1
    print(f"outputs agree: {len(ours):,} merged records each, {scope} compared as parsed JSON")
    return 0


if __name__ == "__main__":
    sys.exit(main())
