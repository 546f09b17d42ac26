"""SOW checkpoints off the loop (broker/checkpoints.py, sow.checkpoint snapshots): a snapshot
is the store at its sequence whatever happens after it, a failed write gives its keys back, and
the server writes a snapshot only once the journal covers it."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from ampsctl.broker.durability import Durability
from ampsctl.broker.run import running_broker
from ampsctl.errors import EnvironmentProblem
from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy
from ampsctl.sow import SowStore
from ampsctl.sow.checkpoint import load_group
from ampsctl.sow.store import TopicGroup
from tests.e2e.e2e_helpers import connect, settings_for, w
from tests.sow.sow_helpers import record, spec

SPECS = {
    "plain": spec(),
    "indexed": spec(hash_indexes=(("/sym",),), indexes=("/qty",)),
    "history": spec(history_window=3600, history_granularity=1),
}


def _publish(store: SowStore, sequence: int, doc: dict[str, Any]) -> None:
    store.apply(record(sequence, Command.PUBLISH, doc))


def _delete(store: SowStore, sequence: int, key_id: int) -> None:
    store.apply(record(sequence, Command.SOW_DELETE, orjson.dumps({"data": orjson.dumps({"id": key_id}).decode()})))


def _file_state(path: Path, group_spec: Any) -> tuple[int, dict[str, bytes]]:
    group = TopicGroup(group_spec)
    meta = load_group(path, group)
    topic = group.topics.get("orders")
    return meta.last_sequence, ({r.key: r.payload for r in topic.records()} if topic is not None else {})


def _live_state(store: SowStore) -> dict[str, bytes]:
    topic = store.groups[0].topics["orders"]
    return {r.key: r.payload for r in topic.records()}


@pytest.mark.parametrize("kind", list(SPECS))
def test_a_snapshot_is_the_store_at_its_sequence_whatever_follows(tmp_path: Path, kind: str) -> None:
    store = SowStore([SPECS[kind]])
    durability = Durability(None, store, tmp_path)
    for n in range(1, 41):
        _publish(store, n, {"id": n % 10, "n": n, "sym": f"s{n % 3}", "qty": n})
    durability.checkpoint()  # the first one writes a whole file
    for n in range(41, 61):
        _publish(store, n, {"id": n % 15, "n": n, "sym": "x", "qty": n})
    _delete(store, 61, 3)
    at_snapshot = _live_state(store)
    snapshots = durability.snapshot()
    assert [snapshot.sequence for _, snapshot in snapshots] == [61]
    assert not store.groups[0].dirty  # the snapshot took the changed keys
    # Changes after the snapshot (updates of snapshotted keys, inserts, deletes) while it is written:
    for n in range(62, 80):
        _publish(store, n, {"id": n % 20, "n": n, "sym": "y", "qty": -n})
    _delete(store, 80, 4)
    assert durability.write(snapshots) == 1
    path = tmp_path / "sow" / "orders.json.sow"
    assert _file_state(path, SPECS[kind]) == (61, at_snapshot)
    assert store.groups[0].dirty  # what changed after the snapshot goes to the next checkpoint
    durability.checkpoint()
    assert _file_state(path, SPECS[kind]) == (80, _live_state(store))


def test_a_failed_write_gives_its_keys_back(tmp_path: Path) -> None:
    store = SowStore([spec(file_name="blocked/%n.sow")])
    (tmp_path / "blocked").write_text("a file where the SOW directory should be")
    durability = Durability(None, store, tmp_path)
    for n in range(1, 6):
        _publish(store, n, {"id": n})
    snapshots = durability.snapshot()
    assert not store.groups[0].dirty
    with pytest.raises(EnvironmentProblem):
        durability.write(snapshots)
    durability.restore(snapshots)
    group = store.groups[0]
    assert group.needs_rewrite and group.topics["orders"].dirty == set(_live_state(store))
    with pytest.raises(EnvironmentProblem):  # the synchronous form restores by itself
        durability.checkpoint()
    assert group.needs_rewrite and len(group.topics["orders"].dirty) == 5


def test_the_server_writes_a_snapshot_only_once_the_journal_covers_it(tmp_path: Path) -> None:
    """A FlushInterval of an hour and a checkpoint every 50 ms: the checkpoint asks for the
    commit instead of waiting for it, and the file is written on the checkpoint thread after
    that commit's fsync."""
    settings = settings_for(tmp_path, checkpoint_interval=0.05)
    assert settings.journal is not None
    settings = dataclasses.replace(settings, journal=dataclasses.replace(settings.journal, flush_interval=3600.0,
                                                                         fsync=FsyncPolicy.GROUP))
    seen: list[tuple[int, int, str]] = []
    written = asyncio.Event()

    async def scenario() -> None:
        async with running_broker(settings) as server:
            durability = server.durability
            write = durability.write

            def spy(snapshots: Any) -> int:
                if snapshots and snapshots[0][1].sequence:
                    seen.append((durability.committed, snapshots[0][1].sequence, threading.current_thread().name))
                count = write(snapshots)
                if seen:
                    loop.call_soon_threadsafe(written.set)
                return count

            loop = asyncio.get_running_loop()
            durability.write = spy  # type: ignore[method-assign]
            client = await connect(server.uris[0], "pub")
            for n in range(50):
                await w(client.publish("orders", orjson.dumps({"id": n % 7, "n": n}), ack="processed"))
            await w(written.wait())
            durability.write = write  # type: ignore[method-assign]
            await client.close()
        assert server.failure is None

    asyncio.run(asyncio.wait_for(scenario(), 30))
    committed, sequence, thread = seen[0]
    assert committed >= sequence and sequence > 0 and thread.startswith("ampsctl-checkpoint")
    last, records = _file_state(tmp_path / "sow" / "orders.json.sow", spec())
    assert last == 50 and len(records) == 7
