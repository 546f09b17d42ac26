"""Harness of the crash tests (tests/broker/test_crash_*.py): a real broker process on real
sockets, killed with SIGKILL, damaged between runs, restarted on the same directories.

``Broker`` starts ``ampsctl broker run`` (``cli=True``) or a launcher that is the same
``serve`` with a short ``checkpoint_interval`` (no config element sets it), with fsync
``group``. ``Workload`` drives several clients that publish, delta_publish and sow_delete with
``persisted`` acks and remembers exactly what was acknowledged. Every check compares with the
journal read offline (``JournalReader``) and with ``ampsctl journal compact`` of it.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ampsctl.client import Client
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command

AMPSCTL = [sys.executable, "-m", "ampsctl"]
START = 20.0  # seconds for a broker to print its listening line
STEP = 10.0

CONFIG = """<AMPSConfig>
  <Name>crash</Name>
  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>0</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  <TransactionLog>
    <JournalDirectory>{dir}/journal</JournalDirectory>
    <FlushInterval>{flush}</FlushInterval>
    <JournalSize>{segment}</JournalSize>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    <Topic><Name>trades</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><FileName>{dir}/sow/%n.sow</FileName></Topic>
  </SOW>
</AMPSConfig>
"""

LAUNCHER = """
import asyncio, dataclasses, logging, signal, sys
from ampsctl.broker.run import serve
from ampsctl.broker.settings import broker_settings
from ampsctl.config.loader import load_config
from ampsctl.config.model import ConfigModel
from ampsctl.errors import AmpsctlError
from ampsctl.journal.writer import FsyncPolicy

logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
settings = broker_settings(ConfigModel(load_config(sys.argv[1])), port=0, fsync=FsyncPolicy.GROUP)
settings = dataclasses.replace(settings, checkpoint_interval=float(sys.argv[2]))
ready = lambda uris: print("listening", uris[0], flush=True)

async def main():
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)  # as the CLI does
    return await serve(settings, on_ready=ready, stop=stop)

try:
    failure = asyncio.run(main())
except AmpsctlError as exc:
    print(f"error: {exc}", file=sys.stderr, flush=True)
    sys.exit(exc.exit_code)
sys.exit(failure.exit_code if failure is not None else 0)
"""


def write_config(directory: Path, *, flush: str = "5ms", segment: str = "16KB") -> Path:
    path = directory / "amps.xml"
    path.write_text(CONFIG.format(dir=directory, flush=flush, segment=segment))
    return path


class Broker:
    """One broker process; ``uri`` once it listens (``start`` returns False if it exited first)."""

    def __init__(self, config: Path, log: Path, *, checkpoint_interval: float | None = 0.02,
                 preexec_fn: Any = None, wrapper: tuple[str, ...] = ()) -> None:
        if checkpoint_interval is None:
            command = [*AMPSCTL, "broker", "run", "--config", str(config), "--port", "0", "--log-level", "debug"]
        else:
            command = [sys.executable, "-c", LAUNCHER, str(config), str(checkpoint_interval)]
        self.log = log
        self.process = subprocess.Popen([*wrapper, *command], stdout=subprocess.PIPE, stderr=log.open("ab"), cwd=config.parent,
                                        preexec_fn=preexec_fn)
        self.uri = ""

    def start(self) -> bool:
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()  # EOF when it exits first
        if not line.startswith("listening tcp://"):
            self.process.wait(START)
            return False
        self.uri = line.split()[1]
        return True

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(STEP)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(START)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def start(config: Path, log: Path, **kwargs: Any) -> Broker:
    broker = Broker(config, log, **kwargs)
    assert broker.start(), f"the broker did not start (exit {broker.process.returncode}):\n{broker.log_text()}"
    return broker


@dataclass
class Acked:
    """What the broker acknowledged as persisted: (client, publisher seq) -> bookmark, data."""

    publishes: dict[tuple[str, int], tuple[bytes, bool]] = field(default_factory=dict)
    deletes: dict[str, int] = field(default_factory=dict)  # client -> sow_deletes acknowledged
    failures: list[str] = field(default_factory=list)  # failure acks (a full disk)

    def last_acked(self, records: list[Any]) -> Any:
        """The journal record of the last acknowledged publish (None before any)."""
        found = [r for r in records if (r.client_name, r.publisher_sequence) in self.publishes]
        return found[-1] if found else None


async def client_loop(uri: str, name: str, rng: random.Random, acked: Acked, *, keys: int = 40) -> None:
    """Publish, delta_publish and sow_delete (persisted acks) until the connection drops."""
    from ampsctl.client.errors import CommandFailed

    try:
        client = await asyncio.wait_for(Client.connect(uri, name=name), STEP)
    except Exception:
        return
    n = 0
    try:
        while True:
            n += 1
            roll = rng.random()
            key = rng.randrange(keys)
            try:
                if roll < 0.12:
                    await client.request({"c": "sow_delete", "t": "orders", "a": "persisted,stats",
                                          "filter": f"/id = {key}"}, until="stats")
                    acked.deletes[name] = acked.deletes.get(name, 0) + 1
                    continue
                topic = "trades" if roll < 0.3 else "orders"
                delta = topic == "orders" and roll > 0.8
                body = {"id": key, "by": name, "n": n}
                if not delta:
                    body["pad"] = "x" * rng.randrange(0, 300)
                data = orjson.dumps(body)
                ack = await client.publish(topic, data, ack="persisted", delta=delta)
                assert ack is not None and ack.ack_type == "persisted", ack
                acked.publishes[(name, client._seq)] = (data, delta)
            except CommandFailed as exc:
                acked.failures.append(str(exc))
                await asyncio.sleep(0.01)
    except Exception:  # Disconnected: the broker was killed
        return
    finally:
        await client.close()


async def run_workload(uri: str, rng: random.Random, acked: Acked, seconds: float, *, clients: int = 3) -> None:
    tasks = [asyncio.create_task(client_loop(uri, f"pub-{i}", random.Random(rng.random()), acked))
             for i in range(clients)]
    await asyncio.sleep(seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def journal_records(directory: Path) -> list[Any]:
    return list(JournalReader(directory / "journal").scan())


def check_acked_in_journal(records: list[Any], acked: Acked, context: str) -> None:
    """Every acknowledged publish is in the journal once, with its data; sequences 1, 2, 3 ..."""
    sequences = [record.sequence for record in records]
    assert sequences == list(range(1, len(sequences) + 1)), f"{context}: journal sequences {sequences[:5]}..."
    found: dict[tuple[str, int], Any] = {}
    for record in records:
        if record.command in (Command.PUBLISH, Command.DELTA_PUBLISH):
            ident = (record.client_name, record.publisher_sequence)
            assert ident not in found, f"{context}: {ident} journaled twice ({found[ident].sequence}, {record.sequence})"
            found[ident] = record
    for name, count in acked.deletes.items():
        journaled = sum(1 for r in records if r.command is Command.SOW_DELETE and r.client_name == name)
        assert journaled >= count, f"{context}: {name} had {count} sow_deletes acknowledged, {journaled} journaled"
    for ident, (data, delta) in acked.publishes.items():
        record = found.get(ident)
        assert record is not None, f"{context}: acknowledged publish {ident} is not in the journal"
        assert record.payload == data, f"{context}: {ident} is {record!r} in the journal, acknowledged {data!r}"
        assert record.command is (Command.DELTA_PUBLISH if delta else Command.PUBLISH)


def check_recovered(directory: Path, config: Path, uri: str, acked: Acked, context: str) -> list[Any]:
    """Every acknowledged write is in the journal, and the SOW of the broker at ``uri`` is the
    journal's replay (``journal compact``); the journal's records, for further checks."""
    records = journal_records(directory)
    check_acked_in_journal(records, acked, context)
    expected = {row["message"]["id"]: row["message"] for row in compacted_rows(directory, config, directory / "compacted")}
    recovered = {key: orjson.loads(data) for key, data in asyncio.run(sow_rows(uri)).items()}
    assert recovered == expected, f"{context}: the SOW is not the journal's replay"
    return records


def dump_rows(sow_file: Path) -> list[dict[str, Any]]:
    result = subprocess.run([*AMPSCTL, "sow", "dump", str(sow_file), "--format", "jsonl"], capture_output=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    return [orjson.loads(line) for line in result.stdout.splitlines() if line.strip()]


def compacted_rows(directory: Path, config: Path, out: Path) -> list[dict[str, Any]]:
    result = subprocess.run([*AMPSCTL, "journal", "compact", str(directory / "journal"), "--config", str(config),
                             "--out", str(out), "--force"], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    return dump_rows(out / "orders.json.sow")


async def sow_rows(uri: str) -> dict[int, bytes]:
    client = await asyncio.wait_for(Client.connect(uri, name="checker"), STEP)
    try:
        result = await asyncio.wait_for(client.sow("orders", batch_size=100), STEP)
        return {orjson.loads(r.data)["id"]: bytes(r.data) for r in result.records}
    finally:
        await client.close()
