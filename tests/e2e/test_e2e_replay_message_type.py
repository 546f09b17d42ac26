"""Bookmark replay takes the journal records of the broker's message type in any case.

``journal import`` accepts ``JSON`` (or `` Json ``) as the json type and writes the record's
type as given; SOW routing reads such a record as json (``TopicSpec.matches``), so a broker
started on that journal recovers it into its SOW. A bookmark subscription must replay it too:
comparing the type exactly left it out, and the subscriber missed a message the SOW holds."""

from __future__ import annotations

from pathlib import Path

from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from e2e_helpers import connect, json_body, w

T0 = 1_767_225_600_000_000


def test_a_bookmark_replay_includes_records_journaled_as_JSON(broker_run, tmp_path: Path) -> None:
    with JournalWriter.open(tmp_path / "journal", fsync=FsyncPolicy.NEVER) as writer:
        writer.append(T0, Command.PUBLISH, "orders", "JSON", b'{"id":1}')
        writer.append(T0 + 1, Command.PUBLISH, "orders", " Json ", b'{"id":2}')
        writer.append(T0 + 2, Command.PUBLISH, "orders", "json", b'{"id":3}')

    async def scenario(uri: str, _: Path) -> None:
        client = await connect(uri, "sub")
        stored = await w(client.sow("orders", batch_size=10))
        assert sorted(json_body(record)["id"] for record in stored.records) == [1, 2, 3]  # recovered into the SOW
        replay = await w(client.subscribe("orders", bookmark="0", sub_id="r"))
        await w(replay.completed())
        assert [json_body(await w(replay.next()))["id"] for _ in range(replay.pending())] == [1, 2, 3]

    broker_run(scenario)
