"""``ampsctl client publish|subscribe|sow|sow-delete|ping`` as processes against a real broker.

The broker runs in the test's event loop (e2e_helpers) on 127.0.0.1, port 0; each command is
a ``python -m ampsctl`` subprocess whose output and exit code are checked, and what it did is
checked again through the library. A subscriber says it is subscribed with one stderr line,
which is what the tests wait for before publishing (no sleeps).
"""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from ampsctl.errors import UsageError
from ampsctl.journal import JournalReader
from e2e_helpers import connect, json_body, w

START = 30.0  # a cold interpreter imports ampsctl before it connects


@dataclass
class Done:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    @property
    def objects(self) -> list[dict]:
        return [orjson.loads(line) for line in self.lines]


async def cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> Done:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ampsctl", *args, cwd=cwd,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await w(process.communicate(stdin), START)
    done = Done(process.returncode or 0, out.decode(), err.decode())
    assert "Traceback" not in done.err, done.err
    return done


class Subscriber:
    """``ampsctl client subscribe`` running; ``ready()`` waits for its "subscribed to" line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, uri: str, *args: str) -> Subscriber:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ampsctl", "client", "subscribe", uri, *args,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        subscriber = cls(process)
        assert process.stderr is not None
        line = (await w(process.stderr.readline(), START)).decode()
        assert line.startswith("subscribed to "), line + (await w(process.stderr.read())).decode()
        return subscriber

    async def line(self) -> str:
        assert self.process.stdout is not None
        return (await w(self.process.stdout.readline())).decode().rstrip("\n")

    async def finish(self) -> Done:
        out, err = await w(self.process.communicate(), START)
        return Done(self.process.returncode or 0, out.decode(), err.decode())


def free_port() -> int:
    """A port nothing listens on: bound, then released."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def sow_ids(uri: str, topic: str = "orders") -> list[int]:
    reader = await connect(uri, "checker")
    try:
        result = await w(reader.sow(topic, orderby="/id"))
        return [orjson.loads(record.data)["id"] for record in result.records]
    finally:
        await reader.close()


# ------------------------------------------------------------------------------ publish


def test_publish_a_file_then_query_it_back(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        messages = tmp / "orders.jsonl"
        # utf-8-sig: a byte order mark first, as Windows tools write it; it was "not JSON" (exit 3)
        messages.write_text('{"id":1,"qty":5}\n{"id":2,"qty":7}\n\n{"id":3,"qty":9}\n', encoding="utf-8-sig")
        done = await cli("client", "publish", uri, "--topic", "orders", "--file", str(messages))
        assert done.code == 0, done.err
        assert done.out.startswith("published 3 messages to orders (persisted) in ")
        assert await sow_ids(uri) == [1, 2, 3]

        done = await cli("client", "sow", uri, "-t", "orders", "--orderby", "/qty DESC")
        assert done.code == 0, done.err
        assert [orjson.loads(line)["id"] for line in done.lines] == [3, 2, 1]  # stdout: data only
        assert done.err == "3 records (of 3 in the topic)\n"

    broker_run(scenario)


def test_publish_from_stdin_with_json_summary_and_processed_acks(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        lines = b"".join(orjson.dumps({"id": n, "qty": n}) + b"\n" for n in range(1, 51))
        done = await cli("client", "publish", uri, "-t", "orders", "--file", "-", "--ack", "processed",
                         "--window", "7", "--format", "json", stdin=lines)
        assert done.code == 0, done.err
        (summary,) = done.objects
        assert summary["published"] == 50 and summary["ack"] == "processed" and summary["topic"] == "orders"
        assert await sow_ids(uri) == list(range(1, 51))

        done = await cli("client", "publish", uri, "-t", "orders", "--data", '{"id":99}', "--ack", "none")
        assert done.code == 0, done.err
        assert 99 in await sow_ids(uri)  # exit 0 came after the flush: the message is there

    broker_run(scenario)


def test_publish_delta_expiration_correlation_id_and_sow_key(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        done = await cli("client", "publish", uri, "-t", "orders", "-d", '{"id":1,"qty":5,"px":10}',
                         "--expiration", "30", "--correlation-id", "corr-1")
        assert done.code == 0, done.err
        done = await cli("client", "publish", uri, "-t", "orders", "-d", '{"id":1,"qty":6}', "--delta")
        assert done.code == 0, done.err
        reader = await connect(uri, "checker")
        (record,) = (await w(reader.sow("orders"))).records
        assert json_body(record) == {"id": 1, "qty": 6, "px": 10}  # merged, not replaced
        await reader.close()
        done = await cli("client", "publish", uri, "-t", "trades", "-d", '{"id":7}', "--sow-key", "trade7")
        assert done.code == 0, done.err
        journal = list(JournalReader(tmp / "journal").scan())
        assert [(r.command.label, r.topic) for r in journal] == [
            ("publish", "orders"), ("delta_publish", "orders"), ("publish", "trades")]
        assert journal[0].expiration == 30 and journal[0].correlation_id == "corr-1"
        assert journal[2].sow_key == "trade7"

    broker_run(scenario)


def test_a_bad_line_publishes_nothing_and_exits_3(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        messages = tmp / "bad.jsonl"
        messages.write_text('{"id":1}\n{"id":2}\n[3]\n')
        done = await cli("client", "publish", uri, "-t", "orders", "--file", str(messages))
        assert done.code == 3
        assert f"{messages}:3: a message must be a JSON object" in done.err
        done = await cli("client", "publish", uri, "-t", "orders", "--data", "{nope")
        assert done.code == 3 and "--data: not JSON" in done.err
        done = await cli("client", "publish", uri, "-t", "orders", "--file", str(tmp / "missing.jsonl"))
        assert done.code == 3 and "cannot read" in done.err
        assert await sow_ids(uri) == []

    broker_run(scenario)


def test_publish_usage_errors_exit_2(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        both = await cli("client", "publish", uri, "-t", "orders", "--data", "{}", "--file", "-", stdin=b"{}")
        neither = await cli("client", "publish", uri, "-t", "orders")
        no_topic = await cli("client", "publish", uri, "--data", "{}")
        for done in (both, neither, no_topic):
            assert done.code == 2, done.err
        assert "exactly one of --data MESSAGE and --file FILE" in both.err

    broker_run(scenario)


def test_a_failure_ack_prints_the_reason_and_exits_1(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        done = await cli("client", "publish", uri, "-t", "ord.*", "-d", '{"id":1}')
        assert done.code == 1
        assert "publish refused by" in done.err and ": invalid topic" in done.err and "hint:" in done.err
        done = await cli("client", "publish", uri, "-t", "ord.*", "--file", "-", stdin=b'{"id":1}\n{"id":2}\n')
        assert done.code == 1 and "publish of message 1 of 2 refused" in done.err
        done = await cli("client", "sow", uri, "-t", "orders", "--filter", "/qty >")
        assert done.code == 1 and ": bad filter" in done.err and "--filter" in done.err
        done = await cli("client", "subscribe", uri, "-t", "orders", "--filter", "(((", "--count", "1")
        assert done.code == 1 and ": bad filter" in done.err
        done = await cli("client", "sow", uri, "-t", "trades")
        assert done.code == 1 and ": invalid topic" in done.err

    broker_run(scenario)


# ------------------------------------------------------------------------------ subscribe


def test_subscribe_prints_messages_as_they_arrive_text_and_json(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        text = await Subscriber.start(uri, "-t", "orders", "--count", "2")
        as_json = await Subscriber.start(uri, "-t", "ord.*", "--filter", "/qty > 5", "--count", "1", "-f", "json")
        publisher = await connect(uri, "pub")
        await w(publisher.publish("orders", b'{"id":1,"qty":5}', ack="processed"))
        assert await text.line() == '{"id":1,"qty":5}'  # printed while the subscriber still runs
        await w(publisher.publish("orders", b'{"id":2,"qty":7}', ack="processed"))
        done = await text.finish()
        assert done.code == 0 and done.out == '{"id":2,"qty":7}\n'
        done = await as_json.finish()
        assert done.code == 0, done.err
        (message,) = done.objects
        assert message["c"] == "p" and message["t"] == "orders" and message["data"] == {"id": 2, "qty": 7}
        assert message["k"] and message["bm"] and message["sub_id"]
        await publisher.close()

    broker_run(scenario)


def test_subscribe_delta_and_oof(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        publisher = await connect(uri, "pub")
        await w(publisher.publish("orders", b'{"id":1,"qty":9,"px":10}', ack="processed"))
        delta = await Subscriber.start(uri, "-t", "orders", "--delta", "--count", "1", "-f", "json")
        oof = await Subscriber.start(uri, "-t", "orders", "--filter", "/qty > 5", "--oof", "--count", "2")
        await w(publisher.publish("orders", b'{"id":1,"qty":10,"px":10}', ack="processed"))
        await w(publisher.publish("orders", b'{"id":1,"qty":1,"px":10}', ack="processed"))
        (changed,) = (await delta.finish()).objects
        assert changed["data"]["qty"] == 10 and "px" not in changed["data"]  # only keys and changes
        done = await oof.finish()
        assert done.code == 0, done.err
        first, second = done.lines
        assert orjson.loads(first)["qty"] == 10
        assert second.startswith("oof match k=") and second.endswith('{"id":1,"qty":1,"px":10}')
        await publisher.close()

    broker_run(scenario)


def test_subscribe_timeout_and_count(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        done = await cli("client", "subscribe", uri, "-t", "orders", "--timeout", "0.3")
        assert (done.code, done.out) == (0, "")
        done = await cli("client", "subscribe", uri, "-t", "orders", "--timeout", "0.3", "--count", "2")
        assert done.code == 1 and "received 0 of 2 messages within 0.3 s" in done.err

    broker_run(scenario)


def test_ctrl_c_stops_a_subscriber_with_130_and_no_traceback(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        subscriber = await Subscriber.start(uri, "-t", "orders")
        publisher = await connect(uri, "pub")
        await w(publisher.publish("orders", b'{"id":1}', ack="processed"))
        assert await subscriber.line() == '{"id":1}'
        subscriber.process.send_signal(signal.SIGINT)
        done = await subscriber.finish()
        assert done.code == 130 and "Traceback" not in done.err  # typer turns Ctrl-C into a quiet exit 130
        await publisher.close()

    broker_run(scenario)


def test_subscribe_replays_from_bookmark_0(broker_run) -> None:
    """Needs bookmark replay in the broker (spec/protocol.md §9.3)."""
    async def scenario(uri: str, _: Path) -> None:
        publisher = await connect(uri, "pub")
        for n in range(1, 4):
            await w(publisher.publish("orders", orjson.dumps({"id": n}), ack="persisted"))
        done = await cli("client", "subscribe", uri, "-t", "orders", "--bookmark", "0", "--count", "3", "-f", "json")
        assert done.code == 0, done.err
        assert [m["data"]["id"] for m in done.objects] == [1, 2, 3]
        bookmarks = [m["bm"] for m in done.objects]
        assert all(bookmarks) and len(set(bookmarks)) == 3
        done = await cli("client", "subscribe", uri, "-t", "orders", "--bookmark", bookmarks[0], "--count", "2")
        assert done.code == 0, done.err
        assert [orjson.loads(line)["id"] for line in done.lines] == [2, 3]  # after that bookmark
        await publisher.close()

    broker_run(scenario)


# ------------------------------------------------------------------------------ sow, sow-delete


def test_sow_options_and_json(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        publisher = await connect(uri, "pub")
        for n in range(1, 8):
            await w(publisher.publish("orders", orjson.dumps({"id": n, "qty": n * 10, "note": "x"}), ack="processed"))
        done = await cli("client", "sow", uri, "-t", "orders", "--filter", "/qty >= 30", "--orderby", "/qty DESC",
                         "--top-n", "3", "--batch-size", "2", "--options", "select=[-/note]", "-f", "json")
        assert done.code == 0, done.err
        *records, stats = done.objects
        assert [r["data"] for r in records] == [{"id": 7, "qty": 70}, {"id": 6, "qty": 60}, {"id": 5, "qty": 50}]
        assert all(r["c"] == "sow" and r["t"] == "orders" and r["k"] for r in records)
        assert stats["c"] == "ack" and stats["a"] == "stats" and stats["records_returned"] == 3
        assert stats["topic_matches"] == 7
        usage = await cli("client", "sow", uri, "-t", "orders", "--options", "bogus_option")
        assert usage.code == 2 and "--options" in usage.err
        await publisher.close()

    broker_run(scenario)


def test_sow_delete_by_filter_keys_and_data(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        publisher = await connect(uri, "pub")
        for n in range(1, 7):
            await w(publisher.publish("orders", orjson.dumps({"id": n, "qty": n}), ack="processed"))
        keys = [r.sow_key for r in (await w(publisher.sow("orders", orderby="/id"))).records]
        done = await cli("client", "sow-delete", uri, "-t", "orders", "--filter", "/qty > 4")
        assert (done.code, done.out) == (0, "deleted 2 records from orders\n"), done.err
        done = await cli("client", "sow-delete", uri, "-t", "orders", "--keys", f"{keys[0]},{keys[1]}", "-f", "json")
        assert done.code == 0, done.err
        (stats,) = done.objects
        assert stats["a"] == "stats" and stats["records_deleted"] == 2
        done = await cli("client", "sow-delete", uri, "-t", "orders", "--data", '{"id":3,"qty":0}')
        assert (done.code, done.out) == (0, "deleted 1 record from orders\n"), done.err
        assert await sow_ids(uri) == [4]
        neither = await cli("client", "sow-delete", uri, "-t", "orders")
        assert neither.code == 2 and "exactly one of --filter, --keys and --data" in neither.err
        await publisher.close()

    broker_run(scenario)


# ------------------------------------------------------------------------------ ping, connection errors


def test_ping_text_and_json(broker_run) -> None:
    async def scenario(uri: str, _: Path) -> None:
        done = await cli("client", "ping", uri)
        assert done.code == 0, done.err
        assert done.out.startswith(f"ok {uri}: round trip ") and "server version 5." in done.out
        done = await cli("client", "ping", uri, "--name", "probe-1", "--format", "json")
        assert done.code == 0, done.err
        (result,) = done.objects
        assert result["client_name"] == "probe-1" and result["uri"] == uri
        assert result["server_version"] and result["round_trip_ms"] >= 0 and result["connect_ms"] > 0

    broker_run(scenario)


def test_refused_connection_exits_4_with_a_hint(tmp_path: Path) -> None:
    uri = f"tcp://127.0.0.1:{free_port()}/amps/json"
    for args in (["ping", uri], ["publish", uri, "-t", "orders", "-d", "{}"], ["subscribe", uri, "-t", "orders"],
                 ["sow", uri, "-t", "orders"], ["sow-delete", uri, "-t", "orders", "--filter", "1=1"]):
        done = asyncio.run(cli("client", *args, cwd=tmp_path))
        assert done.code == 4, (args, done.err)
        assert f"cannot connect to 127.0.0.1:" in done.err and uri in done.err
        assert "hint: is an AMPS broker" in done.err


def test_bad_uri_exits_2(tmp_path: Path) -> None:
    for uri, why in (("http://127.0.0.1:9007/amps/json", "transport 'http'"), ("tcp://127.0.0.1/amps/json", "host and port"),
                     ("tcp://127.0.0.1:9007/fix", "/amps/json"), ("tcp://127.0.0.1:9007/amps/xml", "message type 'xml'")):
        done = asyncio.run(cli("client", "ping", uri, cwd=tmp_path))
        assert done.code == 2, done.err
        assert why in done.err and "hint: write tcp://" in done.err


def test_a_broker_that_goes_away_mid_subscription_is_exit_4(tmp_path: Path) -> None:
    from ampsctl.broker.run import running_broker
    from e2e_helpers import run, settings_for

    async def scenario() -> Done:
        async with running_broker(settings_for(tmp_path)) as broker:
            subscriber = await Subscriber.start(broker.uris[0], "-t", "orders")
        return await subscriber.finish()  # the broker closed every connection on its way out

    done = run(scenario(), 60)
    assert done.code == 4, done.err
    assert "the server closed the connection" in done.err and "hint:" in done.err


# ------------------------------------------------------------------------------ the library under the commands


def test_library_functions_behind_the_commands(broker_run) -> None:
    """``ampsctl.client.tool`` called directly (each runs its own event loop, here in a thread)."""
    from ampsctl.client import tool
    from ampsctl.client.session import Rejected, Target
    from ampsctl.protocol.messages import Delivery, Oof

    async def scenario(uri: str, _: Path) -> None:
        target = Target(uri, "lib")
        summary = await w(asyncio.to_thread(tool.publish, target, "orders",
                                            [orjson.dumps({"id": n, "qty": n}) for n in range(1, 21)], window=3), 30)
        assert (summary.published, summary.ack) == (20, "persisted")

        result = await w(asyncio.to_thread(tool.query, target, "orders", filter="/qty > 15", orderby="/id DESC",
                                           batch_size=2), 30)
        assert result.count == 5 and len(result.batches) == 3 and result.stats.records_returned == 5
        assert [orjson.loads(r.data)["id"] for b in result.batches for r in b.records] == [20, 19, 18, 17, 16]

        got: list[Delivery | Oof] = []
        subscribed: list[str] = []
        replay = await w(asyncio.to_thread(tool.subscribe, Target(uri, "lib-sub"), "orders", got.append,
                                           bookmark="0", count=20, on_subscribed=subscribed.append), 30)
        assert replay.received == 20 and not replay.timed_out and subscribed
        assert [orjson.loads(m.data)["id"] for m in got] == list(range(1, 21))
        idle = await w(asyncio.to_thread(tool.subscribe, target, "orders", got.append, timeout=0.2), 30)
        assert (idle.received, idle.timed_out) == (0, True)

        ack = await w(asyncio.to_thread(tool.sow_delete, target, "orders", filter="/qty > 10"), 30)
        assert ack.records_deleted == 10
        pong = await w(asyncio.to_thread(tool.ping, target), 30)
        assert pong.client_name == "lib" and pong.server_version and pong.round_trip_ms >= 0

        with pytest.raises(Rejected) as refused:
            await w(asyncio.to_thread(tool.query, target, "orders", filter="/qty >>> 1"), 30)
        assert refused.value.reason == "bad filter"
        with pytest.raises(UsageError):
            await w(asyncio.to_thread(tool.sow_delete, target, "orders"), 30)

    broker_run(scenario)


def test_a_reader_closing_the_pipe_ends_a_subscriber_quietly(broker_run) -> None:
    """``ampsctl client subscribe ... | head -1``: exit 0, no BrokenPipeError traceback."""
    import os

    async def scenario(uri: str, _: Path) -> None:
        read_end, write_end = os.pipe()
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ampsctl", "client", "subscribe", uri, "-t", "orders",
            stdin=asyncio.subprocess.DEVNULL, stdout=write_end, stderr=asyncio.subprocess.PIPE)
        os.close(write_end)
        assert process.stderr is not None
        try:
            assert (await w(process.stderr.readline(), START)).startswith(b"subscribed to ")
            publisher = await connect(uri, "pub")
            await w(publisher.publish("orders", b'{"id":1}', ack="processed"))
            first = await w(asyncio.to_thread(os.read, read_end, 100))
            assert first == b'{"id":1}\n'
            os.close(read_end)  # the reader leaves, like head -1
            read_end = -1
            await w(publisher.publish("orders", b'{"id":2}', ack="processed"))
            err = await w(process.stderr.read(), START)
            assert await w(process.wait()) == 0, err.decode()
            assert b"Traceback" not in err and b"error" not in err
            await publisher.close()
        finally:
            if process.returncode is None:
                process.kill()  # closes the pipe's write end, so a blocked os.read returns too
            if read_end >= 0:
                os.close(read_end)

    broker_run(scenario)
