"""Faucet engine throughput: 1M subscription events, 1,000 publishers, 100,000 topics (issue 5).

Generates a deterministic event file (bench/out/affinity.jsonl) and times, in CPU seconds
(the machine is shared), in both announcement modes:
  (a) the engine alone: FaucetEngine.handle over the events exactly as simulate parses them,
      GC paused as simulate runs it; then once more with the cyclic GC on, as in the broker;
  (b) the CLI: `ampsctl affinity simulate --format jsonl --no-summary` on the file, stdout to
      a file (parsing, the engine and writing every affinity event). Its output must equal
      the engine's events as records ("output ok"), checked outside the timing;
  (c) the peer, measured in the same run: the same events through a bare interest tracker
      (a dict of topic -> set of subscriptions, nothing chosen, nothing emitted), the floor
      of any Python implementation; (a)/(c) is the engine's cost over plain bookkeeping.
Target: 1M events in at most 2 s for (a). Nothing asserts; the exit code is 0 when it ran.
--coverage gives every publisher a coverage PCRE (a tenth of the topics each), in its own
event file (bench/out/affinity-coverage.jsonl).

    .venv/bin/python bench/affinity.py [--events N] [--publishers N] [--topics N] [--seed S] [--no-cli] [--coverage]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

from ampsctl.affinity.engine import FaucetEngine
from ampsctl.affinity.eventfile import event_record, read_events
from ampsctl.affinity.model import AffinitySettings, Announcements, Subscribe, SubscriptionEvent, Unsubscribe
from ampsctl.gcpause import paused_gc

OUT = Path(__file__).resolve().parent / "out"
CONTROL = "faucet_control"
PATTERN = "^/symbols/"
COVERAGE_OPTION = "udo_coverage"
TARGET_SECONDS_PER_MILLION = 2.0


def generate(path: Path, events: int, publishers: int, topics: int, seed: int, coverage: bool) -> dict[str, int]:
    """Publishers enlist first, then subscribers come and go; a few publishers churn. With
    ``coverage``, publisher p covers the topics /symbols/S0{p % 10}... (a tenth of them)."""
    rng = random.Random(seed)
    names = [f"/symbols/S{i:06d}" for i in range(topics)]
    lines: list[bytes] = []
    counts = {"subscribe": 0, "unsubscribe": 0, "disconnect": 0}

    def emit(event: dict) -> None:
        counts[event["event"]] += 1
        lines.append(orjson.dumps(event))

    def enlist(p: int) -> None:
        event = {"event": "subscribe", "connection": f"p{p}", "client": f"pub-{p}", "topic": CONTROL, "sub_id": "ctl"}
        if coverage:
            event["options"] = f"{COVERAGE_OPTION}=^/symbols/S0{p % 10}"
        emit(event)

    for p in range(publishers):
        enlist(p)
    live: dict[str, list[str]] = {}  # subscriber connection -> its live sub_ids
    order: list[str] = []  # the keys of live, for O(1) random picks
    next_sub = 0
    subscribers = max(publishers * 20, 1)

    def pick() -> str:
        return order[rng.randrange(len(order))]

    def drop(connection: str) -> None:
        del live[connection]
        i = order.index(connection) if order[-1] != connection else len(order) - 1
        order[i] = order[-1]
        order.pop()

    while len(lines) < events:
        roll = rng.random()
        if roll < 0.002:  # a publisher restarts: disconnect, then enlist again
            p = rng.randrange(publishers)
            emit({"event": "disconnect", "connection": f"p{p}"})
            enlist(p)
        elif roll < 0.004 and order:  # a subscriber goes away with everything it had
            connection = pick()
            emit({"event": "disconnect", "connection": connection})
            drop(connection)
        elif roll < 0.40 and order:  # an unsubscribe
            connection = pick()
            subs = live[connection]
            if subs:
                emit({"event": "unsubscribe", "connection": connection, "sub_id": subs.pop(rng.randrange(len(subs)))})
        else:
            connection = f"s{rng.randrange(subscribers)}"
            next_sub += 1
            popular = rng.random() < 0.5  # half the interest piles onto a few popular topics
            topic = names[min(int(rng.paretovariate(1.2)) - 1, topics - 1)] if popular else rng.choice(names)
            emit({"event": "subscribe", "connection": connection, "client": f"sub-{connection}", "topic": topic, "sub_id": str(next_sub)})
            if connection not in live:
                live[connection] = []
                order.append(connection)
            live[connection].append(str(next_sub))
    del lines[events:]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return counts


def time_engine(events: list, settings: AffinitySettings, repeat: int, *, collect: bool = False) -> tuple[float, int]:
    """Median CPU seconds of handle() over all events, and how many affinity events came out.

    ``collect`` leaves the cyclic GC on, as in the broker (simulate pauses it); the bench's
    own event list is frozen first, so only the engine's objects are collected.
    """
    runs, produced = [], 0
    for _ in range(repeat):
        engine = FaucetEngine(settings)
        handle = engine.handle
        with paused_gc():
            if collect:
                gc.freeze()
                gc.enable()
            start = time.process_time()
            produced = sum(len(handle(event)) for event in events)
            runs.append(time.process_time() - start)
        gc.unfreeze()
        del engine, handle  # freed outside the timing, before the next run
    return statistics.median(runs), produced


def output_digest(numbered: list[tuple[int, SubscriptionEvent]], settings: AffinitySettings) -> tuple[str, int]:
    """The SHA-256 of what simulate --format jsonl must print, from the engine (not timed)."""
    engine = FaucetEngine(settings)
    digest, count = hashlib.sha256(), 0
    with paused_gc():
        for line, event in numbered:
            for affinity in engine.handle(event):
                digest.update(orjson.dumps(event_record(affinity, line)) + b"\n")
                count += 1
    return digest.hexdigest(), count


def time_floor(events: list, repeat: int) -> float:
    """Median CPU seconds of the peer (c): interest bookkeeping only, with no publishers."""
    runs = []
    for _ in range(repeat):
        interest: dict[str, set[tuple[str, str]]] = {}
        subs: dict[tuple[str, str], str] = {}
        by_connection: dict[str, list[str]] = {}
        with paused_gc():
            start = time.process_time()
            for event in events:
                kind = type(event)
                if kind is Subscribe:
                    key = (event.connection, event.sub_id)
                    subs[key] = event.topic
                    interest.setdefault(event.topic, set()).add(key)
                    by_connection.setdefault(event.connection, []).append(event.sub_id)
                    continue
                keys = [(event.connection, event.sub_id)] if kind is Unsubscribe else [
                    (event.connection, sub_id) for sub_id in by_connection.pop(event.connection, ())]
                for key in keys:
                    topic = subs.pop(key, None)
                    if topic is not None:
                        holders = interest[topic]
                        holders.discard(key)
                        if not holders:
                            del interest[topic]
            runs.append(time.process_time() - start)
    return statistics.median(runs)


def time_cli(path: Path, settings: AffinitySettings) -> tuple[float, str, int]:
    """CPU seconds of the CLI process (user + system), and the digest and lines of its output."""
    mode = settings.announcements
    out = OUT / f"{path.stem}-{mode.value}.out.jsonl"
    command = [
        sys.executable, "-m", "ampsctl", "affinity", "simulate", "--events", str(path),
        "--control-topic", CONTROL, "--subscription-topic", PATTERN, "--announcements", mode.value,
        "--format", "jsonl", "--no-summary",
    ]
    if settings.coverage_option:
        command += ["--coverage-option", settings.coverage_option]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with out.open("wb") as stdout:
        done = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"ampsctl affinity simulate failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    data = out.read_bytes()
    return cpu, hashlib.sha256(data).hexdigest(), data.count(b"\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--publishers", type=int, default=1_000)
    parser.add_argument("--topics", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1729)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-cli", action="store_true", help="time only the engine and the peer")
    parser.add_argument("--coverage", action="store_true", help=f"publishers enlist with {COVERAGE_OPTION}=^/symbols/S0<p %% 10>")
    args = parser.parse_args()

    OUT.mkdir(exist_ok=True)
    name = "affinity-coverage" if args.coverage else "affinity"
    path = OUT / f"{name}.jsonl"
    meta = OUT / f"{name}.meta.json"
    wanted = {"events": args.events, "publishers": args.publishers, "topics": args.topics, "seed": args.seed, "version": 1}
    if path.exists() and meta.exists() and orjson.loads(meta.read_bytes()).get("args") == wanted:
        counts = orjson.loads(meta.read_bytes())["counts"]  # the same deterministic file: reuse it
        print(f"reusing {path.relative_to(OUT.parent.parent)} (same parameters): ", end="")
    else:
        start = time.perf_counter()
        counts = generate(path, args.events, args.publishers, args.topics, args.seed, args.coverage)
        meta.write_bytes(orjson.dumps({"args": wanted, "counts": counts}))
        print(f"generated {path.relative_to(OUT.parent.parent)} in {time.perf_counter() - start:.1f} s: ", end="")
    print(f"{args.events:,} events (" + ", ".join(f"{n:,} {kind}" for kind, n in counts.items())
          + f"); {args.publishers:,} publishers, {args.topics:,} topics")
    with path.open("rb") as stream, paused_gc():
        start = time.process_time()
        numbered = list(read_events(stream, str(path)))  # exactly what simulate parses
        parse = time.process_time() - start
    events = [event for _line, event in numbered]
    print(f"parsed the event file: {parse:.2f} s ({len(events) / parse:,.0f} events/s; part of (b), not of (a))")
    print(f"Python {sys.version.split()[0]}; CPU seconds (the machine is shared); (a) is the median of {args.repeat} runs\n")

    floor = time_floor(events, args.repeat)
    header = f"{'measurement':<46} {'time':>8} {'events/s':>12} {'affinity events':>16} {'per 1M':>8} {'vs (c)':>7} {'target':>8}  result"
    print(header)
    print("-" * len(header))

    def row(name: str, seconds: float, produced: str = "", target: str = "", result: str = "") -> None:
        print(f"{name:<46} {seconds:>7.2f}s {len(events) / seconds:>12,.0f} {produced:>16} "
              f"{seconds * 1_000_000 / len(events):>7.2f}s {seconds / floor:>6.1f}x {target:>8}  {result}")

    for mode in Announcements:
        settings = AffinitySettings(CONTROL, PATTERN, mode, COVERAGE_OPTION if args.coverage else None)
        seconds, produced = time_engine(events, settings, args.repeat)
        result = "ok" if seconds * 1_000_000 / len(events) <= TARGET_SECONDS_PER_MILLION else "MISSED"
        row(f"(a) engine, Announcements={mode.value}", seconds, f"{produced:,}", "<= 2 s", result)
        collected, _ = time_engine(events, settings, 1, collect=True)
        row("(a) the same with the cyclic GC on (broker)", collected)
        if args.no_cli:
            continue
        cli, digest, lines = time_cli(path, settings)
        expected, count = output_digest(numbered, settings)
        same = digest == expected and lines == count == produced
        row(f"(b) CLI --format jsonl, Announcements={mode.value}", cli, f"{lines:,}", "", "output ok" if same else "OUTPUT DIFFERS")
    print(f"{'(c) peer: bare interest bookkeeping':<46} {floor:>7.2f}s {len(events) / floor:>12,.0f} {'':>16} "
          f"{floor * 1_000_000 / len(events):>7.2f}s {1:>6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
