#!/usr/bin/env python3
"""Benchmark the local broker (`ampsctl broker run`) against Redis pub/sub (issue 7, Performance).

Run with `make bench-broker` or `.venv/bin/python bench/broker.py` (`--help` for options).

The broker runs as a subprocess, `python -m ampsctl broker run --config CFG --port 0 --fsync group`,
with a transaction log recording the topics `bench` and `sowbench`, and `sowbench` a SOW topic
(key /id, persistent). A `redis-server` (no persistence) runs on a free loopback port for the
same run and is stopped afterwards. The load generators are separate processes (this script with
`bench/broker_load.py`), using blocking sockets and frames encoded before the clock starts; publishes are
pipelined (a window of unacknowledged messages, sent in chunks of --chunk frames). Every message
is a 100-byte JSON document. Measurements, each taken against the broker and then against Redis
with the same generator code:

1. ingest: one publisher sends --messages publishes with `s` sequences and `a: persisted` and
   counts the `persisted` acks (one per publish); msgs/s = messages / (last ack - first send).
   Redis: `PUBLISH` with its integer reply counted as the ack (Redis keeps nothing on disk).
   The reference line is `redis-benchmark -c 1 -P <chunk> -n <messages> publish bench <payload>`
   (the median of 3 runs).
2. delivery: a subscriber process subscribes, then one publisher sends --messages publishes
   without acks (Redis: `CLIENT REPLY OFF`); msgs/s = messages / (last delivery received -
   first send). Both sides use the same clock (CLOCK_MONOTONIC).
3. latency: the publisher sends at a fixed --rate (default 10,000 msgs/s) for --seconds; the
   subscriber timestamps each delivery; p50/p99/max of delivery - send, without the first 10 %
   (warm-up). Messages keep their order on one connection and one topic, so the n-th delivery
   is the n-th publish.
4. query: --sow-records records with distinct ids are published to `sowbench` (persisted acks,
   the SOW ingest rate is shown), then one `sow` query with `bs` --batch is timed from the send
   to the `completed` ack, counting the records. Redis: the same records as `HSET sowbench id
   payload`, then `HGETALL sowbench` timed to the last byte of its reply.
5. checkpoint (only with `--only checkpoint`; the broker alone): --sow-records records of
   `sowbench` are published, then the latency run of 3 while the broker's SOW checkpoint
   (every 5 s, on its own thread) writes them.

For the broker, its CPU time per message (user + system, /proc/PID/stat) is shown under the
ingest and delivery rates: it moves much less than the rates when other jobs share the CPUs.
The load generators' own CPU time per message is shown too (for both peers): on 2 CPUs they
share the machine with the broker, and it shows what they take.
`--profile PATH_TO_PY_SPY` samples the broker with py-spy for the whole run (collapsed stacks
in bench/out/broker-profile.txt).

Targets (issue 7): ingest >= 100,000 msgs/s, delivery >= 50,000 msgs/s, p99 < 5 ms. Nothing
asserts on time: exit code 0 when the figures were printed, 1 when a count disagreed, 4 when
redis-server or redis-benchmark is missing (Debian package redis-server).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from broker_load import PAYLOAD_SIZE, _PREFIX, amps_frame, amps_logon, connect, payload, resp
from report import table, verdict

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out" / "broker-bench"
PROFILE = ROOT / "bench" / "out" / "broker-profile.txt"
MESSAGES = 200_000
SOW_RECORDS = 100_000
RATE = 10_000
SECONDS = 5.0
CHUNK = 100
WINDOW = 20_000
BATCH = 100
TARGET_INGEST = 100_000
TARGET_DELIVERY = 50_000
TARGET_P99_MS = 5.0
STEP_TIMEOUT = 300.0  # seconds any one role may take before the run is abandoned

CONFIG = """<AMPSConfig>
  <Name>bench</Name>
  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>0</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  <TransactionLog>
    <JournalDirectory>{dir}/journal</JournalDirectory>
    <FlushInterval>{flush}</FlushInterval>
    <Topic><Name>bench</Name><MessageType>json</MessageType></Topic>
    <Topic><Name>sowbench</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Topic><Name>sowbench</Name><MessageType>json</MessageType><Key>/id</Key><FileName>{dir}/sow/%n.sow</FileName></Topic>
  </SOW>
</AMPSConfig>
"""

# --------------------------------------------------------------------------------------
# the servers
# --------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Servers:
    """The broker and redis-server subprocesses (both stopped by ``stop``)."""

    def __init__(self, directory: Path, fsync: str, flush: str, profile: str | None) -> None:
        self.directory = directory
        self.profiler: subprocess.Popen[bytes] | None = None
        config = directory / "amps.xml"
        config.write_text(CONFIG.format(dir=directory, flush=flush))
        command = [sys.executable, "-m", "ampsctl", "broker", "run", "--config", str(config), "--port", "0",
                   "--fsync", fsync]
        self.broker_log = open(directory / "broker.log", "wb")  # noqa: SIM115
        self.broker = subprocess.Popen(command, cwd=directory, stdout=subprocess.PIPE, stderr=self.broker_log,
                                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert self.broker.stdout is not None
        line = self.broker.stdout.readline().decode()
        if not line.startswith("listening tcp://"):
            self.stop()
            raise SystemExit(f"the broker did not start: {line!r}; see {directory / 'broker.log'}")
        self.amps_port = int(line.rsplit(":", 1)[1].split("/")[0])
        if profile:  # sample the broker (py-spy attaches to its pid) until stop
            self.profiler = subprocess.Popen([profile, "record", "--pid", str(self.broker.pid), "--rate", "250",
                                              "--format", "raw", "--output", str(PROFILE)],
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        self.redis_port = free_port()
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--client-output-buffer-limit", "pubsub 0 0 0", "--dir", str(directory), "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.redis_port), timeout=1) as sock:
                    sock.sendall(resp(b"PING"))
                    if sock.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or self.redis.poll() is not None:
                self.stop()
                raise SystemExit("redis-server did not start")
            time.sleep(0.05)

    def broker_cpu(self) -> float:
        """CPU seconds (user + system) the broker process used so far."""
        fields = (Path("/proc") / str(self.broker.pid) / "stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def port(self, proto: str) -> int:
        return self.amps_port if proto == "amps" else self.redis_port

    def stop(self) -> None:
        if self.profiler is not None and self.profiler.poll() is None:
            self.profiler.send_signal(signal.SIGINT)
            self.profiler.wait(60)
        for process in (getattr(self, "redis", None), self.broker):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT if process is self.broker else signal.SIGTERM)
        for process in (getattr(self, "redis", None), self.broker):
            if process is not None:
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.broker_log.close()


# --------------------------------------------------------------------------------------
# the parent: runs the roles and prints the table
# --------------------------------------------------------------------------------------


def spawn(role: str, **options: Any) -> subprocess.Popen[bytes]:
    command = [sys.executable, str(Path(__file__).resolve().with_name("broker_load.py")), "--role", role]
    for key, value in options.items():
        if value is True:
            command.append(f"--{key.replace('_', '-')}")
        elif value is not None and value is not False:
            command += [f"--{key.replace('_', '-')}", str(value)]
    return subprocess.Popen(command, stdout=subprocess.PIPE)


def result_of(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert process.stdout is not None
    try:
        out, _ = process.communicate(timeout=STEP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        raise SystemExit("a load generator did not finish in time") from None
    if process.returncode:
        raise SystemExit(f"a load generator failed (exit {process.returncode})")
    return json.loads(out.decode().strip().splitlines()[-1])


def subscriber(proto: str, port: int, count: int, *, name: str, times: bool = False) -> subprocess.Popen[bytes]:
    process = spawn("subscribe", proto=proto, port=port, topic="bench", count=count, name=name, times=times)
    assert process.stdout is not None
    if process.stdout.readline().strip() != b"ready":
        raise SystemExit("the subscriber did not get ready")
    return process


def ingest(servers: Servers, proto: str, args: argparse.Namespace, *, topic: str = "bench",
           name: str = "pub-ingest", count: int | None = None) -> dict[str, Any]:
    count = args.messages if count is None else count
    cpu = servers.broker_cpu()
    pub = result_of(spawn("publish", proto=proto, port=servers.port(proto), topic=topic, count=count, name=name,
                          acks=True, chunk=args.chunk, window=args.window))
    pub["rate"] = count / ((pub["end"] - pub["start"]) / 1e9)
    pub["cpu_us"] = (servers.broker_cpu() - cpu) / count * 1e6  # meaningful for the broker only
    pub["generator_us"] = pub["cpu"] / count * 1e6
    return pub


def delivery(servers: Servers, proto: str, args: argparse.Namespace) -> dict[str, Any]:
    port = servers.port(proto)
    sub = subscriber(proto, port, args.messages, name="sub-delivery")
    cpu = servers.broker_cpu()
    pub = result_of(spawn("publish", proto=proto, port=port, topic="bench", count=args.messages, name="pub-delivery",
                          chunk=args.chunk))
    got = result_of(sub)
    return {"rate": got["count"] / ((got["last"] - pub["start"]) / 1e9), "count": got["count"],
            "cpu_us": (servers.broker_cpu() - cpu) / args.messages * 1e6,
            "generator_us": (pub["cpu"] / args.messages * 1e6, got["cpu"] / args.messages * 1e6),
            "publish_rate": args.messages / ((pub["end"] - pub["start"]) / 1e9)}


def latency(servers: Servers, proto: str, args: argparse.Namespace) -> dict[str, Any]:
    port = servers.port(proto)
    count = int(args.rate * args.seconds)
    sub = subscriber(proto, port, count, name="sub-latency", times=True)
    pub = result_of(spawn("publish", proto=proto, port=port, topic="bench", count=count, name="pub-latency",
                          pace=args.rate))
    got = result_of(sub)
    skip = count // 10
    lat = sorted(r - s for r, s in zip(got["times"][skip:], pub["times"][skip:], strict=True))
    offered = count / ((pub["end"] - pub["start"]) / 1e9)

    def pct(p: float) -> float:
        return lat[min(len(lat) - 1, int(p / 100 * len(lat)))] / 1e6

    return {"p50": pct(50), "p99": pct(99), "max": lat[-1] / 1e6, "offered": offered, "count": got["count"]}


def query_amps(port: int, records: int, batch: int) -> dict[str, Any]:
    sock = connect(port)
    counter = amps_logon(sock, "query")
    buffer = bytearray()
    found = frames = 0
    start = time.monotonic_ns()
    sock.sendall(amps_frame({"c": "sow", "cid": "q", "t": "sowbench", "bs": batch, "a": "completed"}))
    done = False
    while not done:
        data = sock.recv(1 << 20)
        if not data:
            raise SystemExit("the broker closed the query connection")
        buffer += data
        pos, end = 0, len(buffer)
        while end - pos >= 4:
            (size,) = _PREFIX.unpack_from(buffer, pos)
            if end - pos - 4 < size:
                break
            head = bytes(buffer[pos + 4:pos + 4 + min(size, 200)])
            pos += 4 + size
            frames += 1
            if head.startswith(b'{"c":"sow"'):
                found += json.loads(head[:head.index(b"}") + 1])["bs"]
            elif b'"completed"' in head:
                done = True
        del buffer[:pos]
    took = (time.monotonic_ns() - start) / 1e9
    sock.close()
    del counter
    return {"seconds": took, "records": found, "frames": frames}


def query_redis(port: int, records: int) -> dict[str, Any]:
    sock = connect(port)
    expected = len(b"*%d\r\n" % (2 * records)) + sum(
        len(b"$%d\r\n%d\r\n" % (len(str(i)), i)) + len(b"$%d\r\n\r\n" % PAYLOAD_SIZE) + PAYLOAD_SIZE
        for i in range(records))
    start = time.monotonic_ns()
    sock.sendall(resp(b"HGETALL", b"sowbench"))
    got = 0
    while got < expected:
        data = sock.recv(1 << 20)
        if not data:
            raise SystemExit("redis closed the query connection")
        got += len(data)
    took = (time.monotonic_ns() - start) / 1e9
    sock.close()
    return {"seconds": took, "records": records if got == expected else -1}


def redis_benchmark(port: int, args: argparse.Namespace) -> float:
    """requests/s of `redis-benchmark ... publish`, the median of 3 runs (one run takes ~0.1 s and is noisy)."""
    rates = []
    for _ in range(3):
        out = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", "1", "-P", str(args.chunk),
                              "-n", str(args.messages), "--csv", "publish", "bench", payload(0).decode()],
                             capture_output=True, text=True, check=True, timeout=STEP_TIMEOUT).stdout
        rows = list(csv.reader(io.StringIO(out)))
        rates.append(float(rows[1][-7]))  # "test","rps",6 latencies; the test name (our payload) has quotes and commas
    return sorted(rates)[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=MESSAGES, help=f"messages per throughput run (default {MESSAGES:,})")
    parser.add_argument("--sow-records", type=int, default=SOW_RECORDS, help=f"records in the queried SOW (default {SOW_RECORDS:,})")
    parser.add_argument("--batch", type=int, default=BATCH, help=f"bs of the sow query (default {BATCH})")
    parser.add_argument("--rate", type=int, default=RATE, help=f"offered msgs/s of the latency run (default {RATE:,})")
    parser.add_argument("--seconds", type=float, default=SECONDS, help=f"length of the latency run (default {SECONDS})")
    parser.add_argument("--chunk", type=int, default=CHUNK, help=f"frames per send (and redis-benchmark -P) (default {CHUNK})")
    parser.add_argument("--window", type=int, default=WINDOW, help=f"unacknowledged publishes allowed (default {WINDOW:,})")
    parser.add_argument("--fsync", choices=("group", "always", "never"), default="group", help="the broker's --fsync (default group)")
    parser.add_argument("--flush-interval", default="10ms", help="the TransactionLog's FlushInterval (default 10ms)")
    parser.add_argument("--only", choices=("ingest", "delivery", "latency", "query", "checkpoint"), action="append",
                        help="run only these measurements (repeatable); checkpoint (latency while a SOW "
                             "checkpoint of --sow-records changed records is written) runs only when named")
    parser.add_argument("--profile", metavar="PY_SPY", help="sample the broker with this py-spy executable "
                        "(collapsed stacks to bench/out/broker-profile.txt)")
    parser.add_argument("--keep", action="store_true", help="keep bench/out/broker-bench/")
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    missing = [tool for tool in ("redis-server", "redis-benchmark") if shutil.which(tool) is None]
    if missing:
        print(f"error: {' and '.join(missing)} not found; install them (sudo apt-get install redis-server) "
              "or run make bench-broker as root", file=sys.stderr)
        return 4
    only = set(args.only or ("ingest", "delivery", "latency", "query"))
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
          f"{' '.join(version[:3])}; loopback; {PAYLOAD_SIZE}-byte JSON messages")
    print(f"broker: --fsync {args.fsync}, FlushInterval {args.flush_interval}, journal recording bench and sowbench; "
          f"generator: 1 publisher process (+1 subscriber), {args.chunk} frames per send, window {args.window:,}")
    servers = Servers(OUT, args.fsync, args.flush_interval, args.profile)
    figures: dict[str, dict[str, Any]] = {}
    checks: list[str] = []
    try:
        if "ingest" in only:
            figures["bench"] = {"rate": redis_benchmark(servers.redis_port, args)}
            for proto in ("amps", "redis"):
                figures[f"ingest-{proto}"] = result = ingest(servers, proto, args)
                if result["acks"] != args.messages:
                    checks.append(f"{proto} ingest: {result['acks']:,} acks for {args.messages:,} publishes")
            if '"s":%d' % args.messages not in figures["ingest-amps"]["last_ack"]:
                checks.append(f"the last persisted ack is not for s={args.messages}: {figures['ingest-amps']['last_ack']}")
        if "delivery" in only:
            for proto in ("amps", "redis"):
                figures[f"delivery-{proto}"] = delivery(servers, proto, args)
        if "latency" in only:
            for proto in ("amps", "redis"):
                figures[f"latency-{proto}"] = latency(servers, proto, args)
        if "checkpoint" in only:  # the SOW changed, then the latency run while a checkpoint writes it
            figures["checkpoint-load"] = ingest(servers, "amps", args, topic="sowbench", name="pub-checkpoint",
                                                count=args.sow_records)
            figures["checkpoint-latency"] = latency(servers, "amps", args)
        if "query" in only:
            for proto in ("amps", "redis"):
                figures[f"load-{proto}"] = ingest(servers, proto, args, topic="sowbench", name="pub-sow",
                                                  count=args.sow_records)
            figures["query-amps"] = query_amps(servers.amps_port, args.sow_records, args.batch)
            figures["query-redis"] = query_redis(servers.redis_port, args.sow_records)
            for proto in ("amps", "redis"):
                if figures[f"query-{proto}"]["records"] != args.sow_records:
                    checks.append(f"{proto} query returned {figures[f'query-{proto}']['records']:,} records, "
                                  f"not {args.sow_records:,}")
    finally:
        servers.stop()
        journal = sum(p.stat().st_size for p in (OUT / "journal").glob("*")) if (OUT / "journal").exists() else 0
        if not args.keep:
            shutil.rmtree(OUT, ignore_errors=True)
    print(f"journal written: {journal / 1e6:.1f} MB")
    print()
    _report(figures, args)
    print()
    if checks:
        print("DISAGREE: " + "; ".join(checks))
        return 1
    print("checks: every publish got its persisted ack (the last one for the last s), every delivery and record arrived")
    return 0


def _report(figures: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    rows: list[tuple[str, ...]] = [("measurement", "ampsctl broker", "redis", "ratio", "target", "result")]
    if "bench" in figures:
        ref = figures["bench"]["rate"]
        ours, peer = figures["ingest-amps"]["rate"], figures["ingest-redis"]["rate"]
        rows.append((f"ingest msgs/s vs redis-benchmark -c 1 -P {args.chunk} publish (median of 3)", f"{ours:,.0f}", f"{ref:,.0f}",
                     f"{ours / ref:.2f}x", f">= {TARGET_INGEST:,}", verdict(ours >= TARGET_INGEST)))
        rows.append(("ingest msgs/s, same generator (persisted acks / PUBLISH replies)", f"{ours:,.0f}", f"{peer:,.0f}",
                     f"{ours / peer:.2f}x", "", ""))
        rows.append(("  broker CPU per ingested message, µs", f"{figures['ingest-amps']['cpu_us']:.1f}", "", "", "", ""))
        rows.append(("  publisher (load generator) CPU per message, µs", f"{figures['ingest-amps']['generator_us']:.1f}",
                     f"{figures['ingest-redis']['generator_us']:.1f}", "", "", ""))
    if "delivery-amps" in figures:
        ours, peer = figures["delivery-amps"]["rate"], figures["delivery-redis"]["rate"]
        rows.append(("publish -> 1 subscriber, delivered msgs/s", f"{ours:,.0f}", f"{peer:,.0f}", f"{ours / peer:.2f}x",
                     f">= {TARGET_DELIVERY:,}", verdict(ours >= TARGET_DELIVERY)))
        rows.append(("  broker CPU per delivered message, µs", f"{figures['delivery-amps']['cpu_us']:.1f}", "", "", "", ""))
        pub_us, sub_us = figures["delivery-amps"]["generator_us"]
        peer_pub, peer_sub = figures["delivery-redis"]["generator_us"]
        rows.append(("  publisher + subscriber (load generators) CPU per message, µs", f"{pub_us:.1f} + {sub_us:.1f}",
                     f"{peer_pub:.1f} + {peer_sub:.1f}", "", "", ""))
    if "latency-amps" in figures:
        a, r = figures["latency-amps"], figures["latency-redis"]
        rate = f"{a['offered']:,.0f}/{r['offered']:,.0f} msgs/s offered"
        rows.append((f"latency p50 ms ({rate})", f"{a['p50']:.3f}", f"{r['p50']:.3f}", f"{a['p50'] / r['p50']:.2f}x", "", ""))
        rows.append(("latency p99 ms", f"{a['p99']:.3f}", f"{r['p99']:.3f}", f"{a['p99'] / r['p99']:.2f}x",
                     f"< {TARGET_P99_MS:g} ms", verdict(a["p99"] < TARGET_P99_MS)))
        rows.append(("latency max ms", f"{a['max']:.3f}", f"{r['max']:.3f}", "", "", ""))
    if "query-amps" in figures:
        la, lr = figures["load-amps"]["rate"], figures["load-redis"]["rate"]
        rows.append((f"SOW load msgs/s ({args.sow_records:,} keyed records; HSET)", f"{la:,.0f}", f"{lr:,.0f}",
                     f"{la / lr:.2f}x", "", ""))
        qa, qr = figures["query-amps"]["seconds"], figures["query-redis"]["seconds"]
        rows.append((f"sow query, {args.sow_records:,} records, bs {args.batch} (s; HGETALL)", f"{qa:.3f}", f"{qr:.3f}",
                     f"{qa / qr:.2f}x", "", ""))
    if "checkpoint-latency" in figures:
        c = figures["checkpoint-latency"]
        rows.append((f"latency p50/p99/max ms during a checkpoint of {args.sow_records:,} changed SOW records",
                     f"{c['p50']:.2f}/{c['p99']:.2f}/{c['max']:.1f}", "", "", f"< {TARGET_P99_MS:g} ms",
                     verdict(c["p99"] < TARGET_P99_MS)))
    print(table(rows))
    print("ratio: ampsctl / redis for rates (above 1 is faster than redis), for times and latencies (above 1 is slower)")


if __name__ == "__main__":
    sys.exit(main())
