"""Crash consistency with real processes: a broker killed with SIGKILL at random moments while
several clients publish, delta_publish and sow_delete with ``persisted`` acks, during SOW
checkpoints (every 5-50 ms) and journal segment rotation (16 KB segments), restarted on the
same directories each time.

After every restart: every acknowledged publish is in the journal at its bookmark with its
data; the recovered SOW equals ``ampsctl journal compact`` of the journal; a bookmark
subscription from the last acknowledged bookmark gets exactly the journal's messages after
it; sequences go on from the journal's last. At the end the SOW file of a clean stop equals the
compacted file row for row, and no temporary file was left behind. The seed is printed on
failure; ``CRASH_CYCLES`` (default 3) sets the number of kill/restart cycles. One restart in
four (``CRASH_DAMAGE=0``: none) first finds its SOW file damaged, so it is rebuilt and written
whole, and the kill may interrupt that write.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
from pathlib import Path

import pytest

from ampsctl.journal.record import Command
from crash_helpers import (STEP, Acked, check_recovered, compacted_rows, dump_rows, journal_records, run_workload,
                           start, write_config)

CYCLES = int(os.environ.get("CRASH_CYCLES", "3"))
SEED = int(os.environ.get("CRASH_SEED", "0")) or random.SystemRandom().randrange(1, 2**32)
DAMAGE = os.environ.get("CRASH_DAMAGE", "1") == "1"  # sometimes damage the SOW file between runs


def _damage_sow(path: Path, rng: random.Random) -> bool:
    """Flip bytes past the SQLite header: the next start sets the file aside and rebuilds it
    (a whole-file write that the next kill may interrupt)."""
    if not path.exists() or path.stat().st_size < 200:
        return False
    data = bytearray(path.read_bytes())
    for _ in range(8):
        data[rng.randrange(100, len(data))] ^= 0xFF
    path.write_bytes(bytes(data))
    return True


async def _replay_from(uri: str, bookmark: str) -> list[str]:
    from ampsctl.client import Client

    client = await asyncio.wait_for(Client.connect(uri, name="replayer"), STEP)
    try:
        sub = await asyncio.wait_for(client.subscribe("^(orders|trades)$", bookmark=bookmark), STEP)
        await asyncio.wait_for(sub.completed(), STEP)
        got = []
        while sub.pending():
            got.append((await sub.next()).bookmark)
        return got
    finally:
        await client.close()


def _check_restart(directory: Path, config: Path, uri: str, acked: Acked, context: str) -> None:
    records = check_recovered(directory, config, uri, acked, context)
    last = acked.last_acked(records)
    if last is not None:
        want = [r.bookmark for r in records if r.sequence > last.sequence and r.command in (Command.PUBLISH,
                                                                                             Command.DELTA_PUBLISH)]
        assert asyncio.run(_replay_from(uri, last.bookmark)) == want, f"{context}: replay from {last.bookmark}"


@pytest.mark.parametrize("cycles", [CYCLES])
def test_sigkill_at_random_moments_keeps_every_acknowledged_write(tmp_path: Path, cycles: int) -> None:
    rng = random.Random(SEED)
    print(f"crash seed {SEED} (CRASH_SEED={SEED} reproduces it)")
    config = write_config(tmp_path)
    acked = Acked()
    last_sequence = 0
    damaged = False
    for cycle in range(cycles):
        context = f"seed {SEED}, cycle {cycle}"
        log = tmp_path / f"broker-{cycle}.log"
        broker = start(config, log, checkpoint_interval=rng.choice([0.005, 0.02, 0.05]))
        try:
            if cycle:
                _check_restart(tmp_path, config, broker.uri, acked, context)
            asyncio.run(run_workload_then_kill(broker, rng, acked))
        finally:
            if broker.process.poll() is None:
                broker.kill()
            (tmp_path / "logs").mkdir(exist_ok=True)
            log.rename(tmp_path / "logs" / log.name)
        text = (tmp_path / "logs" / log.name).read_text(errors="replace")
        for bad in ("CRITICAL", "Traceback") if damaged else ("CRITICAL", "SOW file is damaged", "Traceback"):
            assert bad not in text, f"{context}: {bad} in the broker's log:\n{text[-3000:]}"  # a kill is not damage
        records = journal_records(tmp_path)
        end = records[-1].sequence if records else 0  # a kill right after the first start: nothing yet
        assert end >= last_sequence, f"{context}: the journal shrank"
        last_sequence = end
        damaged = DAMAGE and rng.random() < 0.25 and _damage_sow(tmp_path / "sow" / "orders.json.sow", rng)
    broker = start(config, tmp_path / "logs" / "final.log", checkpoint_interval=None)  # ampsctl broker run
    _check_restart(tmp_path, config, broker.uri, acked, f"seed {SEED}, final")
    assert broker.stop() == 0
    assert dump_rows(tmp_path / "sow" / "orders.json.sow") == compacted_rows(tmp_path, config, tmp_path / "compacted")
    leftovers = [p.name for p in (tmp_path / "sow").iterdir()
                 if p.name != "orders.json.sow" and not p.name.startswith("orders.json.sow.damaged")]
    leftovers += [p.name for p in (tmp_path / "journal").iterdir()
                  if not p.name.endswith((".journal", ".index")) and p.name != "journal.lock"]
    assert not leftovers, f"seed {SEED}: files left behind after {cycles} crashes: {leftovers}"
    assert len(acked.publishes) > 50 and not acked.failures, (len(acked.publishes), acked.failures[:3])


async def run_workload_then_kill(broker, rng: random.Random, acked: Acked) -> None:
    """SIGKILL at a random moment; one time in four in the middle of a clean shutdown (SIGTERM:
    the final commit and checkpoint), one time in eight at once (the first checkpoint)."""
    loop = asyncio.get_running_loop()
    roll = rng.random()
    delay = rng.uniform(0.0, 0.1) if roll < 0.125 else rng.uniform(0.3, 1.5)
    if roll > 0.75:
        loop.call_later(delay, broker.process.send_signal, signal.SIGTERM)
        loop.call_later(delay + rng.uniform(0.0, 0.05), _kill_if_running, broker)
    else:
        loop.call_later(delay, broker.kill)
    await run_workload(broker.uri, rng, acked, delay + 2.0)


def _kill_if_running(broker) -> None:
    if broker.process.poll() is None:
        broker.kill()
