"""``ampsctl broker run`` as a process: the listening line, signals, port in use, and a kill -9
in the middle of publishing followed by a restart that recovers every acknowledged message."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import orjson
import pytest

from ampsctl.journal import JournalReader
from ampsctl.protocol.acks import AckType
from e2e_helpers import connect, run, w, write_config

START = 15.0  # a cold interpreter imports ampsctl and lxml before it listens


async def _start(config: Path, log: Path, *extra: str) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ampsctl", "broker", "run", "--config", str(config), *extra,
        stdout=asyncio.subprocess.PIPE, stderr=log.open("ab"), cwd=config.parent,
    )
    assert process.stdout is not None
    line = (await w(process.stdout.readline(), START)).decode()
    if not line:
        await w(process.wait())
        raise AssertionError(f"the broker exited ({process.returncode}) before listening:\n{log.read_text()}")
    assert line.startswith("listening tcp://127.0.0.1:") and line.rstrip().endswith("/amps/json"), line
    return process, line.split()[1]


async def _stop(process: asyncio.subprocess.Process, how: signal.Signals) -> int:
    process.send_signal(how)
    return await w(process.wait(), START)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_run_prints_the_uri_serves_and_stops_cleanly(tmp_path: Path, how: signal.Signals) -> None:
    config = write_config(tmp_path)

    async def scenario() -> None:
        process, uri = await _start(config, tmp_path / "broker.log", "--port", "0")
        client = await connect(uri, "cli")
        ack = await w(client.publish("orders", b'{"id":1,"qty":3}', ack="persisted"))
        assert ack.ack_type is AckType.PERSISTED
        assert len((await w(client.sow("orders"))).records) == 1
        assert await _stop(process, how) == 0
        await client.close()

    run(scenario(), 60)
    assert (tmp_path / "sow" / "orders.json.sow").is_file()  # checkpointed at shutdown
    assert "shutting down" in (tmp_path / "broker.log").read_text()


def test_port_in_use_exits_4(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        async def scenario() -> tuple[int, bytes]:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "ampsctl", "broker", "run", "--config", str(config), "--port", str(port),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=tmp_path)
            _, err = await w(process.communicate(), START)
            return process.returncode or 0, err

        code, err = run(scenario(), 60)
    assert code == 4, err.decode()
    assert b"port is in use" in err


def test_kill_9_then_restart_keeps_every_acknowledged_message(tmp_path: Path) -> None:
    """Durability: messages whose persisted ack arrived survive a kill -9 in the SOW and journal."""
    config = write_config(tmp_path)
    log = tmp_path / "broker.log"

    async def scenario() -> dict[int, int]:
        process, uri = await _start(config, log, "--port", "0", "--fsync", "always")
        publisher = await connect(uri, "durable-pub")
        acknowledged: dict[int, int] = {}

        async def publish(n: int) -> None:
            await publisher.publish("orders", orjson.dumps({"id": n % 40, "n": n}), ack="persisted")
            acknowledged[n % 40] = max(n, acknowledged.get(n % 40, -1))

        pending = [asyncio.create_task(publish(n)) for n in range(1000)]
        await w(asyncio.wait(pending[:150]))  # some of them are acknowledged, the rest are in flight
        os.kill(process.pid, signal.SIGKILL)
        await w(process.wait())
        await asyncio.wait(pending)  # the in-flight ones fail with Disconnected or were acked just in time
        await publisher.close()

        process, uri = await _start(config, log, "--port", "0")
        reader = await connect(uri, "reader")
        recovered = {orjson.loads(r.data)["id"]: orjson.loads(r.data)["n"] for r in
                     (await w(reader.sow("orders", batch_size=100))).records}
        for key, n in acknowledged.items():
            assert recovered[key] >= n, f"record {key}: acknowledged n={n}, recovered {recovered.get(key)}"
        await reader.close()
        assert await _stop(process, signal.SIGTERM) == 0
        return acknowledged

    acknowledged = run(scenario(), 60)
    journaled = {orjson.loads(record.payload)["n"] for record in JournalReader(tmp_path / "journal").scan()}
    assert {n for n in acknowledged.values()} <= journaled
