"""Config -> broker settings: listeners, journal, recorded topics, notes; the users file."""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.broker.settings import broker_settings, read_users
from ampsctl.config.loader import load_config
from ampsctl.config.model import ConfigModel
from ampsctl.errors import InputError

CONFIG = """<AMPSConfig><Name>t</Name>
  <Protocols><Protocol><Name>my-amps</Name><Module>amps</Module></Protocol></Protocols>
  <Transports>
    <Transport><Name>a</Name><Type>tcp</Type><InetAddr>9007</InetAddr><Protocol>amps</Protocol></Transport>
    <Transport><Name>b</Name><Type>tcp</Type><InetAddr>0.0.0.0:9008</InetAddr><Protocol>my-amps</Protocol>
      <MessageType>json</MessageType></Transport>
    <Transport><Name>ws</Name><Type>tcp</Type><InetAddr>9009</InetAddr><Protocol>websocket</Protocol></Transport>
    <Transport><Name>fix</Name><Type>tcp</Type><InetAddr>9010</InetAddr><Protocol>amps</Protocol>
      <MessageType>fix</MessageType></Transport>
  </Transports>
  <TransactionLog><JournalDirectory>./j</JournalDirectory><FlushInterval>20ms</FlushInterval>
    <JournalSize>10MB</JournalSize><Topic><Name>orders</Name><MessageType>json</MessageType></Topic>
    <Topic><Name>^md_</Name><MessageType>json</MessageType></Topic></TransactionLog>
  <SOW><Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><FileName>sow/%n.sow</FileName></Topic>
    <Topic><Name>alerts</Name><MessageType>xml</MessageType><Key>/id</Key><Durability>transient</Durability></Topic></SOW>
  <Actions><Action><On><Module>amps-action-on-schedule</Module></On><Do><Module>amps-action-do-truncate-journal</Module></Do></Action></Actions>
</AMPSConfig>"""


def _model(tmp_path: Path, text: str = CONFIG) -> ConfigModel:
    path = tmp_path / "c.xml"
    path.write_text(text)
    return ConfigModel(load_config(str(path)))


def test_listeners_journal_and_notes(tmp_path: Path) -> None:
    settings = broker_settings(_model(tmp_path))
    assert [(l.name, l.host, l.port) for l in settings.listeners] == [("a", "127.0.0.1", 9007), ("b", "127.0.0.1", 9008)]
    assert settings.listeners[0].uri(1234) == "tcp://127.0.0.1:1234/amps/json"
    assert settings.journal is not None and settings.journal.flush_interval == pytest.approx(0.02)
    assert settings.journal.segment_bytes == 10 * 1024 * 1024
    assert settings.core.records("orders") and settings.core.records("md_ibm") and not settings.core.records("other")
    notes = "\n".join(settings.notes)
    assert "'ws'" in notes and "'fix'" in notes and "alerts" in notes and "amps-action-do-truncate-journal" in notes


def test_port_option_replaces_the_transports(tmp_path: Path) -> None:
    settings = broker_settings(_model(tmp_path), host="::1", port=0)
    assert [(l.host, l.port) for l in settings.listeners] == [("::1", 0)]
    assert settings.listeners[0].uri(5) == "tcp://[::1]:5/amps/json"


def test_no_usable_transport_and_bad_inetaddr(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no tcp transport"):
        broker_settings(_model(tmp_path, "<AMPSConfig><Name>t</Name></AMPSConfig>"))
    bad = CONFIG.replace("<InetAddr>9007</InetAddr>", "<InetAddr>localhost</InetAddr>")
    with pytest.raises(InputError, match="has no port number"):
        broker_settings(_model(tmp_path, bad))


def test_users_file(tmp_path: Path) -> None:
    path = tmp_path / "users"
    path.write_text("# who may log on\nalice:s3cret\n\nbob:with:colon\n")
    assert read_users(path) == {"alice": "s3cret", "bob": "with:colon"}
    path.write_text("alice\n")
    with pytest.raises(InputError) as bad:
        read_users(path)
    assert bad.value.location is not None and bad.value.location.line == 1
