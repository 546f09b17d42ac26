#!/usr/bin/env python3
"""Benchmark `ampsctl validate` against `xmllint --schema`, and `ampsctl --help` start-up.

Run with `make bench` (sets up .venv and xmllint) or `.venv/bin/python bench/lint.py`.

1. Generates CONFIGS realistic AMPS configs (50-500 SOW topics each, fixed seed) into
   bench/out/: instance name, transports, a transaction log that covers the queues'
   underlying topics and the transient topics, logging, SOW topics with keys, `%n` file
   names, durability, some expiration / slab sizes / hash indexes, queues, views,
   conflated topics, replication on some instances, and an Actions block.
2. Compiles ampsctl's bytecode (as an install does), then times, on all files at once:
   (a) the library call behind `ampsctl validate` (`ampsctl.config.lint.lint_paths`) in
       this process, cold (the XSD is compiled inside the timed call, as xmllint does);
   (b) one CLI run `ampsctl validate bench/out/*.xml --format json > /dev/null`;
   (c) the peer, `xmllint --noout --schema schemas/amps-config.xsd bench/out/*.xml`;
   each as the median of --repeat runs, and prints (a)/(c) and (b)/(c) against 1.5x. CPU
   time (user + system, worker processes included) is shown too: on a busy machine the
   wall times measure the other load as well, the CPU times hardly change.
   The library run needs a fresh process for each repeat to stay cold, so (a) runs in
   a child process too.
3. Measures `ampsctl --help` against `python -c pass` (median of --startup-runs) and prints
   the difference against the 120 ms budget.

Nothing here asserts: the script prints figures. Exit codes: 0 done, 3 the generated configs
are not well formed / not accepted by the schema, 4 xmllint or the venv is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from report import table, verdict

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
XSD = ROOT / "schemas" / "amps-config.xsd"
CONFIGS = 200
SEED = 1729
TARGET_RATIO = 1.5
TARGET_STARTUP_MS = 120.0

# --------------------------------------------------------------------------------------
# config generator
# --------------------------------------------------------------------------------------

DOMAINS = ["orders", "fills", "quotes", "positions", "risk", "prices", "trades", "allocations", "accounts", "instruments"]
REGIONS = ["emea", "apac", "amer", "latam", "nordics", "japan"]
# (message type, weight, key candidates); names avoid regex characters (`.`), as real topic
# names that queues and the transaction log refer to literally do.
MESSAGE_TYPES = [
    ("json", 80, ["/id", "/symbol", "/account", "/region", "/venue", "/desk"]),
    ("xml", 10, ["/Order/Id", "/Order/Symbol", "/Order/Account"]),
    ("nvfix", 10, ["/11", "/55", "/1", "/207"]),
]
INTERVALS = ["30s", "5m", "15m", "1h", "12h", "1d", "7d"]
SLABS = ["1MB", "4MB", "8MB", "16MB", "64MB"]


@dataclass
class SowTopic:
    name: str
    message_type: str
    keys: list[str]
    transient: bool
    in_txlog: bool


@dataclass
class GeneratedStats:
    files: int = 0
    bytes: int = 0
    topics: int = 0
    queues: int = 0
    views: int = 0
    conflated: int = 0
    lines: int = 0


@dataclass
class _Writer:
    lines: list[str] = field(default_factory=list)
    depth: int = 0

    def open(self, tag: str) -> None:
        self.lines.append(f"{'  ' * self.depth}<{tag}>")
        self.depth += 1

    def close(self, tag: str) -> None:
        self.depth -= 1
        self.lines.append(f"{'  ' * self.depth}</{tag}>")

    def leaf(self, tag: str, value: object) -> None:
        self.lines.append(f"{'  ' * self.depth}<{tag}>{escape(str(value))}</{tag}>")

    def comment(self, text: str) -> None:
        self.lines.append(f"{'  ' * self.depth}<!-- {text} -->")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _pick_type(rng: random.Random) -> tuple[str, list[str]]:
    roll = rng.randrange(100)
    for name, weight, keys in MESSAGE_TYPES:
        if roll < weight:
            return name, keys
        roll -= weight
    return MESSAGE_TYPES[0][0], MESSAGE_TYPES[0][2]


def build_config(index: int, seed: int) -> tuple[str, Counter[str]]:
    """One config as text, and how many of each kind of entry it holds."""
    rng = random.Random(f"{seed}:{index}")  # str seeds hash with sha512: stable across runs
    region = REGIONS[index % len(REGIONS)]
    instance = f"amps-{region}-{index:03d}"
    port = 9000 + (index % 90) * 10
    n_topics = rng.randint(50, 500)
    replicated = index % 3 == 0
    counts: Counter[str] = Counter()

    topics: list[SowTopic] = []
    used: set[str] = set()
    while len(topics) < n_topics:
        name = f"{rng.choice(DOMAINS)}_{region}_{rng.randrange(10000):04d}"
        if name in used:
            continue
        used.add(name)
        message_type, key_pool = _pick_type(rng)
        transient = rng.random() < 0.15
        keys = rng.sample(key_pool, rng.randint(1, min(3, len(key_pool))))
        topics.append(SowTopic(name, message_type, keys, transient, transient or rng.random() < 0.4))
    n_queues = max(2, n_topics // 25)
    queue_specs = []
    for q in range(n_queues):
        domain = rng.choice(DOMAINS)
        kind = "GroupLocalQueue" if q % 10 == 9 else "LocalQueue" if q % 5 == 4 else "Queue"
        queue_specs.append((kind, f"queue_{domain}_{q:03d}", f"work_{domain}_{q:03d}"))

    w = _Writer()
    w.lines.append('<?xml version="1.0" encoding="UTF-8"?>')
    w.comment(f"generated by bench/lint.py (seed {seed}, config {index}); {n_topics} SOW topics")
    w.open("AMPSConfig")
    w.leaf("Name", instance)
    w.leaf("Group", f"{region}-group")
    w.leaf("Description", f"{region.upper()} order flow instance {index}")
    w.leaf("MessageMemoryLimit", rng.choice(["4GB", "10GB", "16GB"]))
    w.leaf("SOWStatsInterval", "10s")

    w.open("Admin")
    w.leaf("InetAddr", f"localhost:{port + 8}")
    w.leaf("FileName", "./stats.db")
    w.leaf("Interval", "10s")
    w.close("Admin")

    w.open("Transports")
    for offset, (name, mtype) in enumerate([("json-tcp", "json"), ("xml-tcp", "xml"), ("nvfix-tcp", "nvfix")]):
        w.open("Transport")
        w.leaf("Name", name)
        w.leaf("Type", "tcp")
        w.leaf("InetAddr", port + offset)
        w.leaf("Protocol", "amps")
        w.leaf("MessageType", mtype)
        w.close("Transport")
    w.open("Transport")
    w.leaf("Name", "websocket-any")
    w.leaf("Type", "tcp")
    w.leaf("InetAddr", port + 5)
    w.leaf("Protocol", "websocket")
    w.close("Transport")
    if replicated:
        w.open("Transport")
        w.leaf("Name", "amps-replication")
        w.leaf("Type", "amps-replication")
        w.leaf("InetAddr", port + 4)
        w.close("Transport")
    w.close("Transports")

    if rng.random() < 0.3:
        w.open("MessageTypes")
        w.open("MessageType")
        w.leaf("Name", "json")
        w.leaf("Module", "json")
        w.leaf("EarlyTerminationOptimization", "true")
        w.close("MessageType")
        w.close("MessageTypes")

    w.open("TransactionLog")
    w.leaf("JournalDirectory", "./journal")
    w.leaf("JournalArchiveDirectory", "/archive/amps/journal")
    w.leaf("PreallocatedJournalFiles", 2)
    w.leaf("JournalSize", rng.choice(["1GB", "2GB", "512MB"]))
    w.leaf("FlushInterval", rng.choice(["10ms", "100ms"]))
    for topic in topics:
        if topic.in_txlog:
            w.open("Topic")
            w.leaf("Name", topic.name)
            w.leaf("MessageType", topic.message_type)
            w.close("Topic")
    for _kind, _name, underlying in queue_specs:
        w.open("Topic")
        w.leaf("Name", underlying)
        w.leaf("MessageType", "json")
        w.close("Topic")
    w.close("TransactionLog")

    w.open("SOW")
    for topic in topics:
        counts["topics"] += 1
        w.open("Topic")
        w.leaf("Name", topic.name)
        w.leaf("MessageType", topic.message_type)
        for key in topic.keys:
            w.leaf("Key", key)
        if topic.transient:
            w.leaf("Durability", "transient")
            if rng.random() < 0.5:
                w.leaf("RecoveryPoint", "now")
        else:
            w.leaf("FileName", "./sow/%n.sow")
            if rng.random() < 0.5:
                w.leaf("Durability", "persistent")
        if rng.random() < 0.2:
            w.leaf("Expiration", rng.choice([*INTERVALS, "enabled"]))
        if rng.random() < 0.25:
            w.leaf("SlabSize", rng.choice(SLABS))
        if topic.message_type == "json" and rng.random() < 0.1:
            w.open("HashIndex")
            w.leaf("Key", "/status")
            w.close("HashIndex")
        w.close("Topic")
    for kind, name, underlying in queue_specs:
        counts["queues"] += 1
        w.open(kind)
        w.leaf("Name", name)
        w.leaf("MessageType", "json")
        w.leaf("UnderlyingTopic", underlying)
        w.leaf("Semantics", "at-least-once")
        w.leaf("LeasePeriod", rng.choice(["30s", "60s", "5m"]))
        w.leaf("MaxPerSubscriptionBacklog", rng.choice([1, 10, 100]))
        if rng.random() < 0.5:
            w.leaf("MaxDeliveries", 5)
        if rng.random() < 0.3:
            w.leaf("Expiration", "1d")
        if kind == "GroupLocalQueue":
            w.leaf("InitialOwner", instance)
        w.close(kind)
    json_topics = [t for t in topics if t.message_type == "json"]
    for v, topic in enumerate(rng.sample(json_topics, min(len(json_topics), max(1, n_topics // 40)))):
        counts["views"] += 1
        w.open("View")
        w.leaf("Name", f"view_{topic.name}_{v}")
        w.leaf("MessageType", "json")
        w.leaf("UnderlyingTopic", topic.name)
        w.open("Projection")
        w.leaf("Field", "/region")
        w.leaf("Field", "COUNT(/id) AS /count")
        w.leaf("Field", "SUM(/qty) AS /total_qty")
        w.close("Projection")
        w.open("Grouping")
        w.leaf("Field", "/region")
        w.close("Grouping")
        if rng.random() < 0.5:
            w.leaf("Filter", "/status != 'cancelled' AND /qty > 0")
        w.close("View")
    for topic in rng.sample(topics, max(1, n_topics // 50)):
        counts["conflated"] += 1
        w.open("ConflatedTopic")
        w.leaf("Name", f"{topic.name}-C")
        w.leaf("UnderlyingTopic", topic.name)
        w.leaf("MessageType", topic.message_type)
        w.leaf("Interval", rng.choice(["500ms", "1s", "5s"]))
        w.close("ConflatedTopic")
    w.close("SOW")

    w.open("Logging")
    w.open("Target")
    w.leaf("Protocol", "file")
    w.leaf("FileName", "./logs/%Y-%m-%dT%H%M%S-%n.log")
    w.leaf("Level", "info")
    w.leaf("RotationThreshold", "2G")
    w.close("Target")
    w.open("Target")
    w.leaf("Protocol", "stdout")
    w.leaf("Level", "error")
    w.close("Target")
    if rng.random() < 0.3:
        w.open("Target")
        w.leaf("Protocol", "syslog")
        w.leaf("Level", "warning")
        w.leaf("Ident", instance)
        w.leaf("Facility", "LOG_LOCAL3")
        w.close("Target")
    w.close("Logging")

    if replicated:
        peer = f"amps-{region}-{(index + 1) % CONFIGS:03d}"
        w.open("Replication")
        w.open("Destination")
        w.leaf("Name", peer)
        w.leaf("Group", f"{region}-group")
        w.leaf("SyncType", "sync")
        w.open("Transport")
        w.leaf("Type", "amps-replication")
        w.leaf("InetAddr", f"{peer}.example.com:{port + 4}")
        w.close("Transport")
        for topic in [t for t in topics if t.in_txlog][:10]:
            w.open("Topic")
            w.leaf("Name", topic.name)
            w.leaf("MessageType", topic.message_type)
            w.close("Topic")
        w.close("Destination")
        w.close("Replication")

    w.open("Actions")
    _action(w, ("amps-action-on-schedule", {"Every": "Sunday at 03:30", "Name": "weekly-journal"}), [
        ("amps-action-do-archive-journal", {"Age": "1d"}),
        ("amps-action-do-remove-journal", {"Age": "7d"}),
    ])
    _action(w, ("amps-action-on-schedule", {"Every": "1h"}), [
        ("amps-action-do-compress-files", {"Age": "1d", "Pattern": "./logs/*.log"}),
    ])
    kind, name, _underlying = queue_specs[0]
    _action(w, ("amps-action-on-sow-expire-message", {"Topic": name, "MessageType": "json", "Reason": "max_deliveries"}), [
        ("amps-action-do-publish-message", {
            "Topic": "dead_letters", "MessageType": "json",
            "Data": '{"reason":"{{AMPS_REASON}}","original":{{AMPS_DATA}}}',
        }),
    ])
    w.close("Actions")
    w.close("AMPSConfig")
    return w.text(), counts


def _action(w: _Writer, on: tuple[str, dict[str, str]], steps: list[tuple[str, dict[str, str]]]) -> None:
    w.open("Action")
    for tag, (module, options) in [("On", on), *(("Do", step) for step in steps)]:
        w.open(tag)
        w.leaf("Module", module)
        if options:
            w.open("Options")
            for key, value in options.items():
                w.leaf(key, value)
            w.close("Options")
        w.close(tag)
    w.close("Action")


def generate(out: Path, count: int, seed: int) -> tuple[list[Path], GeneratedStats]:
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.xml"):
        stale.unlink()
    stats = GeneratedStats()
    paths = []
    for index in range(count):
        text, counts = build_config(index, seed)
        path = out / f"amps-{index:03d}.xml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
        stats.files += 1
        stats.bytes += len(text.encode())
        stats.lines += text.count("\n")
        stats.topics += counts["topics"]
        stats.queues += counts["queues"]
        stats.views += counts["views"]
        stats.conflated += counts["conflated"]
    return paths, stats


# --------------------------------------------------------------------------------------
# measurements
# --------------------------------------------------------------------------------------

# Run in a child process so that every repeat is cold (imports and XSD compile excluded
# from nothing but the interpreter start): prints elapsed seconds and the findings.
_LIBRARY_RUN = r"""
import json, os, sys, time
t0 = time.perf_counter()
from ampsctl.config.lint import LintOptions, lint_paths
t1 = time.perf_counter()
c1 = os.times()
report = lint_paths(sys.argv[2:], LintOptions(env={}, jobs=int(sys.argv[1])))
t2 = time.perf_counter()
c2 = os.times()
cpu = sum(b - a for a, b in zip(c1[:4], c2[:4]))  # user + system, this process and its workers
findings = [[f.severity.label, f.code, str(f.location), f.message] for f in report.findings]
print(json.dumps({"import": t1 - t0, "lint": t2 - t1, "cpu": cpu, "findings": findings}))
"""


@dataclass
class Timed:
    """Median wall time and median CPU time (user + system, child processes included) of runs.

    The target is on wall time, but on a busy machine wall time measures the other load too;
    CPU time hardly changes with it, so the table shows both.
    """

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def add(self, wall: float, cpu: float) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)

    @property
    def s(self) -> float:
        return statistics.median(self.wall)

    @property
    def cpu_s(self) -> float:
        return statistics.median(self.cpu)


def _run(cmd: list[str], ok: tuple[int, ...] = (0,), timed: Timed | None = None) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        sys.stderr.write(done.stderr.decode(errors="replace")[-2000:])
        raise SystemExit(f"error: {' '.join(cmd[:3])} ... exited with {done.returncode}")
    if timed is not None:
        timed.add(elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed


def compile_bytecode(python: str) -> None:
    """Write ampsctl's .pyc files, as installing it does. Otherwise, with PYTHONDONTWRITEBYTECODE
    set (some CI images and containers set it) or a tree that was just edited, every timed run
    would compile the modules it imports from source, which no installed ampsctl does."""
    subprocess.run([python, "-m", "compileall", "-q", str(ROOT / "ampsctl")], check=True, stdout=subprocess.DEVNULL, cwd=ROOT)


def time_library(python: str, paths: list[str], repeat: int, jobs: int = 0) -> tuple[Timed, float, list[list[str]]]:
    """Lint times of fresh processes; ``jobs`` as ``--jobs`` (0 = one worker per CPU)."""
    lint, imports, findings = Timed(), [], []
    for _ in range(repeat):
        done = subprocess.run([python, "-c", _LIBRARY_RUN, str(jobs), *paths], capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            sys.stderr.write(done.stderr[-2000:])
            raise SystemExit("error: the library run failed")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        lint.add(result["lint"], result["cpu"])
        imports.append(result["import"])
        findings = result["findings"]
    return lint, statistics.median(imports), findings


def startup(python: str, ampsctl: str, runs: int) -> tuple[float, float]:
    def median_ms(cmd: list[str]) -> float:
        _run(cmd)  # warm the page cache and .pyc files
        return statistics.median(_run(cmd) for _ in range(runs)) * 1000

    return median_ms([ampsctl, "--help"]), median_ms([python, "-c", "pass"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=CONFIGS, help="number of configs to generate (default %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--repeat", type=int, default=3, help="runs per lint measurement; the median is shown")
    parser.add_argument("--startup-runs", type=int, default=15, help="runs per start-up measurement")
    parser.add_argument("--generate-only", action="store_true", help="write bench/out/ and stop")
    args = parser.parse_args(argv)

    bindir = Path(sys.executable).parent
    python = sys.executable
    ampsctl = shutil.which("ampsctl", path=str(bindir)) or shutil.which("ampsctl")
    xmllint = shutil.which("xmllint")
    if not args.generate_only:
        if xmllint is None:
            print("error: xmllint not found; it is the peer of this benchmark.\n"
                  "  install it with `apt-get install libxml2-utils` (Debian/Ubuntu), or run `make bench` as root",
                  file=sys.stderr)
            return 4
        if ampsctl is None:
            print("error: the ampsctl command is not installed; run `make bench` (it sets up .venv)", file=sys.stderr)
            return 4

    files, stats = generate(OUT, args.configs, args.seed)
    rel = [str(p.relative_to(ROOT)) for p in files]
    print(f"generated {stats.files} configs in {OUT.relative_to(ROOT)}/: {stats.bytes / 1e6:.1f} MB, {stats.lines:,} lines, "
          f"{stats.topics:,} SOW topics, {stats.queues:,} queues, {stats.views:,} views, {stats.conflated:,} conflated topics")
    if args.generate_only:
        return 0

    xsd = str(XSD.relative_to(ROOT))
    xmllint_cmd = [xmllint, "--noout", "--schema", xsd, *rel]
    check = subprocess.run(xmllint_cmd, capture_output=True, text=True, cwd=ROOT)
    if check.returncode != 0:
        print("error: xmllint rejects generated configs (a bug in bench/lint.py or the XSD):", file=sys.stderr)
        print("\n".join(line for line in check.stderr.splitlines() if "validates" not in line)[:3000], file=sys.stderr)
        return 3

    compile_bytecode(python)
    lib, import_s, findings = time_library(python, rel, args.repeat)
    serial, _, _ = time_library(python, rel, args.repeat, jobs=1)
    cli, peer = Timed(), Timed()
    for _ in range(args.repeat):
        _run([ampsctl, "validate", *rel, "--format", "json"], ok=(0, 1), timed=cli)
        _run(xmllint_cmd, timed=peer)
    lib_s, serial_s, cli_s, xmllint_s = lib.s, serial.s, cli.s, peer.s
    help_ms, python_ms = startup(python, ampsctl, args.startup_runs)

    by_severity = Counter(f[0] for f in findings)
    by_code = Counter((f[0], f[1]) for f in findings)
    print(f"findings on the generated configs: {by_severity['error']} errors, {by_severity['warning']} warnings, "
          f"{by_severity['info']} infos")
    for (severity, code), n in sorted(by_code.items(), key=lambda item: (-item[1], item[0])):
        example = next(f for f in findings if f[1] == code)
        print(f"  {n:6d} {severity:7s} {code:9s} e.g. {example[2]}: {example[3]}")
    if by_severity["error"]:
        print("  warning: a realistic config should have no errors; fix bench/lint.py or the rule above")
    print()

    def cpu(timed: Timed) -> tuple[str, str]:
        return f"{timed.cpu_s:.2f} s", f"{timed.cpu_s / peer.cpu_s:.2f}x"

    rows = [
        ("measurement", "time", "vs xmllint", "target", "result", "CPU time", "CPU vs xmllint"),
        (f"(a) library lint_paths, {stats.files} files, one call", f"{lib_s:.2f} s", f"{lib_s / xmllint_s:.2f}x",
         f"<= {TARGET_RATIO}x", verdict(lib_s / xmllint_s <= TARGET_RATIO), *cpu(lib)),
        (f"    the same with --jobs 1 (no workers, {os.cpu_count()} CPUs here)", f"{serial_s:.2f} s",
         f"{serial_s / xmllint_s:.2f}x", "", "", *cpu(serial)),
        ("    (imports before (a), not included)", f"{import_s * 1000:.0f} ms", "", "", "", "", ""),
        ("(b) ampsctl validate --format json, one run", f"{cli_s:.2f} s", f"{cli_s / xmllint_s:.2f}x",
         f"<= {TARGET_RATIO}x", verdict(cli_s / xmllint_s <= TARGET_RATIO), *cpu(cli)),
        ("(c) xmllint --noout --schema (peer)", f"{xmllint_s:.2f} s", "1.00x", "", "", *cpu(peer)),
        ("ampsctl --help", f"{help_ms:.0f} ms", "", "", "", "", ""),
        ("python -c pass", f"{python_ms:.0f} ms", "", "", "", "", ""),
        ("start-up overhead (difference)", f"{help_ms - python_ms:.0f} ms", "", f"<= {TARGET_STARTUP_MS:.0f} ms",
         verdict(help_ms - python_ms <= TARGET_STARTUP_MS), "", ""),
    ]
    print(table(rows))
    print(f"\nmedians of {args.repeat} lint runs and {args.startup_runs} start-up runs; "
          f"python {sys.version.split()[0]}, {subprocess.run([xmllint, '--version'], capture_output=True, text=True).stderr.splitlines()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
