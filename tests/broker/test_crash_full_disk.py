"""A full disk, simulated with RLIMIT_FSIZE on the broker process (a write past the limit fails
with EFBIG; Python ignores SIGXFSZ): the broker refuses further writes cleanly (it stops with
exit code 4 and says why) and loses nothing it acknowledged; the restart on a disk with room
holds every acknowledged write and the SOW the journal gives."""

from __future__ import annotations

import asyncio
import os
import random
import resource
import time
from pathlib import Path

import pytest

from crash_helpers import Acked, check_recovered, run_workload, start, write_config

SEED = int(os.environ.get("CRASH_SEED", "0")) or random.SystemRandom().randrange(1, 2**32)


@pytest.mark.parametrize("full", ["journal", "sow"])
def test_a_file_size_limit_stops_the_broker_cleanly_and_keeps_every_acknowledged_write(tmp_path: Path,
                                                                                        full: str) -> None:
    rng = random.Random(SEED)
    print(f"crash seed {SEED} (CRASH_SEED={SEED} reproduces it)")
    # "journal": a 1 MB segment outgrows the limit; "sow": 16 KB segments never do, the SOW file does
    config = write_config(tmp_path, segment="1MB" if full == "journal" else "16KB")
    limit = rng.randrange(60_000, 200_000) if full == "journal" else rng.randrange(20_000, 36_000)

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    acked = Acked()
    broker = start(config, tmp_path / "full.log", checkpoint_interval=0.02, preexec_fn=small_disk)

    async def until_it_stops() -> None:
        deadline = time.monotonic() + 30
        while broker.process.poll() is None and time.monotonic() < deadline:
            await run_workload(broker.uri, rng, acked, 1.0)

    asyncio.run(until_it_stops())
    code = broker.process.wait(20)
    log = broker.log_text()
    assert code == 4, f"seed {SEED}, limit {limit}: exit {code}\n{log[-3000:]}"
    # the journal names the OS error; SQLite says only "disk I/O error"
    said = "cannot write journal segment" if full == "journal" else "cannot write SOW file"
    assert said in log and ("File too large" in log or "disk I/O error" in log), log[-3000:]
    broker = start(config, tmp_path / "after.log", checkpoint_interval=None)
    try:
        check_recovered(tmp_path, config, broker.uri, acked, f"seed {SEED}, limit {limit}")
    finally:
        assert broker.stop() == 0
