"""``ampsctl journal replay PATH --to URI``: a journal written by ``ampsctl journal import`` is
republished into a real broker (127.0.0.1, port 0), through the CLI as a process and through
the library (``ampsctl.client.replay``), and checked by SOW queries, a live subscription and
the target broker's own journal."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import orjson

from ampsctl.client.pacing import Pace
from ampsctl.client.replay import replay
from ampsctl.client.session import Target
from ampsctl.journal import JournalReader
from e2e_helpers import connect, json_body, w
from test_e2e_client_cli import cli, free_port, sow_ids

SOURCE = [
    {"command": "publish", "topic": "orders", "data": {"id": 1, "qty": 1}, "client_name": "pub-a"},
    {"command": "publish", "topic": "orders", "data": {"id": 2, "qty": 2, "px": 7}, "correlation_id": "c-2"},
    {"command": "publish", "topic": "trades", "data": {"id": 3}},
    {"command": "delta_publish", "topic": "orders", "data": {"id": 2, "qty": 20}},
    {"command": "publish", "topic": "orders", "data": {"id": 4, "qty": 4}},
    {"command": "sow_delete", "topic": "orders", "filter": "/id = 1"},
    {"command": "expire", "topic": "orders", "sow_key": "x"},
    {"command": "publish", "topic": "orders", "data": {"id": 5, "qty": 5}, "expiration": 600},
]


async def make_journal(tmp: Path, records: list[dict], *extra: str) -> Path:
    source = tmp / "source.jsonl"
    source.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    done = await cli("journal", "import", str(source), "--out", str(tmp / "recorded"), *extra)
    assert done.code == 0, done.err
    return tmp / "recorded"


def test_replay_republishes_publishes_deltas_and_deletes(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        journal = await make_journal(tmp, SOURCE)
        watcher = await connect(uri, "watcher")
        live = await w(watcher.subscribe("orders"))
        done = await cli("journal", "replay", str(journal), "--to", uri, "--speed", "inf")
        assert done.code == 0, done.err
        assert done.out.startswith(f"replayed 7 records (1 delta_publish, 5 publish, 1 sow_delete) to {uri} in ")
        assert done.out.rstrip().endswith("records/s; skipped 1 expire")

        assert await sow_ids(uri) == [2, 4, 5]  # 1 deleted, 3 went to trades
        merged = [r for r in (await w(watcher.sow("orders", filter="/id = 2"))).records]
        assert [json_body(r) for r in merged] == [{"id": 2, "qty": 20, "px": 7}]
        seen = [json_body(await w(live.next())) for _ in range(5)]
        assert seen == [{"id": 1, "qty": 1}, {"id": 2, "qty": 2, "px": 7}, {"id": 2, "qty": 20, "px": 7},
                        {"id": 4, "qty": 4}, {"id": 5, "qty": 5}]  # in journal order, delta merged
        assert live.pending() == 0
        await watcher.close()

        written = list(JournalReader(tmp / "journal").scan())  # the target broker's own journal
        assert [r.command.label for r in written] == ["publish", "publish", "publish", "delta_publish", "publish",
                                                       "sow_delete", "publish"]
        assert written[1].correlation_id == "c-2" and written[6].expiration == 600
        assert written[2].topic == "trades"

    broker_run(scenario)


def test_replay_selects_by_position_and_topic_json_summary(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        journal = await make_journal(tmp, SOURCE)
        recorded = list(JournalReader(journal).scan())
        done = await cli("journal", "replay", str(journal), "--to", uri, "--from", recorded[0].bookmark,
                         "--until", recorded[4].bookmark, "--topic", "^orders$", "--rate", "1000", "-f", "json")
        assert done.code == 0, done.err
        (summary,) = done.objects
        assert summary["records"] == 3 and summary["sent"] == {"publish": 2, "delta_publish": 1}
        assert (summary["first_sequence"], summary["last_sequence"]) == (2, 5) and summary["skipped"] == {}
        assert summary["to"] == uri and summary["elapsed_s"] > 0
        assert await sow_ids(uri) == [2, 4]

    broker_run(scenario)


def test_rate_and_speed_pace_the_replay(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        records = [{"topic": "orders", "data": {"id": n}} for n in range(10)]
        journal = await make_journal(tmp, records, "--step-us", "100000")  # 0.1 s apart
        at_rate = (await cli("journal", "replay", str(journal), "--to", uri, "--rate", "50", "-f", "json")).objects[0]
        assert at_rate["records"] == 10 and at_rate["elapsed_s"] >= 9 / 50  # the last one is due at 0.18 s
        faster = (await cli("journal", "replay", str(journal), "--to", uri, "--speed", "4", "-f", "json")).objects[0]
        assert faster["elapsed_s"] >= 9 * 0.1 / 4
        capped = (await cli("journal", "replay", str(journal), "--to", uri, "--max-gap", "0.01", "-f", "json")).objects[0]
        assert 9 * 0.01 <= capped["elapsed_s"] < 0.9  # 0.1 s gaps cut to 0.01 s at speed 1

    broker_run(scenario)


def test_hours_between_records_are_cut_to_max_gap(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        records = [{"topic": "orders", "data": {"id": n}, "timestamp": f"20260101T0{n}0000Z"} for n in range(3)]
        journal = await make_journal(tmp, records)  # an hour apart
        done = await cli("journal", "replay", str(journal), "--to", uri, "--max-gap", "0.05", "-f", "json")
        assert done.code == 0, done.err
        assert 0.1 <= done.objects[0]["elapsed_s"] < 10
        assert await sow_ids(uri) == [0, 1, 2]

    broker_run(scenario)


def test_a_refused_record_stops_the_replay_with_exit_1(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        journal = await make_journal(tmp, [{"topic": "orders", "data": {"id": 1}},
                                           {"command": "sow_delete", "topic": "trades", "filter": "1=1"},
                                           {"topic": "orders", "data": {"id": 2}}])
        bookmark = list(JournalReader(journal).scan())[1].bookmark
        done = await cli("journal", "replay", str(journal), "--to", uri)
        assert done.code == 1
        assert f"sow_delete of journal record 2 (bm {bookmark}) refused by {uri}: invalid topic" in done.err

    broker_run(scenario)


def test_replay_errors_have_exit_codes(tmp_path: Path) -> None:
    async def scenario() -> None:
        journal = await make_journal(tmp_path, SOURCE)
        refused = await cli("journal", "replay", str(journal), "--to", f"tcp://127.0.0.1:{free_port()}/amps/json")
        assert refused.code == 4 and "cannot connect" in refused.err
        bad_uri = await cli("journal", "replay", str(journal), "--to", "127.0.0.1:9007")
        assert bad_uri.code == 2 and "invalid AMPS URI" in bad_uri.err
        both = await cli("journal", "replay", str(journal), "--to", "tcp://127.0.0.1:9/amps/json", "--rate", "5",
                         "--speed", "2")
        assert both.code == 2 and "--speed or --rate" in both.err
        bad_from = await cli("journal", "replay", str(journal), "--to", "tcp://127.0.0.1:9/amps/json", "--from", "soon")
        assert bad_from.code == 2 and "--from" in bad_from.err
        (tmp_path / "empty").mkdir()
        not_journal = await cli("journal", "replay", str(tmp_path / "empty"), "--to", "tcp://127.0.0.1:9/amps/json")
        assert not_journal.code == 3 and "no journal segments" in not_journal.err
        no_uri = await cli("journal", "replay", str(journal))
        assert no_uri.code == 2 and "--to" in no_uri.err

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_library_replay_counts_what_it_sent_and_skipped(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        journal = await make_journal(tmp, [*SOURCE, {"topic": "fixes", "message_type": "fix", "payload": "35=D\u0001"}])
        seen: list[int] = []
        summary = await w(asyncio.to_thread(replay, JournalReader(journal).scan(), Target(uri, "replayer"),
                                            Pace(rate=10_000), window=2, progress=seen.append), 30)
        assert dict(summary.sent) == {"publish": 5, "delta_publish": 1, "sow_delete": 1} and summary.total == 7
        assert dict(summary.skipped) == {"expire": 1, "message type fix": 1}
        assert sum(seen) == 9 and (summary.first_sequence, summary.last_sequence) == (1, 8)
        assert await sow_ids(uri) == [2, 4, 5]

    broker_run(scenario)




def test_progress_bar_only_on_a_terminal(broker_run) -> None:
    """Piped: stderr stays empty. On a pseudo-terminal: rich draws the progress bar."""
    import os
    import pty

    async def scenario(uri: str, tmp: Path) -> None:
        records = [{"topic": "orders", "data": {"id": n}} for n in range(10)]
        journal = await make_journal(tmp, records)
        piped = await cli("journal", "replay", str(journal), "--to", uri, "--rate", "20")
        assert piped.code == 0 and piped.err == "" and piped.out.startswith("replayed 10 records")

        leader, follower = pty.openpty()
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ampsctl", "journal", "replay", str(journal), "--to", uri, "--rate", "20",
            stdin=asyncio.subprocess.DEVNULL, stdout=follower, stderr=follower,
            env={**os.environ, "COLUMNS": "100", "TERM": "xterm"})
        os.close(follower)
        screen = bytearray()

        def drain() -> None:  # read the terminal until the child closes it
            while True:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # EIO: every writer has closed the terminal
                    return
                if not chunk:
                    return
                screen.extend(chunk)

        try:
            await w(asyncio.to_thread(drain), 60)
            assert await w(process.wait(), 30) == 0
        finally:
            if process.returncode is None:
                process.kill()  # closes the terminal, so a blocked drain() returns too
        os.close(leader)
        text = screen.decode("utf-8", "replace")
        assert "replaying" in text and "/10" in text, text
        assert "replayed 10 records" in text

    broker_run(scenario)
