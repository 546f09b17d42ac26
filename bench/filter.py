#!/usr/bin/env python3
"""Benchmark the compiled AMPS filter against the reference interpreter (issue 3, Performance).

Run with `make bench` or `.venv/bin/python bench/filter.py` (`--help` for the options).

1. Generates RECORDS JSON messages with a fixed seed (orjson.dumps): ids, symbols, prices, a
   nested customer, and the two fields the filter reads in a realistic mix. `region` is
   mostly one of US/EU/APAC/LATAM, sometimes '' (NULL in AMPS), null or absent; `qty` is
   mostly an integer, sometimes a float, a numeric string such as "150", null or absent, so
   the compiled fast paths and the coercion helpers both run.
2. Parses every message with orjson into a `JsonRecord` (timed and printed on its own).
3. Times `/region = 'US' AND /qty > 100`:
   - compiled (`compile_filter`) over all records;
   - interpreted (`matches`, the tree-walking reference) over the first --interpreted
     records (default 100,000), a subset to keep the run short: evaluations per second is a
     rate, so it compares directly; the time for all records is projected (scaled) and
     labelled as such;
   each the median of --repeat runs, interleaved so both see the same machine load.
   Targets: at least 1,000,000 evaluations/s compiled, and at least 10x the interpreter.
   The same two figures follow for the records with an odd region or qty only (the
   compiled path's slow cases: NULLs, '', floats, numeric strings), without a target.
4. Checks agreement: the compiled and interpreted match counts on the subset must be equal,
   and one untimed interpreted pass over all records must give the compiled count.

Nothing here asserts on time: the script prints figures. Exit codes: 0 done, 1 the two paths
disagree on a match count (a bug: run tests/filter/test_differential.py).
`--profile` prints where the compiled pass spends its time (cProfile, top 15).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import platform
import pstats
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from itertools import accumulate
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ampsctl.filter.compiler import compile_filter  # noqa: E402
from ampsctl.filter.evaluate import matches  # noqa: E402
from ampsctl.messages.json_record import JsonRecord  # noqa: E402
from ampsctl.filter.parser import parse  # noqa: E402
from report import table, verdict  # noqa: E402

FILTER = "/region = 'US' AND /qty > 100"
RECORDS = 1_000_000
INTERPRETED = 100_000
SEED = 1729
TARGET_RATE = 1_000_000
TARGET_RATIO = 10.0
_MISSING = object()

# (value, weight in %): what `region` and `qty` hold; _MISSING leaves the key out. Mostly
# well-typed, as a publisher's messages are, with a few of every odd case the rules cover.
REGIONS = [("US", 35), ("EU", 25), ("APAC", 20), ("LATAM", 16), ("", 2), (None, 1), (_MISSING, 1)]
QTY_KINDS = [("int", 93), ("float", 3), ("numeric string", 2), ("null", 1), ("absent", 1)]
TYPICAL = {"US", "EU", "APAC", "LATAM", "int"}
SYMBOLS = ["MSFT", "IBM", "ORCL", "AAPL", "GOOG", "AMZN", "NVDA", "TSLA"]


def generate(count: int, seed: int) -> tuple[list[bytes], Counter[str], list[int]]:
    """``count`` JSON messages (deterministic for a seed), a tally of the region/qty mix, and
    the indexes of the messages whose region or qty is not of the typical kind."""
    rng = random.Random(seed)
    regions, region_weights = zip(*REGIONS)
    kinds, kind_weights = zip(*QTY_KINDS)
    region_cumulative, kind_cumulative = list(accumulate(region_weights)), list(accumulate(kind_weights))
    mix: Counter[str] = Counter()
    lines, odd = [], []
    for n in range(count):
        message: dict[str, Any] = {"id": n, "symbol": rng.choice(SYMBOLS), "price": round(rng.uniform(1, 500), 2)}
        region = rng.choices(regions, cum_weights=region_cumulative)[0]
        if region is not _MISSING:
            message["region"] = region
        region_kind = "(absent)" if region is _MISSING else region if region else repr(region)
        kind = rng.choices(kinds, cum_weights=kind_cumulative)[0]
        qty = rng.randint(0, 200)
        if kind != "absent":
            message["qty"] = {"int": qty, "float": qty + 0.5, "numeric string": str(qty), "null": None}[kind]
        mix[f"region {region_kind}"] += 1
        mix[f"qty {kind}"] += 1
        if region_kind not in TYPICAL or kind not in TYPICAL:
            odd.append(n)
        message["side"] = "Buy" if n % 2 else "Sell"
        message["customer"] = {"name": f"client-{n % 997}", "tier": n % 3}
        lines.append(orjson.dumps(message))
    return lines, mix, odd


def rate(run: Callable[[], int], count: int) -> tuple[float, int]:
    started = time.perf_counter()
    matched = run()
    return count / (time.perf_counter() - started), matched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=RECORDS, help="messages to generate (default %(default)s)")
    parser.add_argument("--interpreted", type=int, default=INTERPRETED,
                        help="records the interpreter is timed on (default %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per path; the median is shown")
    parser.add_argument("--profile", action="store_true", help="profile the compiled pass (cProfile, top 15)")
    args = parser.parse_args(argv)
    subset_size = min(args.interpreted, args.records)

    gc.disable()  # building a million objects: no collections until they are all there
    started = time.perf_counter()
    lines, mix, odd = generate(args.records, args.seed)
    size = sum(map(len, lines))
    print(f"generated {args.records:,} JSON messages (seed {args.seed}, {size / 1e6:.1f} MB) "
          f"in {time.perf_counter() - started:.1f} s; mix:")
    for group in ("region", "qty"):
        shares = [f"{key.split(' ', 1)[1]} {n / args.records:.1%}" for key, n in sorted(mix.items()) if key.startswith(group)]
        print(f"  {group}: {', '.join(shares)}")

    started = time.perf_counter()
    records = [JsonRecord.from_bytes(line) for line in lines]
    parse_s = time.perf_counter() - started
    del lines
    print(f"parsed with orjson into JsonRecord: {parse_s:.2f} s ({args.records / parse_s:,.0f} records/s, GC paused)")
    gc.collect()
    gc.freeze()  # the records live to the end: keep them out of every collection while timing
    gc.enable()

    started = time.perf_counter()
    expr = parse(FILTER)
    compiled = compile_filter(expr)
    compile_ms = (time.perf_counter() - started) * 1000
    interpreted = partial(matches, expr)
    print(f"filter: {FILTER}  (parse + compile {compile_ms:.2f} ms)")
    print(f"Python {platform.python_version()} on {platform.machine()}, {platform.system()}; "
          f"evals/s is the median of {args.repeat} runs, the two paths interleaved")
    print()

    subset = records[:subset_size]
    odd_records = [records[n] for n in odd]
    all_c, all_i, counts = measure(compiled, interpreted, records, subset, args.repeat)
    odd_c, odd_i, _ = measure(compiled, interpreted, odd_records, odd_records[:subset_size], args.repeat)
    ratio = all_c / all_i
    scaled = "" if subset_size == len(records) else f" (scaled from {subset_size:,})"
    odd_label = f"  only the {len(odd):,} with an odd region or qty"
    rows = [
        ("measurement", "records", "evals/s", "time for all", "target", "result"),
        ("compiled (compile_filter)", f"{len(records):,}", f"{all_c:,.0f}", f"{len(records) / all_c:.2f} s",
         f">= {TARGET_RATE:,}/s", verdict(all_c >= TARGET_RATE)),
        ("interpreted (evaluate.matches)", f"{subset_size:,}", f"{all_i:,.0f}",
         f"{len(records) / all_i:.2f} s{scaled}", "", ""),
        ("compiled / interpreted", "", f"{ratio:.1f}x", "", f">= {TARGET_RATIO:g}x", verdict(ratio >= TARGET_RATIO)),
        (odd_label + ": compiled", f"{len(odd):,}", f"{odd_c:,.0f}", "", "", ""),
        (odd_label + ": interpreted", f"{min(subset_size, len(odd)):,}", f"{odd_i:,.0f}", "", "", ""),
        (odd_label + ": ratio", "", f"{odd_c / odd_i:.1f}x", "", "", ""),
    ]
    print(table(rows))
    print()

    (compiled_all, interpreted_subset), *other = sorted(counts)
    compiled_subset = sum(map(compiled, subset))
    interpreted_all = sum(map(interpreted, records))  # untimed: agreement on every record
    agree = not other and compiled_subset == interpreted_subset and compiled_all == interpreted_all
    print(f"matches: compiled {compiled_all:,} of {len(records):,}, interpreted {interpreted_all:,} (one untimed pass); "
          f"on the timed subset compiled {compiled_subset:,}, interpreted {interpreted_subset:,}: "
          f"{'agree' if agree else 'DISAGREE'}")

    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(lambda: sum(map(compiled, subset)))
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    return 0 if agree else 1


def measure(compiled: Callable[[Any], bool], interpreted: Callable[[Any], bool], records: list[Any],
            subset: list[Any], repeat: int) -> tuple[float, float, set[tuple[int, int]]]:
    """Median evaluations/s of the compiled path over ``records`` and of the interpreter over
    ``subset``, runs interleaved; and the (compiled, interpreted) match counts seen."""
    compiled_rates, interpreted_rates, counts = [], [], set()
    for _ in range(repeat):
        speed, compiled_count = rate(lambda: sum(map(compiled, records)), len(records))
        compiled_rates.append(speed)
        speed, interpreted_count = rate(lambda: sum(map(interpreted, subset)), len(subset))
        interpreted_rates.append(speed)
        counts.add((compiled_count, interpreted_count))
    return statistics.median(compiled_rates), statistics.median(interpreted_rates), counts


if __name__ == "__main__":
    sys.exit(main())
