"""The byte format: round trips, the checksum residue, and every kind of damage a record can take."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from journal_strategies import records

from ampsctl.errors import InputError
from ampsctl.journal import codec
from ampsctl.journal.codec import (
    HEADER_SIZE, MIN_RECORD, RESIDUE, Decoder, Encoder, HeaderDefect, RecordDefect, decode_header, decode_record,
    encode_header, encode_record, record_defect,
)
from ampsctl.journal.record import Command, JournalRecord, sow_delete_payload
from ampsctl.journal.views import view_records

@given(records)
def test_record_round_trip(record: JournalRecord) -> None:
    data = encode_record(record)
    assert len(data) >= MIN_RECORD
    assert decode_record(data) == record
    assert zlib.crc32(data, RESIDUE) == RESIDUE  # the residue property the batch check relies on


@given(st.lists(records, max_size=40))
@settings(max_examples=50)
def test_runs_of_records_decode_in_order(batch: list[JournalRecord]) -> None:
    encoder = Encoder()
    data = b"".join(encoder.encode_record(r) for r in batch)
    out: list[JournalRecord] = []
    assert Decoder().decode_records(data, 0, len(data), out) == len(data)
    assert out == batch
    views: list = []
    assert view_records(data, 0, len(data), views) == len(data)
    assert [(v.sequence, v.timestamp, v.command, v.topic) for v in views] == [(r.sequence, r.timestamp, r.command, r.topic) for r in batch]
    assert [v.record() for v in views] == batch


def test_none_and_empty_strings_stay_distinct() -> None:
    base = JournalRecord(1, 2, Command.PUBLISH, "t", "json", b"{}")
    empty = base._replace(sow_key="", correlation_id="", client_name="", expiration=0, publisher_sequence=0)
    assert decode_record(encode_record(base)) == base
    assert decode_record(encode_record(empty)) == empty
    assert encode_record(base) != encode_record(empty)


def test_header_round_trip_and_defects() -> None:
    header = encode_header(7, 1234)
    assert len(header) == HEADER_SIZE
    assert decode_header(header) == (7, 1234, 1)
    cases = {
        "magic": b"hello, world: this is a text file and not a segment\n",
        "short": header[:20],
        "zero": bytes(HEADER_SIZE),
        "version": header[:8] + struct.pack("<H", 2) + header[10:],
        "checksum": header[:20] + bytes([header[20] ^ 1]) + header[21:],
    }
    for kind, data in cases.items():
        with pytest.raises(HeaderDefect) as info:
            decode_header(data)
        assert info.value.kind == kind, (kind, info.value.reason)
    with pytest.raises(HeaderDefect, match="looks like text"):
        decode_header(cases["magic"])
    with pytest.raises(HeaderDefect, match="unsupported journal format version 2"):
        decode_header(cases["version"])


def _three() -> tuple[bytes, list[int]]:
    encoder = Encoder()
    parts = [encoder.encode(n, 1000 + n, Command.PUBLISH, "orders", "json", b'{"id":%d}' % n, str(n), None, None, "c", n)
             for n in (1, 2, 3)]
    offsets = [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    return b"".join(parts), offsets


def _each_flip_is_caught(data: bytes, start: int, stop: int, mask: int) -> None:
    """Every byte of the record at ``start`` flipped with ``mask``: the record before it comes
    out, then the defect names ``start`` (or, for a length that now runs past the data, the
    decode stops there and ``record_defect`` names it): never a wrong record, never a skip."""
    for position in range(start, stop):
        damaged = bytearray(data)
        damaged[position] ^= mask
        out: list[JournalRecord] = []
        try:
            end = Decoder().decode_records(bytes(damaged), 0, len(damaged), out)
        except RecordDefect as defect:
            assert defect.offset == start, position
        else:
            assert end == start and record_defect(bytes(damaged), start, len(damaged)) is not None, position
        assert [r.sequence for r in out] == [1], position


def test_every_flipped_byte_is_caught_and_located() -> None:
    data, offsets = _three()
    _each_flip_is_caught(data, offsets[1], offsets[2], 0x01)


def test_batches_larger_than_one_check_still_name_the_first_bad_record() -> None:
    encoder = Encoder()
    parts = [encoder.encode(n, n, Command.PUBLISH, "t", "json", b"x" * 200, None, None, None, None, None) for n in range(1, 200)]
    data = bytearray(b"".join(parts))
    bad = sum(len(p) for p in parts[:150])
    data[bad + 60] ^= 0xFF
    for decode in (Decoder().decode_records, view_records):
        out: list = []
        with pytest.raises(RecordDefect) as info:
            decode(bytes(data), 0, len(data), out)
        assert info.value.offset == bad and "checksum" in info.value.reason
        assert len(out) == 150


def test_incomplete_records_stop_the_decoder() -> None:
    data, offsets = _three()
    for cut in range(offsets[2] + 1, len(data)):
        out: list[JournalRecord] = []
        assert Decoder().decode_records(data[:cut], 0, cut, out) == offsets[2]
        assert len(out) == 2
        defect = record_defect(data[:cut], offsets[2], cut)
        assert defect is not None and defect.incomplete


def test_impossible_length_is_damage_not_incomplete() -> None:
    data, offsets = _three()
    damaged = bytearray(data)
    damaged[offsets[1]:offsets[1] + 4] = struct.pack("<I", 10)
    with pytest.raises(RecordDefect, match="impossible record length 10"):
        Decoder().decode_records(bytes(damaged), 0, len(damaged), [])


def test_unknown_command_and_flags_with_a_valid_checksum() -> None:
    """A record the writer could never have produced (a newer writer, a bug) is refused."""
    record = bytearray(encode_record(JournalRecord(1, 2, Command.PUBLISH, "t", "json", b"{}")))
    for offset, value, reason in ((20, 9, "unknown command byte 9"), (21, 0x80, "unknown flag bits 0x80")):
        forged = bytearray(record)
        forged[offset] = value
        forged[-4:] = struct.pack("<I", zlib.crc32(bytes(forged[:-4]), RESIDUE))
        with pytest.raises(RecordDefect, match=reason):
            decode_record(bytes(forged))


def test_topic_and_type_split_differently_in_one_decoder() -> None:
    """The decoder caches topic + message type bytes as one key; the split must still come out right."""
    batch = [JournalRecord(n, 2, Command.PUBLISH, topic, kind, b"{}") for n, (topic, kind) in
             enumerate([("ab", "c"), ("a", "bc"), ("ab", "c"), ("", "abc"), ("abc", "")], 1)]
    encoder = Encoder()
    data = b"".join(encoder.encode_record(r) for r in batch)
    out: list[JournalRecord] = []
    Decoder().decode_records(data, 0, len(data), out)
    assert out == batch


def test_decoded_fields_have_the_record_types() -> None:
    """Equality alone would pass an int for a Command or bytes for a str; the types must match too."""
    batch = [JournalRecord(1, 2, Command.SOW_DELETE, "t", "json", b"{}", "k", None, None, "c"),  # key + client
             JournalRecord(2, 3, Command.PUBLISH, "t", "json", b"", "", 5, "", "", 6),  # every flag, empty texts
             JournalRecord(3, 4, Command.EXPIRE, "t", "json", b"")]  # no flags
    data = b"".join(encode_record(r) for r in batch)
    out: list[JournalRecord] = []
    Decoder().decode_records(data, 0, len(data), out)
    assert out == batch
    for got, want in zip(out, batch, strict=True):
        assert type(got) is JournalRecord
        assert [type(value) for value in got] == [type(value) for value in want]


@pytest.mark.parametrize("optional", [
    {"sow_key": "7", "client_name": "pub-1"},  # the broker's usual record (a fast path of its own)
    {},
    {"sow_key": "7", "correlation_id": "c", "client_name": "pub-1", "expiration": 9, "publisher_sequence": 3},
])
def test_every_flipped_byte_is_caught_whatever_the_flags(optional: dict) -> None:
    encoder = Encoder()
    parts = [encoder.encode_record(JournalRecord(n, n, Command.PUBLISH, "orders", "json", b'{"id":%d}' % n)._replace(**optional))
             for n in (1, 2, 3)]
    _each_flip_is_caught(b"".join(parts), len(parts[0]), len(parts[0]) + len(parts[1]), 0x10)


@pytest.mark.parametrize("field", ["sow_key", "client_name"])
def test_a_text_that_is_not_utf8_with_a_valid_checksum(field: str) -> None:
    good = encode_record(JournalRecord(1, 2, Command.PUBLISH, "t", "json", b"{}", "k", None, None, "c"))
    record = bytearray(encode_record(JournalRecord(2, 2, Command.PUBLISH, "t", "json", b"{}", "k", None, None, "c")))
    record[57 if field == "sow_key" else 58] = 0xFF  # head 52, topic 1, type 4: sow key, then client name
    record[-4:] = struct.pack("<I", zlib.crc32(bytes(record[:-4]), RESIDUE))
    out: list[JournalRecord] = []
    with pytest.raises(RecordDefect, match=f"{field.replace('_', ' ')} is not valid UTF-8") as info:
        Decoder().decode_records(good + bytes(record), 0, len(good) + len(record), out)
    assert info.value.offset == len(good) and [r.sequence for r in out] == [1]


def test_the_decoder_caches_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Endless distinct shapes, topics and client names: the caches start again, the records stay right."""
    monkeypatch.setattr(codec, "_CACHE_LIMIT", 5)
    batch = [JournalRecord(n, n, Command.PUBLISH, f"t{n % 40:02d}", "json", b"{}", "k" * (n % 9), None, None, f"c{n % 13}")
             for n in range(1, 400)]  # 40 topics of one length, 9 key lengths (shapes), 13 client names
    encoder = Encoder()
    data = b"".join(encoder.encode_record(r) for r in batch)
    decoder = Decoder()
    for _ in range(2):
        out: list[JournalRecord] = []
        assert decoder.decode_records(data, 0, len(data), out) == len(data)
        assert out == batch
        assert len(decoder._layouts) <= 5 and len(decoder._texts) <= 5
        assert sum(len(layout[4]) for layout in decoder._layouts.values()) <= decoder._pairs <= 5


def test_field_lengths_that_do_not_add_up_with_a_valid_checksum() -> None:
    record = bytearray(encode_record(JournalRecord(1, 2, Command.PUBLISH, "topic", "json", b"{}", sow_key="k")))
    record[22] -= 1  # topic length one short: the payload would start a byte early
    record[-4:] = struct.pack("<I", zlib.crc32(bytes(record[:-4]), RESIDUE))
    with pytest.raises(RecordDefect, match="field lengths do not add up"):
        decode_record(bytes(record))
    out: list[JournalRecord] = []
    good = encode_record(JournalRecord(1, 2, Command.PUBLISH, "topic", "json", b"{}"))
    with pytest.raises(RecordDefect, match="field lengths do not add up"):
        Decoder().decode_records(good + bytes(record), 0, len(good) + len(record), out)
    assert [r.sequence for r in out] == [1]  # the good record before it was delivered


@pytest.mark.parametrize(("change", "message"), [
    ({"topic": "x" * 70000}, "topic is 70000 bytes"),
    ({"expiration": -1}, "expiration -1"),
    ({"publisher_sequence": 1 << 64}, "publisher sequence"),
    ({"timestamp": 1 << 63}, "timestamp"),
    ({"sequence": -1}, "sequence -1"),
    ({"command": 9}, "command 9"),
    ({"payload": "text"}, "payload must be bytes"),
    ({"topic": "\ud800"}, "not valid Unicode"),
])
def test_values_the_format_cannot_hold(change: dict, message: str) -> None:
    record = JournalRecord(1, 2, Command.PUBLISH, "t", "json", b"{}")._replace(**change)
    with pytest.raises(InputError, match=message):
        encode_record(record)


def test_sow_delete_payloads() -> None:
    assert sow_delete_payload(filter="/a = 1") == b'{"filter":"/a = 1"}'
    assert sow_delete_payload(keys=["1", "2"]) == b'{"keys":["1","2"]}'
    assert sow_delete_payload(data='{"id":1}') == b'{"data":"{\\"id\\":1}"}'
    with pytest.raises(ValueError):
        sow_delete_payload(filter="x", keys=["1"])


def test_the_documented_layout() -> None:
    """docs/formats.md pins these sizes and this example; a change here is a new format version."""
    assert (codec.HEADER_SIZE, codec.HEAD_SIZE, codec.MIN_RECORD) == (36, 52, 56)
    data = encode_record(JournalRecord(1, 0, Command.PUBLISH, "t", "json", b"{}"))
    assert data.hex() == (
        "3f000000" "0100000000000000" "0000000000000000" "01" "00" "0100" "0400" "0000" "0000" "0000"
        "0000000000000000" "0000000000000000" "02000000" "74" "6a736f6e" "7b7d" + data[-4:].hex()
    )
    assert struct.unpack("<I", data[-4:])[0] == zlib.crc32(data[:-4], RESIDUE)


def test_the_example_in_formats_md() -> None:
    """docs/formats.md shows these exact bytes; keep the two in step."""
    record = JournalRecord(1, 1_767_225_600_000_000, Command.PUBLISH, "orders", "json", b'{"id":1}', "1", None, None, "pub-1", None)
    data = encode_record(record)
    assert len(data) == 80
    assert data.hex(" ").endswith("7b 22 69 64 22 3a 31 7d ee 4e f8 58")
    assert encode_header(1, 1).hex(" ") == "89 41 4a 4c 0d 0a 1a 0a 01 00 24 00 00 00 00 00 01 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 d7 08 57 43"
    assert zlib.crc32(b"123456789") == 0xCBF43926
