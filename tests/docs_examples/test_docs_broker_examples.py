"""README.md's broker and client examples and docs/broker.md's client exit codes, against real
brokers on samples/amps.xml (the README's tcp://127.0.0.1:9007 and :9008 become free ports)."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_example_tools import ROOT, SCRIPT, environment, readme_command, run_ampsctl

MAIN_URI = "tcp://127.0.0.1:9007/amps/json"
REPLICA_URI = "tcp://127.0.0.1:9008/amps/json"
LISTENING = re.compile(r"listening (tcp://127\.0\.0\.1:\d+/amps/json)")


class Broker:
    """``ampsctl broker run --config samples/amps.xml --port 0`` in its own directory."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        workdir.mkdir()
        shutil.copy(ROOT / "samples" / "amps.xml", workdir / "amps.xml")
        args = readme_command("ampsctl broker run")
        assert args == ["broker", "run", "--config", "amps.xml", "--port", "0"]
        self.log = (workdir / "broker.log").open("wb")
        self.process = subprocess.Popen([str(SCRIPT), *args], cwd=workdir, env=environment(),
                                        stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL)
        assert self.process.stdout is not None
        self.first_line = self.process.stdout.readline().decode()
        match = LISTENING.fullmatch(self.first_line.strip())
        assert match, f"first stdout line {self.first_line!r}; log: {(workdir / 'broker.log').read_text()}"
        self.uri = match.group(1)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(30)
        self.log.close()
        return code


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Broker, Broker]]:
    base = tmp_path_factory.mktemp("brokers")
    started: list[Broker] = []
    try:
        started.append(Broker(base / "main"))
        started.append(Broker(base / "replica"))
        yield started[0], started[1]
    finally:
        for broker in started:
            if broker.process.poll() is None:
                broker.process.kill()
                broker.process.wait(30)


def test_readme_client_examples_then_offline_tools(brokers: tuple[Broker, Broker], tmp_path: Path) -> None:
    main, replica = brokers
    here = tmp_path
    shutil.copy(ROOT / "samples" / "broker" / "orders.jsonl", here / "orders.jsonl")

    def client(prefix: str, *extra: str, cwd: Path = here):
        return run_ampsctl(*readme_command(prefix, **{MAIN_URI: main.uri, REPLICA_URI: replica.uri}), *extra, cwd=cwd)

    published = client("ampsctl client publish tcp://127.0.0.1:9007/amps/json -t orders --file")
    assert published.code == 0 and published.stdout.startswith("published 6 messages to orders (persisted) in ")

    delta = client("ampsctl client publish tcp://127.0.0.1:9007/amps/json -t orders --delta")
    assert delta.code == 0 and delta.stdout.startswith("published 1 message to orders (persisted)")

    sow = client("ampsctl client sow")
    assert sow.code == 0
    assert [json.loads(line)["id"] for line in sow.stdout.splitlines()] == [4, 2, 6]  # /qty > 100, largest first
    assert sow.stderr == "3 records (of 6 in the topic)\n"  # docs/broker.md "Output"

    # "replay, then live": --count ends it after the seven journaled messages
    replay = client("ampsctl client subscribe", "--count", "7")
    assert replay.code == 0 and replay.stderr.startswith("subscribed to orders (sub_id ")
    frames = [json.loads(line) for line in replay.stdout.splitlines()]
    assert [f["bm"].split("|")[1] for f in frames] == [str(n) for n in range(1, 8)]
    assert frames[-1]["data"] == {"id": 3, "status": "filled"}  # docs/broker.md: a delta replays as published

    deleted = client("ampsctl client sow-delete")
    assert (deleted.code, deleted.stdout) == (0, "deleted 0 records from orders\n")

    # the main broker's journal, in the directory it runs in; the README's --speed 10 would wait
    republished = client("ampsctl journal replay", "--speed", "inf", cwd=main.workdir)
    assert republished.code == 0
    # the sow_delete is journaled too, although it found nothing to delete
    assert republished.stdout.startswith(
        f"replayed 8 records (1 delta_publish, 6 publish, 1 sow_delete) to {replica.uri} in ")
    assert run_ampsctl("client", "sow", replica.uri, "-t", "orders", "--filter", "/id = 3", cwd=here).stdout == (
        '{"id":3,"symbol":"SAP","side":"buy","qty":75,"price":171.0,"region":"EU","status":"filled"}\n')

    # SIGTERM: the journal is committed and the SOW file written (docs/broker.md)
    assert main.stop() == 0
    offline = run_ampsctl("sow", "query", "sow/orders.json.sow", "--filter", "/status = 'filled'", "--format", "jsonl",
                          cwd=main.workdir)
    assert offline.code == 0 and [json.loads(line)["message"]["id"] for line in offline.stdout.splitlines()] == [3]
    verified = run_ampsctl("journal", "verify", "journal", cwd=main.workdir)
    assert verified.code == 0 and verified.stdout.startswith("ok: 8 records in 1 segment")


def test_client_exit_codes(brokers: tuple[Broker, Broker], tmp_path: Path) -> None:
    """docs/broker.md "Exit codes" of `ampsctl client`."""
    _, replica = brokers
    refused = run_ampsctl("client", "sow", replica.uri, "-t", "orders", "--filter", "/qty >", cwd=tmp_path)
    assert refused.code == 1 and f"sow refused by {replica.uri}: bad filter" in refused.stderr
    assert run_ampsctl("client", "ping", "udp://127.0.0.1:1/amps/json", cwd=tmp_path).code == 2
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"tcp://127.0.0.1:{probe.getsockname()[1]}/amps/json"
    assert run_ampsctl("client", "ping", closed, "--connect-timeout", "5", cwd=tmp_path).code == 4
    (tmp_path / "bad.jsonl").write_text('{"id":9}\n[1]\n')
    bad_line = run_ampsctl("client", "publish", replica.uri, "-t", "orders", "--file", "bad.jsonl", cwd=tmp_path)
    assert bad_line.code == 3 and "bad.jsonl:2:" in bad_line.stderr
    short = run_ampsctl("client", "subscribe", replica.uri, "-t", "nothing-here", "--count", "1", "--timeout", "1",
                        cwd=tmp_path)
    assert short.code == 1
