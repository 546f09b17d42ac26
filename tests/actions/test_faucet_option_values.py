"""Option values of a faucet action as ``affinity simulate --render`` and the broker read them.

An XML comment inside a value is not part of it, so the text after the comment counts too:
``el.text`` alone stopped at the comment, and the broker published a truncated Data payload
(and read ``^/s/<!-- c -->.*`` as ``^/s/``), and the broker did not run an action whose Do
step's Topic began with a comment ("without Topic") while simulate rendered it. An element
inside a value would lose its markup, so it is refused with its location, in both.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ampsctl.broker.run import running_broker
from ampsctl.broker.settings import broker_settings
from ampsctl.client import Client
from ampsctl.config.loader import load_config
from ampsctl.config.model import ConfigModel
from ampsctl.journal.writer import FsyncPolicy

STEP = 5.0

CONFIG = """<AMPSConfig>
  <Name>values</Name>
  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>0</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  <Actions>
    <Action>
      <On>
        <Module>amps-action-on-manifold-affinity</Module>
        <Options>
          <MessageType>json</MessageType>
          <ControlTopic><!-- publishers enlist here -->ctl</ControlTopic>
          <SubscriptionTopic>^/s/<!-- every symbol -->A</SubscriptionTopic>
        </Options>
      </On>
      <Do>
        <Module>amps-action-do-publish-message</Module>
        <Options>
          <MessageType>json<!-- the broker serves json --></MessageType>
          <Topic><!-- where publishers listen -->ctl</Topic>
          <Data>DATA</Data>
        </Options>
      </Do>
    </Action>
  </Actions>
</AMPSConfig>
"""
COMMENTED = '{"topic":"{{AMPS_TOPIC}}",<!-- the publisher -->"client":"<![CDATA[{{AMPS_CLIENT_NAME}}]]>"}'
EXPECTED = '{"topic":"/s/A","client":"pub"}'
# The broker names connections connection-N in connect order: the watcher, then pub, then sub.
EVENTS = [
    {"event": "subscribe", "connection": "connection-2", "client": "pub", "topic": "ctl", "sub_id": "ctl"},
    {"event": "subscribe", "connection": "connection-3", "client": "sub", "topic": "/s/B", "sub_id": "b"},
    {"event": "subscribe", "connection": "connection-3", "client": "sub", "topic": "/s/A", "sub_id": "a"},
]


def _write(tmp_path: Path, data: str) -> Path:
    config = tmp_path / "amps.xml"
    config.write_text(CONFIG.replace("DATA", data))
    return config


def _simulate(tmp_path: Path, config: Path) -> subprocess.CompletedProcess[bytes]:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in EVENTS))
    return subprocess.run([sys.executable, "-m", "ampsctl", "affinity", "simulate", "--config", str(config),
                           "--events", str(events), "--render", "--format", "jsonl", "--no-summary"],
                          capture_output=True, timeout=120, check=False)


async def _broker_payloads(config: Path) -> list[str]:
    """Play EVENTS against a broker from ``config``; what a regex watcher of ctl receives."""
    settings = broker_settings(ConfigModel(load_config(str(config))), fsync=FsyncPolicy.NEVER)
    async with running_broker(settings) as broker:
        uri = broker.uris[0]
        watcher = await asyncio.wait_for(Client.connect(uri, name="watcher"), STEP)
        seen = await asyncio.wait_for(watcher.subscribe("^ctl$"), STEP)  # a regex: never a publisher
        pub = await asyncio.wait_for(Client.connect(uri, name="pub"), STEP)
        await asyncio.wait_for(pub.subscribe("ctl", sub_id="ctl"), STEP)
        sub = await asyncio.wait_for(Client.connect(uri, name="sub"), STEP)
        await asyncio.wait_for(sub.subscribe("/s/B", sub_id="b"), STEP)
        await asyncio.wait_for(sub.subscribe("/s/A", sub_id="a"), STEP)
        await asyncio.wait_for(watcher.flush(), STEP)
        got = []
        while seen.pending():
            got.append((await asyncio.wait_for(seen.next(), STEP)).data.decode())
        for client in (sub, pub, watcher):
            await asyncio.wait_for(client.close(), STEP)
        return got


def test_a_comment_inside_an_option_value_does_not_cut_it(tmp_path: Path) -> None:
    config = _write(tmp_path, COMMENTED)
    done = _simulate(tmp_path, config)
    assert done.returncode == 0, done.stderr.decode()
    rows = [orjson.loads(line) for line in done.stdout.splitlines()]
    # SubscriptionTopic is ^/s/A: /s/B is not interest (it was, read as ^/s/)
    assert [(row["AMPS_TOPIC"], row["rendered"][0]["Data"]) for row in rows] == [("/s/A", EXPECTED)]
    assert asyncio.run(asyncio.wait_for(_broker_payloads(config), 30)) == [EXPECTED]


def test_an_element_inside_an_option_value_is_refused_with_its_location(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = _write(tmp_path, '<x>{"topic":"{{AMPS_TOPIC}}"}</x>')
    done = _simulate(tmp_path, config)
    assert done.returncode == 3 and done.stdout == b""
    line = next(n for n, text in enumerate(config.read_text().splitlines(), 1) if "<Data>" in text)
    assert done.stderr.decode().startswith(f"ampsctl: error: {config}:{line}:"), done.stderr
    assert "<Data>" in done.stderr.decode() and "element <x>" in done.stderr.decode()
    with caplog.at_level(logging.WARNING, logger="ampsctl.broker"):
        assert asyncio.run(asyncio.wait_for(_broker_payloads(config), 30)) == []  # the action does not run
    notes = [r.getMessage() for r in caplog.records if "not run" in r.getMessage()]
    assert len(notes) == 1 and f"{config}:{line}:" in notes[0] and "element <x>" in notes[0], notes
