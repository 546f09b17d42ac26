"""Event files (docs/affinity.md): every accepted form, and a clear error for everything else."""

from __future__ import annotations

import orjson
import pytest

from ampsctl.affinity.eventfile import event_record, parse_event, read_events
from ampsctl.affinity.model import AffinityAction, AffinityEvent, Cause, Disconnect, Subscribe, Unsubscribe
from ampsctl.errors import InputError, Location

HERE = Location("events.jsonl", 7)
AT = (HERE.path, HERE.line)


def test_the_three_event_kinds() -> None:
    lines = [
        b'{"event":"subscribe","connection":"c1","client":"pub-a","topic":"ctl","sub_id":"1","options":"udo_coverage=/space/C.*"}\n',
        b"\n",
        b'{"event":"unsubscribe","connection":"c1","sub_id":1,"time":1732262400.5}\n',
        b'{"event":"disconnect","connection":"c1","time":"2026-11-22T09:30:00Z"}',
    ]
    assert list(read_events(lines, "f")) == [
        (1, Subscribe("c1", "pub-a", "ctl", "1", {"udo_coverage": "/space/C.*"})),
        (3, Unsubscribe("c1", "1")),
        (4, Disconnect("c1")),
    ]


def test_options_as_a_json_object() -> None:
    event = parse_event(
        b'{"event":"subscribe","connection":"c","client":"x","topic":"t","sub_id":"s",'
        b'"options":{"udo_coverage":"/a","oof":true,"no_empties":null,"live":false,"top_n":10}}',
        *AT,
    )
    assert event.options == {"udo_coverage": "/a", "oof": None, "no_empties": None, "top_n": "10"}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"event":"subscribe"', "not valid JSON"),
        (b'["subscribe"]', "expected a JSON object, got list"),
        (b'{"event":"publish","connection":"c"}', "unknown event kind 'publish'"),
        (b'{"connection":"c"}', "unknown event kind None"),
        (b'{"event":"subscribe","connection":"c","client":"x","topic":"t"}', "sub_id missing in a subscribe event"),
        (b'{"event":"subscribe","connection":"c","client":"","topic":"t","sub_id":"1"}', "client must be a non-empty string"),
        (b'{"event":"subscribe","connection":"c","client":"x","topic":7,"sub_id":"1"}', "topic must be a non-empty string, got 7"),
        (b'{"event":"unsubscribe","connection":"c","sub_id":true}', "sub_id must be a non-empty string"),
        (b'{"event":"disconnect","conection":"c"}', "unknown key 'conection' in a disconnect event"),
        (b'{"event":"disconnect","connection":"c","time":[1]}', "time must be a number or a string"),
        (b'{"event":"subscribe","connection":"c","client":"x","topic":"t","sub_id":"1","options":5}', "options must be"),
        (b'{"event":"subscribe","connection":"c","client":"x","topic":"t","sub_id":"1","options":"a,=b"}', "options: option '=b' has no name"),
        (b'{"event":"subscribe","connection":"c","client":"x","topic":"t","sub_id":"1","options":{"a":[1]}}', "option 'a' must be"),
        (b"\xff\xfe", "not valid UTF-8: byte 0xff at byte offset 0"),
    ],
)
def test_bad_lines_name_the_line(line: bytes, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_event(line, *AT)
    assert message in caught.value.message
    assert caught.value.location == HERE


def test_read_events_stops_at_the_first_bad_line_with_its_number() -> None:
    lines = [b'{"event":"disconnect","connection":"c"}', b"", b"nonsense"]
    events = read_events(lines, "f.jsonl")
    assert next(events) == (1, Disconnect("c"))
    with pytest.raises(InputError) as caught:
        next(events)
    assert str(caught.value.location) == "f.jsonl:3"


def test_output_record_holds_the_variables_and_the_input_line() -> None:
    no_handlers = AffinityEvent(AffinityAction.NO_HANDLERS, "/t/A", None, None, "sub", "s1", Cause.SUBSCRIBE)
    assert orjson.dumps(event_record(no_handlers, 4)) == (
        b'{"AMPS_AFFINITY_ACTION":"no_handlers","AMPS_TOPIC":"/t/A",'
        b'"AMPS_SUBSCRIBER_CLIENT_NAME":"sub","AMPS_SUBSCRIBER_CONNECTION_NAME":"s1","input_line":4}'
    )
