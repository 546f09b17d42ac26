"""Key scheme 2: Key fields of text formats (FIX, NVFIX, XML) are keyed as written, and SOW
files written with scheme 1 are keyed again when they are loaded.

Seed 003: "The values of hash indexes are always evaluated as strings", and the SOW key is a
hash of its Key fields. Scheme 1 typed FIX and XML values by inference first, so FIX 11=007
and 11=7 (two orders) shared a key and the second publish replaced the first.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sow_helpers import record, spec

import ampsctl.messages.keys as keys
import ampsctl.sow.checkpoint as checkpoints
from ampsctl.journal.record import Command
from ampsctl.messages.scalars import infer
from ampsctl.sow.checkpoint import checkpoint, load_group
from ampsctl.sow.sowfile import SowFile
from ampsctl.sow.store import SowStore, TopicGroup

FIX_ORDERS = spec("orders", "fix", keys=("/11",), history_window=3600 * 1_000_000, history_granularity=0)
CONFIG = """<AMPSConfig><Name>x</Name><SOW>
  <Topic><Name>fix-orders</Name><MessageType>fix</MessageType><Key>/11</Key><FileName>%n.sow</FileName></Topic>
  <Topic><Name>xml-orders</Name><MessageType>xml</MessageType><Key>/o/@id</Key><FileName>%n.sow</FileName></Topic>
</SOW></AMPSConfig>"""
INPUT = "\n".join([
    '{"command":"publish","topic":"fix-orders","message_type":"fix","payload":"11=007\\u000144=1\\u0001"}',
    '{"command":"publish","topic":"fix-orders","message_type":"fix","payload":"11=7\\u000144=2\\u0001"}',
    '{"command":"publish","topic":"fix-orders","message_type":"fix","payload":"11=7.0\\u000144=3\\u0001"}',
    '{"command":"publish","topic":"xml-orders","message_type":"xml","payload":"<o id=\\"007\\"><q>1</q></o>"}',
    '{"command":"publish","topic":"xml-orders","message_type":"xml","payload":"<o id=\\"7\\"><q>2</q></o>"}',
]) + "\n"


def _ampsctl(*args: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_fix_and_xml_ids_that_differ_as_text_are_different_records(tmp_path: Path) -> None:
    (tmp_path / "amps.xml").write_text(CONFIG)
    (tmp_path / "in.jsonl").write_text(INPUT)
    _ampsctl("journal", "import", "in.jsonl", "--out", "journal", cwd=tmp_path)
    _ampsctl("journal", "compact", "journal", "--config", "amps.xml", "--out", "out", cwd=tmp_path)
    fix = _ampsctl("sow", "dump", "out/fix-orders.fix.sow", cwd=tmp_path)
    assert [line.split("  ")[-1] for line in fix.splitlines()[1:]] == ["11=007|44=1|", "11=7|44=2|", "11=7.0|44=3|"]
    xml = _ampsctl("sow", "dump", "out/xml-orders.xml.sow", cwd=tmp_path)
    assert len(xml.splitlines()) == 3, xml  # the header line and two records


def _inferring_lookup(pairs, steps):  # noqa: ANN001, ANN202
    """Scheme 1's FIX lookup: the value typed by inference."""
    found = [text for name, text in pairs if name == steps[0]]
    return keys._MISSING if not found else infer(found[0])


def test_a_scheme_1_file_is_keyed_again_when_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "orders.fix.sow"
    with monkeypatch.context() as old:  # write the file as the previous release did
        old.setattr(keys, "_lookup_pairs", _inferring_lookup)
        old.setattr(checkpoints, "KEY_SCHEME_VERSION", 1)
        store = SowStore([FIX_ORDERS])
        for sequence, payload in enumerate([b"11=007\x0144=1\x01", b"11=008\x0144=1\x01", b"11=008\x0144=2\x01"], 1):
            store.apply(record(sequence, Command.PUBLISH, payload, message_type="fix"))
        deleted = next(r.key for r in store.groups[0].topic("orders").records() if r.payload.startswith(b"11=008"))
        store.apply(record(4, Command.SOW_DELETE, b'{"keys":["%s"]}' % deleted.encode(), message_type="fix"))
        checkpoint(path, store.groups[0], sequence=4, sync=False)
        scheme_1 = {r.key for r in store.groups[0].topic("orders").records()}
    with SowFile.open(path) as sow:
        assert sow.meta.key_scheme == 1
    group = TopicGroup(FIX_ORDERS)
    load_group(path, group)
    topic = group.topic("orders")
    loaded = {r.key: r.payload for r in topic.records()}
    assert loaded == {topic.key_of(b"11=007\x0144=1\x01"): b"11=007\x0144=1\x01"}
    assert set(loaded) != scheme_1  # "007" is no longer keyed as 7
    assert group.needs_rewrite
    # The deleted record's past states moved with it, its deletion too: keyed as its messages now are.
    assert set(topic.history.keys()) == {topic.key_of(b"11=007\x0144=1\x01"), topic.key_of(b"11=008\x0144=1\x01")}
    assert topic.history.states(topic.key_of(b"11=008\x0144=1\x01"))[-1].payload is None
    checkpoint(path, group, sequence=4, sync=False)
    with SowFile.open(path) as sow:
        assert sow.meta.key_scheme == keys.KEY_SCHEME_VERSION == 2
    again = TopicGroup(FIX_ORDERS)
    load_group(path, again)
    assert {r.key for r in again.topic("orders").records()} == set(loaded) and not again.needs_rewrite
