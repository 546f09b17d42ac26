"""A SOW directory made read-only between runs: recovery still loads the file, and the broker
refuses what it cannot keep with a clear error and exit code 4, never losing an acknowledged
write; once the directory is writable again the restart holds everything.

Root ignores permissions, so the broker runs under ``setpriv`` without CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH (still root, the owner: mode 555 then means no writes)."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import stat
from pathlib import Path

import orjson
import pytest

from crash_helpers import (Acked, Broker, check_recovered, compacted_rows, run_workload, sow_rows, start,
                           write_config)
from killed_checkpoint import kill_mid_checkpoint

SEED = int(os.environ.get("CRASH_SEED", "0")) or random.SystemRandom().randrange(1, 2**32)
READ_ONLY = stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH


def _wrapper() -> tuple[str, ...]:
    if os.geteuid() != 0:
        return ()  # permissions apply already
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: permissions cannot be made to apply")
    return ("setpriv", "--bounding-set", "-dac_override,-dac_read_search")


def test_a_read_only_sow_directory_is_refused_cleanly_and_loses_nothing(tmp_path: Path) -> None:
    wrapper = _wrapper()
    rng = random.Random(SEED)
    print(f"crash seed {SEED} (CRASH_SEED={SEED} reproduces it)")
    config = write_config(tmp_path)
    acked = Acked()
    broker = start(config, tmp_path / "first.log", checkpoint_interval=None, wrapper=wrapper)
    asyncio.run(run_workload(broker.uri, rng, acked, 1.0))
    assert broker.stop() == 0, broker.log_text()
    sow = tmp_path / "sow"
    sow.chmod(READ_ONLY)
    try:
        broker = Broker(config, tmp_path / "second.log", checkpoint_interval=0.02, wrapper=wrapper)
        if broker.start():
            more = Acked()
            asyncio.run(run_workload(broker.uri, rng, more, 1.0))
            code = broker.process.wait(20) if broker.process.poll() is not None else broker.stop()
            acked.publishes.update(more.publishes)
        else:
            code = broker.process.returncode
        log = broker.log_text()
        assert code == 4, f"seed {SEED}: exit {code}\n{log[-3000:]}"
        assert "cannot write SOW file" in log, log[-3000:]
    finally:
        sow.chmod(0o755)
    broker = start(config, tmp_path / "third.log", checkpoint_interval=None, wrapper=wrapper)
    try:
        check_recovered(tmp_path, config, broker.uri, acked, f"seed {SEED}")
    finally:
        assert broker.stop() == 0


def test_an_unfinished_checkpoint_in_a_read_only_directory_is_refused_with_exit_4(tmp_path: Path) -> None:
    wrapper = _wrapper()
    rng = random.Random(SEED)
    config = write_config(tmp_path)
    acked = Acked()
    broker = start(config, tmp_path / "first.log", checkpoint_interval=None, wrapper=wrapper)
    asyncio.run(run_workload(broker.uri, rng, acked, 0.5))
    assert broker.stop() == 0, broker.log_text()
    sow = tmp_path / "sow"
    kill_mid_checkpoint(sow / "orders.json.sow")
    assert (sow / "orders.json.sow-journal").exists()
    sow.chmod(READ_ONLY)
    try:
        broker = Broker(config, tmp_path / "second.log", checkpoint_interval=None, wrapper=wrapper)
        started = broker.start()
        if started:
            broker.stop()
        assert not started and broker.process.returncode == 4, broker.log_text()
        assert "cannot roll back the unfinished checkpoint" in broker.log_text(), broker.log_text()
        assert sorted(p.name for p in sow.iterdir()) == ["orders.json.sow", "orders.json.sow-journal"]
    finally:
        sow.chmod(0o755)
    broker = start(config, tmp_path / "third.log", checkpoint_interval=None, wrapper=wrapper)
    try:
        expected = {row["message"]["id"]: row["message"]
                    for row in compacted_rows(tmp_path, config, tmp_path / "compacted")}
        assert {key: orjson.loads(data) for key, data in asyncio.run(sow_rows(broker.uri)).items()} == expected
        assert "loaded" in broker.log_text() and "SOW file is damaged" not in broker.log_text(), broker.log_text()
    finally:
        assert broker.stop() == 0


def test_a_final_checkpoint_that_fails_at_shutdown_is_said_with_exit_4(tmp_path: Path) -> None:
    """The periodic checkpoint (5 s) never runs: only the shutdown's own can fail. It was
    swallowed: exit 0 and not a word, the SOW file silently behind its journal."""
    wrapper = _wrapper()
    rng = random.Random(SEED)
    config = write_config(tmp_path)
    broker = start(config, tmp_path / "first.log", checkpoint_interval=None, wrapper=wrapper)
    asyncio.run(run_workload(broker.uri, rng, Acked(), 0.3))
    assert broker.stop() == 0, broker.log_text()
    sow = tmp_path / "sow"
    sow.chmod(READ_ONLY)
    try:
        broker = start(config, tmp_path / "second.log", checkpoint_interval=None, wrapper=wrapper)
        acked = Acked()
        asyncio.run(run_workload(broker.uri, rng, acked, 0.3))
        assert acked.publishes
        code = broker.stop()
        log = broker.log_text()
        assert code == 4, f"exit {code}\n{log[-2000:]}"
        assert "cannot write SOW file" in log, log[-2000:]
    finally:
        sow.chmod(0o755)
