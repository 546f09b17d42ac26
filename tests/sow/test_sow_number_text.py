"""A delta publish into the SOW keeps the number text of the stored message (docs/messages.md).

An AMPS user reads back the fields a delta did not touch as they were published: ``1.50``,
``1E5``, ``-0`` and numbers with more digits than a double holds, not as the parser writes
them (``1.5``, ``100000.0``, ``0``). Keys, filters and index values do not change: they come
from the numbers' values. Checked through ``SowTopic`` (the broker's store) and ``recover``
(a checkpointed file plus the journal after it)."""

from __future__ import annotations

from pathlib import Path

from ampsctl.journal.record import Command
from ampsctl.journal.writer import FsyncPolicy, JournalWriter
from ampsctl.messages.json_codec import JSON
from ampsctl.sow.checkpoint import checkpoint
from ampsctl.sow.recovery import recover, sow_path
from ampsctl.sow.sowfile import SowFile
from ampsctl.sow.stats import verify_file
from ampsctl.sow.topic import SowTopic
from sow_helpers import SECOND, T0, spec

INDEXED = spec(hash_indexes=(("/px",),), indexes=("/q",))

# SOW keys of {"id": ...} on topic "orders": generated from the number's value, as before number
# text was kept (docs/formats.md, "SOW keys"); the text of the key field does not change them.
KEYS = {b"1E5": "6896865913081296022", b"1.50": "6434109383447123427", b"-0": "5341754331401866649",
        b"12345678901234567890123": "12276859334142203693"}


def test_untouched_fields_keep_their_text_and_set_fields_the_deltas() -> None:
    topic = SowTopic(INDEXED)
    topic.publish(b'{"id":1,"px":1.50,"q":1E5,"z":-0,"big":12345678901234567890123}', timestamp=T0)
    topic.delta_publish(b'{"id":1,"s":"x","w":2.50}', timestamp=T0 + 1)
    topic.delta_publish(b'{"id":1,"q":2E5,"s":"y"}', timestamp=T0 + 2)
    (record,) = topic.records()
    assert record.payload == b'{"id":1,"px":1.50,"q":2E5,"z":-0,"big":12345678901234567890123,"s":"y","w":2.50}'


def test_a_plain_merge_is_written_as_before() -> None:
    topic = SowTopic(INDEXED)
    topic.publish(b'{"id":1, "px":1.5, "q":[1,2.25]}', timestamp=T0)
    topic.delta_publish(b'{"id":1,"q":{"a":7}}', timestamp=T0 + 1)
    assert next(topic.records()).payload == b'{"id":1,"px":1.5,"q":{"a":7}}'


def test_keys_and_index_values_are_those_of_the_values() -> None:
    for text, key in KEYS.items():
        topic = SowTopic(INDEXED)
        topic.publish(b'{"id":%s,"px":1.50,"q":1E5}' % text, timestamp=T0)
        changes = topic.delta_publish(b'{"id":%s,"s":"x"}' % text, timestamp=T0 + 1)
        assert [change.key for change in changes] == [key]
        (record,) = topic.records()
        assert record.payload == b'{"id":%s,"px":1.50,"q":1E5,"s":"x"}' % text
        plain = JSON.record(JSON.parse(record.payload))  # what a recovered store indexes
        assert topic.hash_tokens(key) == topic.indexer.hash_tokens(plain) == (topic.hash_tokens(key)[0], b"n1.5")
        assert topic.lookup(1, [b"n2"]) == [] and topic.lookup(1, [b"n1.5"]) == [key]


def test_recovery_from_a_file_and_the_journal_after_it(tmp_path: Path) -> None:
    log = tmp_path / "journal"
    with JournalWriter.open(log, fsync=FsyncPolicy.NEVER) as writer:
        writer.append(T0, Command.PUBLISH, "orders", "json", b'{"id":1,"px":1.50,"q":1E5}')
        writer.append(T0 + SECOND, Command.DELTA_PUBLISH, "orders", "json", b'{"id":1,"s":"x"}')
    first = recover([INDEXED], journal=log, now=T0, base_dir=tmp_path)
    group = first.store.groups[0]
    path = sow_path(INDEXED, tmp_path)
    checkpoint(path, group, sequence=first.store.group_sequence(group), sync=False)
    with SowFile.open(path) as sow:
        assert [record.payload for record in sow.records()] == [b'{"id":1,"px":1.50,"q":1E5,"s":"x"}']
        assert verify_file(sow) == (1, 0)  # index columns as the plain parse of the message gives them
    with JournalWriter.open(log, fsync=FsyncPolicy.NEVER) as writer:  # replayed after the file
        writer.append(T0 + 2 * SECOND, Command.DELTA_PUBLISH, "orders", "json", b'{"id":1,"px":-0.0,"t":1.0e1}')
    second = recover([INDEXED], journal=log, now=T0, base_dir=tmp_path)
    assert second.groups[0].source == "file"
    (record,) = second.store.groups[0].topic("orders").records()
    assert record.payload == b'{"id":1,"px":-0.0,"q":1E5,"s":"x","t":1.0e1}'


def test_a_message_nested_as_deep_as_orjson_reads_keeps_its_text() -> None:
    # the standard library's reader runs out of recursion before orjson's 1024 levels
    deep = b'{"a":' * 1000 + b"1E5" + b"}" * 1000
    topic = SowTopic(INDEXED)
    topic.publish(b'{"id":1,"d":%s,"px":1.50}' % deep, timestamp=T0)
    topic.delta_publish(b'{"id":1,"s":"x"}', timestamp=T0 + 1)
    assert next(topic.records()).payload == b'{"id":1,"d":%s,"px":1.50,"s":"x"}' % deep


def test_every_delta_of_a_record_keeps_the_text_of_its_latest_publish() -> None:
    # a merge's document is not checked again by the next delta; a publish or a delete replaces it
    topic = SowTopic(INDEXED)
    topic.publish(b'{"id":1,"px":1.50}', timestamp=T0)
    for step, delta in enumerate((b'{"id":1,"a":1}', b'{"id":1,"b":1E1}', b'{"id":1,"c":2}'), 1):
        topic.delta_publish(delta, timestamp=T0 + step)
    assert next(topic.records()).payload == b'{"id":1,"px":1.50,"a":1,"b":1E1,"c":2}'
    topic.publish(b'{"id":1,"q":2E5}', timestamp=T0 + 5)
    topic.delta_publish(b'{"id":1,"a":1}', timestamp=T0 + 6)
    assert next(topic.records()).payload == b'{"id":1,"q":2E5,"a":1}'
    (key,) = [record.key for record in topic.records()]
    topic.delete_keys([key], timestamp=T0 + 7)
    topic.delta_publish(b'{"id":1,"q":3E5}', timestamp=T0 + 8)  # stored as it is
    topic.delta_publish(b'{"id":1,"a":1}', timestamp=T0 + 9)
    assert next(topic.records()).payload == b'{"id":1,"q":3E5,"a":1}'
