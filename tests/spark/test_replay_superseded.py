"""The Spark replay's shortcut: a key's run without the publishes the next record republishes
replays to the same result as the whole run (record, expiry count, errors)."""

from __future__ import annotations

import random

import orjson
import pytest

from ampsctl.journal.record import Command, JournalRecord, sow_delete_payload
from ampsctl.messages.keys import generate_key
from ampsctl.pipeline.replay import replay_key
from ampsctl.pipeline.spark_compact import _superseded_dropped
from journals import SECOND, T0, _spec

SPECS = (_spec("orders", ("/id",), expiration=5), _spec("accounts", (), expiration=None), _spec("ticks", ("/id",)))


def _run(rng: random.Random, spec_name: str) -> list[JournalRecord]:
    key = generate_key(spec_name, [7]) if spec_name != "accounts" else "k7"
    records = []
    timestamp = T0
    for sequence in range(1, rng.randrange(2, 30)):
        timestamp += rng.choice((SECOND // 10, 3 * SECOND, 10 * SECOND))
        roll = rng.random()
        expiration = rng.choice((None, 0, 1, 4, 20, -1, 10**13))  # the last two are refused by the SOW
        sow_key = key if spec_name == "accounts" else None
        if roll < 0.6:
            command, payload = Command.PUBLISH, {"id": 7, "v": sequence}
        elif roll < 0.8:
            command, payload = Command.DELTA_PUBLISH, rng.choice(({"id": 7, "w": sequence}, {"id": 7, "v": [1]}))
        elif roll < 0.9:
            command, payload, expiration = Command.SOW_DELETE, orjson.loads(sow_delete_payload(keys=[key])), None
        else:
            command, payload, expiration = Command.EXPIRE, {}, None
            sow_key = key
        records.append(JournalRecord(sequence, timestamp, command, spec_name, "json",
                                     orjson.dumps(payload) if payload else b"", sow_key, expiration))
    return records


@pytest.mark.parametrize("seed", range(40))
def test_same_replay_without_superseded_publishes(seed: int) -> None:
    rng = random.Random(seed)
    spec = rng.choice(SPECS)
    run = _run(rng, spec.name)
    now = run[-1].timestamp + rng.choice((0, SECOND, 30 * SECOND))
    key = generate_key(spec.name, [7]) if spec.key_fields else "k7"
    whole = replay_key(spec, key, run, now)
    kept, starts = _superseded_dropped(run)
    short = replay_key(spec, key, kept, now, starts)
    assert (whole.record, whole.expired, [str(e) for e in whole.errors]) == \
           (short.record, short.expired, [str(e) for e in short.errors])
    if not spec.expiration_enabled:  # the shortcut's topics (spark_compact._plain): the place in the file too
        assert whole.first == short.first


def test_it_drops_something() -> None:
    runs = [_run(random.Random(seed), "orders") for seed in range(40)]
    assert sum(len(run) - len(_superseded_dropped(run)[0]) for run in runs) > 40


def test_first_is_where_the_record_was_stored_anew() -> None:
    spec = SPECS[2]  # ticks: no expiration
    key = generate_key("ticks", [7])
    run = [JournalRecord(n, T0 + n, command, "ticks", "json", payload, sow_key)
           for n, command, payload, sow_key in [
               (1, Command.PUBLISH, b'{"id":7,"v":1}', None), (2, Command.PUBLISH, b'{"id":7,"v":2}', None),
               (3, Command.SOW_DELETE, sow_delete_payload(keys=[key]), None),
               (4, Command.PUBLISH, b'{"id":7,"v":4}', None), (5, Command.PUBLISH, b'{"id":7,"v":5}', None),
               (6, Command.DELTA_PUBLISH, b'{"id":7,"w":6}', None)]]
    assert replay_key(spec, key, run, None).first == 4
    kept, starts = _superseded_dropped(run)
    assert [r.sequence for r in kept] == [2, 3, 5, 6] and starts == {2: 1, 5: 4}
    assert replay_key(spec, key, kept, None, starts).first == 4
