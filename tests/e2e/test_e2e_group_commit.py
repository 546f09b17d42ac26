"""Group commit with the fsync on the worker thread (server.py): persisted acks come after it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pytest
from e2e_helpers import connect, run, settings_for, w

from ampsctl.broker.run import running_broker
from ampsctl.broker.settings import BrokerSettings
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.writer import FsyncPolicy, SyncJob


def _group_settings(tmp_path: Path) -> BrokerSettings:
    """The e2e config with the GROUP policy (settings_for uses NEVER): a real fsync job per commit."""
    settings = settings_for(tmp_path)
    assert settings.journal is not None
    return dataclasses.replace(settings, journal=dataclasses.replace(settings.journal, fsync=FsyncPolicy.GROUP))


def test_every_persisted_ack_arrives_in_order_and_its_record_is_in_the_journal(tmp_path: Path) -> None:
    settings = _group_settings(tmp_path)

    async def main() -> None:
        async with running_broker(settings) as broker:
            publisher = await connect(broker.uris[0], "pub")
            pending = [await w(publisher.publish_nowait("trades", orjson.dumps({"n": n}))) for n in range(300)]
            acks = [await w(item.wait()) for item in pending]
            assert [ack.seq for ack in acks] == list(range(1, 301))
            assert all(ack.ok for ack in acks)
            await publisher.close()

    run(main())
    records = [record for record in JournalReader(tmp_path / "journal").scan() if record.topic == "trades"]
    assert [orjson.loads(record.payload)["n"] for record in records] == list(range(300))


def test_a_failed_fsync_job_stops_the_broker_without_acknowledging(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _group_settings(tmp_path)

    def failing_run(job: SyncJob) -> None:
        import os

        os.close(job.fd)
        raise OSError(5, "Input/output error")

    async def main() -> None:
        async with running_broker(settings) as broker:
            monkeypatch.setattr(SyncJob, "run", failing_run)
            publisher = await connect(broker.uris[0], "pub")
            pending = await w(publisher.publish_nowait("trades", b'{"n":1}'))
            await w(broker.stopped.wait())
            assert broker.failure is not None and "fsync" in broker.failure.message
            try:
                ack = await w(pending.wait())
            except Exception:  # the broker closed the connection: no ack ever came
                ack = None
            assert ack is None or not ack.ok  # a success ack would promise what is not on disk

    run(main())
