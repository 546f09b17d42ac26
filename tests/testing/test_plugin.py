"""The ``amps_broker`` pytest fixture, run the way users run it: inner pytest sessions (pytester)
whose tests talk to the broker over real sockets with ampsctl's client."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SOW_CONFIG = """<AMPSConfig>
  <Name>plugin-test</Name>
  <Transports>
    <Transport><Name>t</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  <TransactionLog>
    <JournalDirectory>./journal</JournalDirectory>
    <Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
  </TransactionLog>
  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><FileName>./sow/%n.sow</FileName></Topic>
  </SOW>
</AMPSConfig>
"""

ROUND_TRIP = """
import asyncio, pathlib
import pytest
from ampsctl.client import Client

async def _publish_and_query(uri):
    async with await asyncio.wait_for(Client.connect(uri, name="app"), 10) as client:
        await asyncio.wait_for(client.publish("orders", b'{"id":1,"qty":5}', ack="persisted"), 10)
        await asyncio.wait_for(client.publish("orders", b'{"id":1,"qty":7}', ack="persisted"), 10)
        result = await asyncio.wait_for(client.sow("orders"), 10)
        return [record.data for record in result.records]

@pytest.mark.amps_config("amps.xml")
def test_marker(amps_broker):
    assert amps_broker.startswith("tcp://127.0.0.1:") and amps_broker.endswith("/amps/json")
    assert asyncio.run(_publish_and_query(amps_broker)) == [b'{"id":1,"qty":7}']

@pytest.mark.parametrize("amps_broker", [str(pathlib.Path("amps.xml").resolve())], indirect=True)
def test_indirect(amps_broker):
    assert asyncio.run(_publish_and_query(amps_broker)) == [b'{"id":1,"qty":7}']
"""


def test_marker_and_indirect_parametrisation(pytester: pytest.Pytester) -> None:
    pytester.makefile(".xml", amps=SOW_CONFIG)
    pytester.makepyfile(test_app=ROUND_TRIP)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=2)


def test_each_test_gets_a_fresh_broker_in_its_own_directory(pytester: pytest.Pytester) -> None:
    """The default config (no marker): publish and bookmark-free subscribe work, and a second
    test sees none of the first test's journal."""
    pytester.makepyfile(test_fresh="""
import asyncio
from ampsctl.client import Client

async def _count_journal(uri):
    async with await asyncio.wait_for(Client.connect(uri, name="app"), 10) as client:
        sub = await asyncio.wait_for(client.subscribe("news"), 10)
        await asyncio.wait_for(client.publish("news", b'{"n":1}', ack="persisted"), 10)
        message = await asyncio.wait_for(sub.next(), 10)
        return message.data

def test_one(amps_broker, tmp_path):
    assert asyncio.run(_count_journal(amps_broker)) == b'{"n":1}'
    assert (tmp_path / "amps-broker" / "journal").is_dir()

def test_two(amps_broker, tmp_path):
    assert asyncio.run(_count_journal(amps_broker)) == b'{"n":1}'
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=2)


def test_ini_option_names_the_config(pytester: pytest.Pytester) -> None:
    pytester.makefile(".xml", amps=SOW_CONFIG)
    pytester.makeini("[pytest]\namps_config = amps.xml\n")
    pytester.makepyfile(test_ini=ROUND_TRIP.replace('@pytest.mark.amps_config("amps.xml")\n', ""))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "test_marker", timeout=120)
    result.assert_outcomes(passed=1)


def test_a_config_that_cannot_start_fails_the_test_with_the_reason(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makefile(".xml", bad="<AMPSConfig><Name>x</Name><SOW><Topic>")  # malformed XML
    pytester.makepyfile(test_bad="""
import pytest

@pytest.mark.amps_config("missing.xml")
def test_missing(amps_broker):
    pass

@pytest.mark.amps_config("bad.xml")
def test_malformed(amps_broker):
    pass
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(errors=2)  # a fixture that fails is a setup error
    result.stdout.fnmatch_lines(["*amps_broker: AMPS config *missing.xml does not exist*"])
    result.stdout.fnmatch_lines(["*amps_broker: the broker did not start: exited with code 3*"])
