"""Damage between runs of a real broker (``ampsctl broker run``): each is recovered, or refused
with a clear error and a defined exit code; acknowledged data is never lost silently.

A first run publishes, delta_publishes and sow_deletes with ``persisted`` acks and stops
cleanly (its SOW file is then complete); the files are damaged; the second run's outcome is
checked against the journal read offline and ``ampsctl journal compact``. The seed is printed
on failure (``CRASH_SEED`` reproduces a run).
"""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest

from crash_helpers import Acked, Broker, check_recovered, journal_records, run_workload, start, write_config

SEED = int(os.environ.get("CRASH_SEED", "0")) or random.SystemRandom().randrange(1, 2**32)


def _first_run(tmp_path: Path, rng: random.Random) -> tuple[Path, Acked]:
    print(f"crash seed {SEED} (CRASH_SEED={SEED} reproduces it)")
    config = write_config(tmp_path)
    acked = Acked()
    broker = start(config, tmp_path / "first.log", checkpoint_interval=None)
    asyncio.run(run_workload(broker.uri, rng, acked, 1.0))
    assert broker.stop() == 0, broker.log_text()
    assert len(acked.publishes) > 20
    return config, acked


def _restart_matches_the_journal(tmp_path: Path, config: Path, acked: Acked, log: str = "second.log") -> str:
    broker = start(config, tmp_path / log, checkpoint_interval=None)
    try:
        check_recovered(tmp_path, config, broker.uri, acked, f"seed {SEED}")
    finally:
        assert broker.stop() == 0, broker.log_text()
    return broker.log_text()


def test_a_journal_cut_at_a_random_byte_keeps_every_record_before_the_cut(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    config, acked = _first_run(tmp_path, rng)
    before = journal_records(tmp_path)
    last = sorted((tmp_path / "journal").glob("*.journal"))[-1]
    size = last.stat().st_size
    cut = rng.randrange(36, size)
    os.truncate(last, cut)
    index = tmp_path / "journal" / last.with_suffix(".index").name
    if cut < size:  # the index of the clean stop says what was lost: refused, whole records or not
        refused = Broker(config, tmp_path / "refused.log", checkpoint_interval=None)
        assert not refused.start() and refused.process.returncode == 3, refused.log_text()
        assert "acknowledged records were lost" in refused.log_text() and index.name in refused.log_text()
    index.unlink(missing_ok=True)  # what the refusal's hint says to do to go on without them
    broker = start(config, tmp_path / "second.log", checkpoint_interval=None)
    assert broker.stop() == 0
    after = journal_records(tmp_path)
    assert after == before[:len(after)], f"seed {SEED}: cut at {cut} of {size}"
    lost = before[len(after):]
    if lost and after and (tmp_path / "journal" / last.name).stat().st_size != cut:  # a torn record was cut: said
        assert "torn tail" in broker.log_text(), broker.log_text()


def test_a_deleted_or_corrupt_segment_index_is_rebuilt(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    config, acked = _first_run(tmp_path, rng)
    indexes = sorted((tmp_path / "journal").glob("*.index"))
    assert len(indexes) >= 3, "small segments: several sealed ones"
    indexes[0].unlink()
    damaged = bytearray(indexes[1].read_bytes())
    for _ in range(8):
        damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
    indexes[1].write_bytes(bytes(damaged))
    os.truncate(indexes[2], rng.randrange(indexes[2].stat().st_size))
    _restart_matches_the_journal(tmp_path, config, acked)


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "zero-page"])
def test_a_damaged_sow_file_is_set_aside_and_rebuilt_from_the_journal(tmp_path: Path, damage: str) -> None:
    rng = random.Random(SEED)
    config, acked = _first_run(tmp_path, rng)
    sow = tmp_path / "sow" / "orders.json.sow"
    data = bytearray(sow.read_bytes())
    if damage == "flip":  # past the header: SQLite pages
        for _ in range(16):
            data[rng.randrange(100, len(data))] ^= 0xFF
    elif damage == "truncate":
        data = data[:rng.randrange(100, len(data))]
    elif damage == "empty":
        data = bytearray()
    else:
        page = rng.randrange(1, len(data) // 4096)
        data[page * 4096:(page + 1) * 4096] = bytes(4096)
    sow.write_bytes(bytes(data))
    broker = Broker(config, tmp_path / "second.log", checkpoint_interval=None)
    if not broker.start():  # refused: a defined exit code and the file named
        assert broker.process.returncode in (3, 4), broker.log_text()
        assert "orders.json.sow" in broker.log_text()
        return
    broker.stop()
    log = _restart_matches_the_journal(tmp_path, config, acked, "third.log")
    assert "SOW file is damaged" not in log  # the rebuilt file was written whole at the second run's stop


def test_a_stale_temporary_checkpoint_file_is_removed(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    config, acked = _first_run(tmp_path, rng)
    sow = tmp_path / "sow"
    dead = 2**22 + 12345  # above any pid_max: no such process
    stale = sow / f".orders.json.sow.tmp-{dead}"
    stale.write_bytes((sow / "orders.json.sow").read_bytes()[:5000])
    _restart_matches_the_journal(tmp_path, config, acked)
    assert sorted(p.name for p in sow.iterdir()) == ["orders.json.sow"]


@pytest.mark.parametrize("damage", ["flip", "delete", "truncate"])
def test_damage_inside_the_journal_is_refused_with_exit_3_naming_the_segment(tmp_path: Path, damage: str) -> None:
    rng = random.Random(SEED)
    config, acked = _first_run(tmp_path, rng)
    segments = sorted((tmp_path / "journal").glob("*.journal"))
    assert len(segments) >= 3
    # a sealed one; not the first when deleting: a journal may start later (old segments removed)
    victim = segments[rng.randrange(1 if damage == "delete" else 0, len(segments) - 1)]
    if damage == "delete":
        victim.unlink()
    elif damage == "truncate":
        os.truncate(victim, rng.randrange(36, victim.stat().st_size))
    else:
        data = bytearray(victim.read_bytes())
        data[rng.randrange(36, len(data) - 100)] ^= 0x10
        victim.write_bytes(bytes(data))
    broker = Broker(config, tmp_path / "second.log", checkpoint_interval=None)
    started = broker.start()
    if started:
        broker.stop()
    assert not started and broker.process.returncode == 3, f"seed {SEED}: {victim.name}\n{broker.log_text()}"
    assert "journal segment damaged" in broker.log_text() and "journal/0000" in broker.log_text(), broker.log_text()
