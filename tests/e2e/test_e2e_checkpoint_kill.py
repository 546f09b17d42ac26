"""Durability with SOW checkpoints written off the event loop (broker/checkpoints.py): a broker
checkpointing every 20 ms is killed (-9) while publishing with persisted acks; the restart
loads the last checkpoint file (intact, not rebuilt), replays the journal after it, and holds
every acknowledged message."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import orjson

from e2e_helpers import connect, run, w, write_config

START = 15.0
LAUNCHER = """
import asyncio, dataclasses, logging, sys
from ampsctl.broker.run import serve
from ampsctl.broker.settings import broker_settings
from ampsctl.config.loader import load_config
from ampsctl.config.model import ConfigModel
from ampsctl.journal.writer import FsyncPolicy

logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
settings = broker_settings(ConfigModel(load_config(sys.argv[1])), port=0, fsync=FsyncPolicy.GROUP)
settings = dataclasses.replace(settings, checkpoint_interval=0.02)
ready = lambda uris: print("listening", uris[0], flush=True)
asyncio.run(serve(settings, on_ready=ready, stop=asyncio.Event()))
"""


async def _start(command: list[str], log: Path, cwd: Path) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE, stderr=log.open("ab"),
                                                   cwd=cwd)
    assert process.stdout is not None
    line = (await w(process.stdout.readline(), START)).decode()
    assert line.startswith("listening tcp://"), f"{line!r}\n{log.read_text()}"
    return process, line.split()[1]


def test_kill_9_during_off_loop_checkpoints_keeps_every_acknowledged_message(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"

    async def scenario() -> dict[int, int]:
        process, uri = await _start([sys.executable, "-c", LAUNCHER, str(config)], first_log, tmp_path)
        publisher = await connect(uri, "durable-pub")
        acknowledged: dict[int, int] = {}

        async def publish(n: int) -> None:
            await publisher.publish("orders", orjson.dumps({"id": n % 300, "n": n}), ack="persisted")
            acknowledged[n % 300] = max(n, acknowledged.get(n % 300, -1))

        pending = [asyncio.create_task(publish(n)) for n in range(2000)]
        await w(asyncio.wait(pending[:600]), 30)
        while first_log.read_text().count("checkpointed") < 2:  # bounded by the scenario's timeout
            await asyncio.sleep(0.01)
        os.kill(process.pid, signal.SIGKILL)
        await w(process.wait())
        await asyncio.wait(pending)  # the in-flight ones failed with Disconnected or were acked in time
        await publisher.close()

        process, uri = await _start([sys.executable, "-m", "ampsctl", "broker", "run", "--config", str(config),
                                     "--port", "0"], second_log, tmp_path)
        reader = await connect(uri, "reader")
        recovered = {orjson.loads(r.data)["id"]: orjson.loads(r.data)["n"]
                     for r in (await w(reader.sow("orders", batch_size=100))).records}
        for key, n in acknowledged.items():
            assert recovered[key] >= n, f"record {key}: acknowledged n={n}, recovered {recovered.get(key)}"
        await reader.close()
        process.send_signal(signal.SIGTERM)
        assert await w(process.wait(), START) == 0
        return acknowledged

    acknowledged = run(scenario(), 90)
    assert len(acknowledged) == 300
    log = second_log.read_text()
    assert "loaded" in log and "rebuilt" not in log, log  # the checkpoint file was intact
