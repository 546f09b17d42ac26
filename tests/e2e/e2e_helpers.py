"""End-to-end harness (imported by the e2e tests and by conftest.py): a real broker on 127.0.0.1, port 0, real sockets, every await bounded.

Each test builds its broker from an AMPS config file (``write_config``), so the path from XML
to listeners, journal and SOW topics is exercised too, and runs its scenario with ``run``.
Waiting is always for a message or an ack under ``asyncio.wait_for`` (``w``), never a sleep.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from ampsctl.broker.run import running_broker
from ampsctl.broker.settings import BrokerSettings, broker_settings
from ampsctl.client import Client
from ampsctl.config.loader import load_config
from ampsctl.config.model import ConfigModel
from ampsctl.journal.writer import FsyncPolicy

T = TypeVar("T")
STEP = 5.0  # seconds any one await may take
SCENARIO = 20.0  # seconds a whole test may take

CONFIG = """<AMPSConfig>
  <Name>e2e</Name>
  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>0</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  <TransactionLog>
    <JournalDirectory>{dir}/journal</JournalDirectory>
    <FlushInterval>5ms</FlushInterval>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    <Topic><Name>trades</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><FileName>{dir}/sow/%n.sow</FileName></Topic>
    <Topic><Name>quotes</Name><MessageType>json</MessageType><Key>/sym</Key><Durability>transient</Durability>
      <Expiration>enabled</Expiration></Topic>
    <Topic><Name>desk</Name><Pattern>^desk_</Pattern><MessageType>json</MessageType><Key>/id</Key>
      <Durability>transient</Durability></Topic>
  </SOW>
</AMPSConfig>
"""


def write_config(directory: Path, text: str = CONFIG) -> Path:
    path = directory / "amps.xml"
    path.write_text(text.format(dir=directory))
    return path


def settings_for(directory: Path, text: str = CONFIG, **changes: Any) -> BrokerSettings:
    model = ConfigModel(load_config(str(write_config(directory, text))))
    settings = broker_settings(model, fsync=FsyncPolicy.NEVER)
    return dataclasses.replace(settings, **changes) if changes else settings


async def w(awaitable: Awaitable[T], timeout: float = STEP) -> T:
    """Await with a timeout: a lost message fails the test instead of hanging it."""
    return await asyncio.wait_for(awaitable, timeout)


def run(scenario: Coroutine[Any, Any, T], timeout: float = SCENARIO) -> T:
    return asyncio.run(asyncio.wait_for(scenario, timeout))


Scenario = Callable[[str, Path], Coroutine[Any, Any, None]]


def broker_runner(tmp_path: Path) -> Callable[..., None]:
    """``go(scenario, **settings_changes)`` runs ``scenario(uri, tmp_path)`` against a fresh broker."""

    def go(scenario: Scenario, text: str = CONFIG, **changes: Any) -> None:
        settings = settings_for(tmp_path, text, **changes)

        async def main() -> None:
            async with running_broker(settings) as broker:
                await scenario(broker.uris[0], tmp_path)

        run(main())

    return go


async def connect(uri: str, name: str, **kwargs: Any) -> Client:
    return await w(Client.connect(uri, name=name, **kwargs))


def json_body(message: Any) -> Any:
    import orjson

    return orjson.loads(message.data)
