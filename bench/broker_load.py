#!/usr/bin/env python3
"""The load generators of bench/broker.py: one publisher or subscriber per process.

``python bench/broker_load.py --role publish|subscribe --proto amps|redis ...`` prints one JSON
line. The generators use blocking sockets and frames encoded before the clock starts, send
pipelined chunks and count what comes back in bulk (the peer, redis-benchmark, is C), and
report their own CPU time so that a run can show they are not the bottleneck.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time
from typing import Any

PAYLOAD_SIZE = 100

_PREFIX = struct.Struct(">I")


def payload(n: int) -> bytes:
    """A 100-byte JSON document with id ``n``."""
    head = b'{"id":%d,"sym":"MSFT","px":123.45,"qty":100,"side":"buy","note":"' % n
    return head + b"x" * (PAYLOAD_SIZE - len(head) - 2) + b'"}'


# --------------------------------------------------------------------------------------
# wire formats: what the generator sends and how it counts what comes back
# --------------------------------------------------------------------------------------


def amps_frame(header: dict[str, Any], body: bytes = b"") -> bytes:
    head = json.dumps(header, separators=(",", ":")).encode()
    return _PREFIX.pack(len(head) + len(body)) + head + body


def resp(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(arg), arg) for arg in args)


class AmpsCounter:
    """Counts complete length-prefixed frames; keeps the last header it saw."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.last = b""

    def feed(self, data: bytes) -> int:
        buffer = self.buffer
        buffer += data
        pos, end, count, unpack = 0, len(buffer), 0, _PREFIX.unpack_from
        last = -1
        while end - pos >= 4:
            (size,) = unpack(buffer, pos)
            if end - pos - 4 < size:
                break
            last = pos
            pos += 4 + size
            count += 1
        if last >= 0:
            self.last = bytes(buffer[last + 4:pos])
        del buffer[:pos]
        return count


class LineCounter:
    """Redis integer replies (`:1\\r\\n`): one line each."""

    def __init__(self) -> None:
        self.last = b""

    def feed(self, data: bytes) -> int:
        return data.count(b"\n")


class FixedCounter:
    """Redis pub/sub pushes to one channel with one payload size: fixed-size messages."""

    def __init__(self, size: int) -> None:
        self.size, self.pending, self.last = size, 0, b""

    def feed(self, data: bytes) -> int:
        total = self.pending + len(data)
        self.pending = total % self.size
        return total // self.size


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    return sock


def read_frame(sock: socket.socket, counter: AmpsCounter) -> bytes:
    """Block until one more AMPS frame arrived (handshakes only); its bytes."""
    while not counter.feed(sock.recv(1 << 16)):
        pass
    return counter.last


def amps_logon(sock: socket.socket, name: str) -> AmpsCounter:
    counter = AmpsCounter()
    sock.sendall(amps_frame({"c": "logon", "cid": "logon", "client_name": name, "a": "processed"}))
    reply = read_frame(sock, counter)
    if b'"success"' not in reply:
        raise SystemExit(f"logon failed: {reply!r}")
    return counter


# --------------------------------------------------------------------------------------
# roles (each runs in its own process; prints one JSON line)
# --------------------------------------------------------------------------------------


def role_publish(args: argparse.Namespace) -> dict[str, Any]:
    """Publish --count messages: acknowledged and windowed, blasted, or paced at --rate."""
    sock = connect(args.port)
    acks = args.acks
    first = args.first_id
    ids = range(first, first + args.count)
    counter: AmpsCounter | LineCounter
    if args.proto == "amps":
        counter = amps_logon(sock, args.name)
        topic = args.topic
        if acks:
            frames = [amps_frame({"c": "publish", "t": topic, "s": n + 1, "a": "persisted"}, payload(i))
                      for n, i in enumerate(ids)]
        else:
            frames = [amps_frame({"c": "publish", "t": topic}, payload(i)) for i in ids]
    else:
        counter = LineCounter()
        if not acks:
            sock.sendall(resp(b"CLIENT", b"REPLY", b"OFF"))  # no reply, not even to this
        if args.topic == "sowbench":
            frames = [resp(b"HSET", b"sowbench", str(i).encode(), payload(i)) for i in ids]
        else:
            frames = [resp(b"PUBLISH", args.topic.encode(), payload(i)) for i in ids]
    result: dict[str, Any] = {"count": args.count}
    cpu = time.process_time()
    if args.pace:
        result.update(_paced(sock, frames, args.pace))
    else:
        chunks = [b"".join(frames[i:i + args.chunk]) for i in range(0, len(frames), args.chunk)]
        del frames
        result.update(_pipelined(sock, chunks, args.chunk, args.count, args.window if acks else 0, counter))
        if args.proto == "amps" and acks:
            result["last_ack"] = counter.last.decode(errors="replace")
    result["cpu"] = time.process_time() - cpu  # the generator's own CPU seconds while sending
    sock.close()
    return result


def _pipelined(sock: socket.socket, chunks: list[bytes], chunk: int, count: int, window: int,
               counter: AmpsCounter | LineCounter) -> dict[str, Any]:
    start = time.monotonic_ns()
    if not window:  # no acks: TCP flow control is the only brake
        for blob in chunks:
            sock.sendall(blob)
        return {"start": start, "end": time.monotonic_ns(), "acks": 0}
    sent = acked = 0
    sent_chunks = 0
    recv = sock.recv
    while acked < count:
        if sent_chunks < len(chunks) and sent - acked < window:
            sock.sendall(chunks[sent_chunks])
            sent_chunks += 1
            sent = min(count, sent + chunk)
            try:
                data = recv(1 << 20, socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
        else:
            data = recv(1 << 20)
        if not data:
            raise SystemExit(f"the server closed the connection after {acked} acks")
        acked += counter.feed(data)
    return {"start": start, "end": time.monotonic_ns(), "acks": acked}


def _paced(sock: socket.socket, frames: list[bytes], rate: int) -> dict[str, Any]:
    """Send frame n at start + n/rate (or as soon after as the sleep allows); each send time."""
    count = len(frames)
    times = [0] * count
    start = time.monotonic_ns()
    sent = 0
    interval = 1e9 / rate
    while sent < count:
        now = time.monotonic_ns()
        due = min(count, int((now - start) / interval) + 1)
        if due > sent:
            sock.sendall(b"".join(frames[sent:due]))
            for n in range(sent, due):
                times[n] = now
            sent = due
        wait = start + sent * interval - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
    return {"start": start, "end": time.monotonic_ns(), "acks": 0, "times": times}


def role_subscribe(args: argparse.Namespace) -> dict[str, Any]:
    """Subscribe, print "ready", then receive --count messages (timestamped with --times)."""
    sock = connect(args.port)
    counter: AmpsCounter | FixedCounter
    if args.proto == "amps":
        counter = amps_logon(sock, args.name)
        sock.sendall(amps_frame({"c": "subscribe", "cid": "s1", "t": args.topic, "a": "processed"}))
        reply = read_frame(sock, counter)
        if b'"success"' not in reply:
            raise SystemExit(f"subscribe failed: {reply!r}")
    else:
        topic = args.topic.encode()
        sock.sendall(resp(b"SUBSCRIBE", topic))
        confirm = b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(topic), topic)
        got = b""
        while len(got) < len(confirm):
            got += sock.recv(len(confirm) - len(got))
        if got != confirm:
            raise SystemExit(f"subscribe failed: {got!r}")
        counter = FixedCounter(len(resp(b"message", topic, payload(0))))
    print("ready", flush=True)
    cpu = time.process_time()
    count, received, first = args.count, 0, 0
    times: list[int] = []
    recv, clock = sock.recv, time.monotonic_ns
    while received < count:
        data = recv(1 << 20)
        now = clock()
        if not data:
            raise SystemExit(f"the server closed the connection after {received} messages")
        got = counter.feed(data)
        if got and not first:
            first = now
        received += got
        if args.times:
            times.extend([now] * got)
    sock.close()
    return {"first": first, "last": clock(), "count": received, "times": times, "cpu": time.process_time() - cpu}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", choices=("publish", "subscribe"), required=True)
    for option, kind in (("--proto", str), ("--port", int), ("--topic", str), ("--count", int), ("--name", str),
                         ("--first-id", int), ("--pace", int), ("--chunk", int), ("--window", int)):
        parser.add_argument(option, type=kind, default=0 if kind is int else "")
    parser.add_argument("--acks", action="store_true")
    parser.add_argument("--times", action="store_true")
    args = parser.parse_args(argv)
    result = role_publish(args) if args.role == "publish" else role_subscribe(args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
