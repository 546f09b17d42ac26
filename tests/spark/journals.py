"""Generated journals for the Spark tests: many topics and every command the SOW replays.

``generate`` writes a deterministic (seeded) journal mixing, over several SOW topics (generated
keys, publisher keys, a Pattern topic with two concrete topics and History, per-message and
topic-default expiration) and one topic without a SOW:

* publish and delta_publish (a delta of a key never published is stored as it is);
* sow_delete by keys (several keys, unknown keys), by data, and by filter (rare, as in life);
* EXPIRE records for stored keys; expirations of 1-60 s against a 10 ms record step, so
  records expire on write, on the final sweep, and not at all;
* timestamps that occasionally step back (journal timestamps need not increase), so a
  timestamp as-of point is "before the first record stamped after T";
* a few records the SOW refuses (no key field; a message that is not JSON), for ``keep_going``.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import orjson

from ampsctl.journal.record import Command, sow_delete_payload
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from ampsctl.messages.keys import generate_key
from ampsctl.sow.spec import TopicSpec

SECOND = 1_000_000
T0 = 1_767_225_600 * SECOND  # 2026-01-01T00:00:00Z
STEP = 10_000  # µs between records


def _spec(name: str, keys: tuple[str, ...], **changes: object) -> TopicSpec:
    base = TopicSpec(name=name, message_type="json", key_fields=keys, key_domain=None, expiration=None,
                     hash_indexes=(), indexes=(), history_window=None, history_granularity=None, pattern=False,
                     persistent=True, recovery_point="epoch", file_name="sow/%n.sow")
    return replace(base, **changes)  # type: ignore[arg-type]


SPECS = (
    _spec("orders", ("/id",), expiration=0, hash_indexes=(("/status",),)),  # per-message expiration only
    _spec("prices", ("/sym",), pattern=True, regex=r"^prices\.", expiration=30,  # default 30 s lifetime
          history_window=120, history_granularity=2),  # History: a 2-minute window, 2 s periods
    _spec("accounts", (), expiration=None),  # publisher SowKeys; expiration not processed
)
FILTERS = ("/qty > 900", "/status = 'closed'", "/px < 5 AND /venue = 'X'", "/id BETWEEN 10 AND 40")


def generate(directory: Path, count: int, *, seed: int = 8, segment_bytes: int = 1 << 20) -> None:
    rng = random.Random(seed)
    timestamp = T0
    with JournalWriter.open(directory, segment_bytes=segment_bytes, fsync=FsyncPolicy.NEVER) as writer:
        for _ in range(count):
            timestamp += STEP if rng.random() > 0.02 else -rng.randrange(1, 50) * STEP
            command, topic, payload, fields = _one(rng)
            writer.append(timestamp, command, topic, "json", payload, client_name=f"pub-{rng.randrange(3)}", **fields)


def _one(rng: random.Random) -> tuple[Command, str, bytes, dict[str, object]]:
    roll = rng.random()
    family = rng.random()
    expiration = rng.choice((None, None, None, 0, 1, 5, 60))
    if family < 0.45:
        return _orders(rng, roll, expiration)
    if family < 0.75:
        return _prices(rng, roll, expiration)
    if family < 0.95:
        return _accounts(rng, roll, expiration)
    return Command.PUBLISH, "audit", orjson.dumps({"n": rng.randrange(100)}), {}


def _orders(rng: random.Random, roll: float, expiration: int | None) -> tuple[Command, str, bytes, dict[str, object]]:
    key = rng.randrange(2000)
    doc = {"id": key, "qty": rng.randrange(1000), "status": rng.choice(("open", "open", "filled", "closed"))}
    if roll < 0.0005:
        return Command.SOW_DELETE, "orders", sow_delete_payload(filter=rng.choice(FILTERS)), {}
    if roll < 0.0008:
        return Command.PUBLISH, "orders", orjson.dumps({"qty": 1}), {}  # no /id: refused
    if roll < 0.001:
        return Command.DELTA_PUBLISH, "orders", b'{"id": 5, "qty": ', {}  # not JSON: refused
    if roll < 0.55:
        return Command.PUBLISH, "orders", orjson.dumps(doc), {"expiration": expiration}
    if roll < 0.85:
        delta = {"id": key, rng.choice(("qty", "status", "note")): rng.choice((rng.randrange(1000), "x", "closed"))}
        return Command.DELTA_PUBLISH, "orders", orjson.dumps(delta), {"expiration": expiration}
    if roll < 0.90:
        keys = [generate_key("orders", [rng.randrange(2000)]) for _ in range(rng.randrange(0, 4))] + ["nope"]
        return Command.SOW_DELETE, "orders", sow_delete_payload(keys=keys), {}
    if roll < 0.95:
        return Command.SOW_DELETE, "orders", sow_delete_payload(data=orjson.dumps({"id": key}).decode()), {}
    return Command.EXPIRE, "orders", b"", {"sow_key": generate_key("orders", [key])}


def _prices(rng: random.Random, roll: float, expiration: int | None) -> tuple[Command, str, bytes, dict[str, object]]:
    topic = rng.choice(("prices.us", "prices.eu"))
    sym = f"S{rng.randrange(800)}"
    doc = {"sym": sym, "px": rng.randrange(100), "venue": rng.choice("XYZ")}
    if roll < 0.0005:
        return Command.SOW_DELETE, topic, sow_delete_payload(filter=rng.choice(FILTERS)), {}
    if roll < 0.6:
        return Command.PUBLISH, topic, orjson.dumps(doc), {"expiration": expiration}
    if roll < 0.9:
        return Command.DELTA_PUBLISH, topic, orjson.dumps({"sym": sym, "px": rng.randrange(100)}), {"expiration": expiration}
    return Command.SOW_DELETE, topic, sow_delete_payload(data=orjson.dumps({"sym": sym}).decode()), {}


def _accounts(rng: random.Random, roll: float, expiration: int | None) -> tuple[Command, str, bytes, dict[str, object]]:
    key = f"acct{rng.randrange(500)}"
    doc = {"owner": key, "balance": rng.randrange(10_000), "qty": rng.randrange(1000)}
    if roll < 0.0005:
        return Command.SOW_DELETE, "accounts", sow_delete_payload(filter="/balance > 5000"), {}
    if roll < 0.6:
        return Command.PUBLISH, "accounts", orjson.dumps(doc), {"sow_key": key, "expiration": expiration}
    if roll < 0.85:
        return Command.DELTA_PUBLISH, "accounts", orjson.dumps({"balance": rng.randrange(10_000)}), {"sow_key": key}
    if roll < 0.95:
        return Command.SOW_DELETE, "accounts", sow_delete_payload(keys=[key, f"acct{rng.randrange(500)}"]), {}
    return Command.EXPIRE, "accounts", b"", {"sow_key": key}
