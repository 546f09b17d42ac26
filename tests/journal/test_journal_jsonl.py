"""The JSON Lines form of records: what import accepts, what dump writes, and line-numbered errors."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from journal_strategies import records

from ampsctl.errors import InputError
from ampsctl.journal.jsonl import DEFAULT_START, Clock, delete_criteria, parse_line, parse_lines, record_to_json
from ampsctl.journal.record import Command, JournalRecord


def test_publish_with_data_and_every_option() -> None:
    line = ('{"command":"publish","topic":"orders","message_type":"json","data":{"id":1},"sow_key":"k","expiration":30,'
            '"correlation_id":"c","client_name":"me","publisher_sequence":7,"timestamp":"20260102T000000.5Z"}')
    record = parse_line(line, Clock())
    assert record == JournalRecord(0, 1_767_312_000_500_000, Command.PUBLISH, "orders", "json", b'{"id":1}', "k", 30, "c", "me", 7)


def test_defaults_and_clock() -> None:
    clock = Clock(step=5)
    first = parse_line('{"topic":"t","payload":"{}"}', clock)
    assert (first.command, first.message_type, first.timestamp) == (Command.PUBLISH, "json", DEFAULT_START)
    assert parse_line('{"topic":"t","payload":"{}","timestamp":100}', clock).timestamp == 100
    assert parse_line('{"topic":"t","payload":"{}"}', clock).timestamp == 105


@pytest.mark.parametrize(("line", "payload"), [
    ('{"command":"sow_delete","topic":"t","filter":"/a = 1"}', b'{"filter":"/a = 1"}'),
    ('{"command":"sow_delete","topic":"t","keys":["a","b"]}', b'{"keys":["a","b"]}'),
    ('{"command":"sow_delete","topic":"t","keys":"a, b"}', b'{"keys":["a","b"]}'),
    ('{"command":"sow_delete","topic":"t","data":{"id":1}}', b'{"data":"{\\"id\\":1}"}'),
    ('{"command":"sow_delete","topic":"t","message_type":"nvfix","payload":"id=1\\u0001"}', b'{"data":"id=1\\u0001"}'),
    ('{"command":"expire","topic":"t","sow_key":"k"}', b""),
    ('{"command":"delta_publish","topic":"t","message_type":"bflat","payload_base64":"AAEC"}', b"\x00\x01\x02"),
])
def test_commands(line: str, payload: bytes) -> None:
    assert parse_line(line, Clock()).payload == payload


@pytest.mark.parametrize(("line", "message"), [
    ("[1]", "must be a JSON object, not an array"),
    ("{bad", "not valid JSON"),
    ('{"topic":"t","dat":{}}', "unknown field 'dat'"),
    ('{"payload":"{}"}', "'topic' is required"),
    ('{"topic":"t","command":"publsh","payload":"{}"}', "unknown command 'publsh'"),
    ('{"topic":"t"}', "exactly one of 'data', 'payload', 'payload_base64' (got none)"),
    ('{"topic":"t","data":{},"payload":"{}"}', "(got 'data', 'payload')"),
    ('{"topic":"t","message_type":"fix","data":{"a":1}}', "'data' must be a JSON object, for json messages"),
    ('{"topic":"t","payload":"not json"}', "the json message is invalid"),
    ('{"topic":"t","message_type":"fix","payload":"garbage"}', "the fix message is invalid"),
    ('{"topic":"t","payload_base64":"***"}', "not valid Base64"),
    ('{"topic":"t","payload":"{}","expiration":-1}', "'expiration' must be a whole number"),
    ('{"topic":"t","payload":"{}","expiration":1.5}', "'expiration' must be a whole number"),
    ('{"topic":"t","payload":"{}","sow_key":1}', "'sow_key' must be a string, not a number"),
    ('{"topic":"t","payload":"{}","timestamp":"noon"}', "invalid timestamp 'noon'"),
    ('{"topic":"t","payload":"{}","timestamp":true}', "'timestamp' must be"),
    ('{"command":"sow_delete","topic":"t","filter":"/a = = 1"}', "invalid 'filter' '/a = = 1' at character 6"),
    ('{"command":"sow_delete","topic":"t","keys":[]}', "'keys' must be a non-empty list"),
    ('{"command":"sow_delete","topic":"t"}', "a sow_delete needs exactly one of"),
    ('{"command":"expire","topic":"t"}', "an expire needs 'sow_key'"),
    ('{"command":"expire","topic":"t","sow_key":"k","payload":"{}"}', "an expire has no message"),
    ('{"topic":"t","filter":"/a = 1","payload":"{}"}', "'filter' belongs to sow_delete"),
])
def test_bad_lines(line: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_line(line, Clock())
    assert message in info.value.message


def test_errors_name_the_line() -> None:
    lines = [b'{"topic":"t","payload":"{}"}\n', b"\n", b'{"topic":"t"}\n']
    with pytest.raises(InputError) as info:
        list(parse_lines(lines, "in.jsonl", Clock()))
    assert str(info.value.location) == "in.jsonl:3"


@given(records)
def test_dump_form_imports_back(record: JournalRecord) -> None:
    if record.command is Command.SOW_DELETE:
        record = record._replace(payload=orjson.dumps({"keys": ["a", "b"]}))
    if record.command is Command.EXPIRE:
        record = record._replace(payload=b"", sow_key=record.sow_key or "k")
    if not record.topic or not record.message_type or record.message_type.lower() in ("json", "xml", "fix", "nvfix"):
        record = record._replace(topic=record.topic or "t", message_type="opaque")  # no message check for this property
    obj = record_to_json(record)
    again = parse_line(orjson.dumps(obj), Clock())
    assert again == record._replace(sequence=0)


def test_delete_criteria() -> None:
    assert delete_criteria(b'{"filter":"/a = 1"}').filter == "/a = 1"
    assert delete_criteria(b'{"keys":["1"]}').keys == ("1",)
    assert delete_criteria(b'{"data":"x"}').data == b"x"
    assert delete_criteria(b'{"filter":1}') is None and delete_criteria(b"junk") is None


@pytest.mark.parametrize("command", ["publish", "sow_delete"])
def test_integers_beyond_64_bits_are_kept_exactly(command: str) -> None:
    line = '{"command":"%s","topic":"o","data":{"id":123456789012345678901234567890,"f":1.5,"n":-98765432109876543210}}'
    record = parse_line(line % command, Clock())
    assert b"123456789012345678901234567890" in record.payload and b"-98765432109876543210" in record.payload
    assert b"1.5" in record.payload and b"e+" not in record.payload  # not read as a float


@pytest.mark.parametrize("extra", ['"x":NaN', '"x":1e400', '"s":"\\ud800"', '"deep":' + "[" * 5000 + "]" * 5000])
def test_a_line_with_a_long_integer_still_refuses_what_json_does_not_allow(extra: str) -> None:
    with pytest.raises(InputError, match="not valid JSON"):
        parse_line('{"topic":"o","data":{"id":123456789012345678901234567890,%s}}' % extra, Clock())


@pytest.mark.parametrize("number", ["-9223372036854775809", "-9999999999999999999", "18446744073709551616"])
def test_integers_just_beyond_64_bits_are_kept_exactly(number: str) -> None:
    # -9223372036854775809 has 19 digits, like in-range integers: orjson read it as a float.
    record = parse_line('{"topic":"o","data":{"n":%s}}' % number, Clock())
    assert record.payload == b'{"n":%s}' % number.encode()



@pytest.mark.parametrize("depth", [900, 1000, 1020])
def test_a_deep_line_with_a_long_integer_is_imported_not_a_crash(depth: int) -> None:
    # orjson accepts up to 1024 levels; the standard library's reader ran out of recursion first.
    data = '{"a":' * depth + "123456789012345678901234567890" + "}" * depth
    record = parse_line('{"topic":"o","data":%s}' % data, Clock())
    assert record.payload == data.encode()


@pytest.mark.parametrize(("line", "twice"), [
    ('{"topic":"a","data":{"id":1},"topic":"b"}', "topic"),
    ('{"topic" : "a", "payload":"{}", "topic"\t:"b"}', "topic"),
    ('{"topic":"a","payload":"{}","client_name":"x","client\\u005fname":"y"}', "client_name"),
    ('{"\\u0074opic":"a","payload":"{}","topic":"b"}', "topic"),
    ('{"topic":"a","data":{"topic":"t"},"data":{"id":2}}', "data"),
    ('{"topic":"a","data":{"topic":"t","data":{}}}', None),  # names of the message are not fields
    ('{"topic":"a","payload":"{\\"topic\\":1,\\"topic\\":2}"}', None),
    ('{"topic":"a","message_type":"fix","payload":"55=\\u00e9\\u0001"}', None),
    ('{"topic":"caf\\u00e9","data":{"n\\u00e9":1}}', None),
])
def test_a_field_given_twice_is_refused(line: str, twice: str | None) -> None:
    # orjson keeps the last of two equal names, so the record silently took the second value
    if twice is None:
        parse_line(line, Clock())
        return
    with pytest.raises(InputError, match=f"field '{twice}' is given twice"):
        parse_line(line, Clock())
