"""Event files: subscription events in, affinity events out, one JSON object per line (issue 5).

Input lines::

    {"event":"subscribe","connection":"c1","client":"pub-a","topic":"ctl","sub_id":"1","options":"udo_coverage=/space/C.*"}
    {"event":"unsubscribe","connection":"c1","sub_id":"1"}
    {"event":"disconnect","connection":"c1"}

``options`` is an AMPS options string or a JSON object (a string or number is the value, true
or null a flag, false leaves the option out). ``sub_id`` may be a string or an integer. Any
event may carry ``time`` (a number or a string); it is checked and otherwise ignored, as the
engine has no clock. Blank lines are skipped. Anything else is an error naming the line:
a typo in a key must not silently drop an event.

Output lines hold the AMPS_* variables of the event (omitted ones are absent) and
``input_line``, the 1-based line of the input event that caused it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import orjson

from ampsctl.affinity.model import AffinityEvent, Disconnect, Subscribe, SubscriptionEvent, Unsubscribe
from ampsctl.errors import AmpsctlError, InputError, Location
from ampsctl.lines import not_utf8, without_bom
from ampsctl.options import parse_options

_FIELDS = {
    "subscribe": ("connection", "client", "topic", "sub_id"),
    "unsubscribe": ("connection", "sub_id"),
    "disconnect": ("connection",),
}
_OPTIONAL = {"subscribe": ("options", "time"), "unsubscribe": ("time",), "disconnect": ("time",)}
_ALLOWED = {kind: frozenset({"event", *fields, *_OPTIONAL[kind]}) for kind, fields in _FIELDS.items()}
_EXAMPLE = '{"event":"subscribe","connection":"c1","client":"pub-a","topic":"ctl","sub_id":"1"}'
_NO_OPTIONS: Mapping[str, str | None] = MappingProxyType({})  # shared: most subscribes carry none
# Names are not interned: the engine keeps one string per name as its dict keys anyway, and
# measured on 1M events, parsing and running the engine took 15-25% longer with sys.intern.
_new = tuple.__new__  # builds an event without the named tuple's Python-level __new__


def read_events(lines: Iterable[bytes], path: str) -> Iterator[tuple[int, SubscriptionEvent]]:
    """``(line number, event)`` for each non-blank line; InputError at the first bad one."""
    for number, line in enumerate(without_bom(lines), 1):
        if line.strip():
            yield number, parse_event(line, path, number)


def parse_event(line: bytes | str, path: str = "<event>", number: int = 0) -> SubscriptionEvent:
    """One event; errors name ``path:number``. The checks run on every line of files with
    millions of events, so the common shapes take the shortest path."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise _bad(not_utf8(line) or f"not valid JSON: {exc}", path, number) from None
    # A subscribe or unsubscribe with exactly its required fields, all non-empty strings: the
    # general path's checks in one expression (the length rules out any other key).
    if type(data) is dict:
        kind = data.get("event")
        if kind == "subscribe":
            connection, client, topic, sub_id = data.get("connection"), data.get("client"), data.get("topic"), data.get("sub_id")
            if (type(connection) is str and connection and type(client) is str and client and type(topic) is str and topic
                    and type(sub_id) is str and sub_id and len(data) == 5):
                return _new(Subscribe, (connection, client, topic, sub_id, _NO_OPTIONS))
        elif kind == "unsubscribe":
            connection, sub_id = data.get("connection"), data.get("sub_id")
            if type(connection) is str and connection and type(sub_id) is str and sub_id and len(data) == 3:
                return _new(Unsubscribe, (connection, sub_id))
    return _checked_event(data, path, number)


def _checked_event(data: Any, path: str, number: int) -> SubscriptionEvent:
    """Any event, with every check and its error message."""
    if type(data) is not dict:
        raise _bad(f"expected a JSON object, got {type(data).__name__}", path, number)
    kind = data.get("event")
    fields = _FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        raise _bad(f"unknown event kind {kind!r}", path, number, hint="event is one of subscribe, unsubscribe, disconnect")
    if not _ALLOWED[kind].issuperset(data):
        unknown = sorted(set(data) - _ALLOWED[kind])[0]
        known = ", ".join((*fields, *_OPTIONAL[kind]))
        raise _bad(f"unknown key {unknown!r} in {_a(kind)} event", path, number, hint=f"{_a(kind)} event has: {known}")
    values = []
    for name in fields:
        value = data.get(name)
        if type(value) is not str or not value:
            value = _text(value, name, kind, path, number)
        values.append(value)
    time = data.get("time")
    if time is not None and (isinstance(time, bool) or not isinstance(time, (int, float, str))):
        raise _bad(f"time must be a number or a string, got {orjson.dumps(time).decode()}", path, number)
    if kind == "subscribe":
        options = data.get("options")
        return _new(Subscribe, (*values, _NO_OPTIONS if options is None else _options(options, path, number)))
    if kind == "unsubscribe":
        return _new(Unsubscribe, values)
    return _new(Disconnect, values)


def _text(value: Any, name: str, kind: str, path: str, number: int) -> str:
    """A field that is not a non-empty string: an integer sub_id, or an error."""
    if name == "sub_id" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    wanted = "a non-empty string or an integer" if name == "sub_id" else "a non-empty string"
    what = "missing" if value is None else f"must be {wanted}, got {orjson.dumps(value).decode()}"
    raise _bad(f"{name} {what} in {_a(kind)} event", path, number, hint=f"for example {_EXAMPLE}")


def _a(kind: str) -> str:
    return f"an {kind}" if kind == "unsubscribe" else f"a {kind}"


def _options(value: Any, path: str, number: int) -> Mapping[str, str | None]:
    if isinstance(value, str):
        try:
            return parse_options(value)
        except AmpsctlError as exc:
            raise _bad(f"options: {exc.message}", path, number, hint=exc.hint) from None
    if isinstance(value, dict):
        options: dict[str, str | None] = {}
        for name, option in value.items():
            if option is True or option is None:
                options[name] = None
            elif isinstance(option, str):
                options[name] = option
            elif isinstance(option, (int, float)) and not isinstance(option, bool):
                options[name] = orjson.dumps(option).decode()
            elif option is not False:
                raise _bad(f"option {name!r} must be a string, a number or a boolean", path, number)
        return options
    raise _bad("options must be an AMPS options string or a JSON object", path, number, hint='e.g. "options":"udo_coverage=/space/C.*"')


def _bad(message: str, path: str, number: int, *, hint: str | None = None) -> InputError:
    return InputError(message, code="AFFINITY_EVENT", location=Location(path, number), hint=hint)


def event_record(event: AffinityEvent, input_line: int) -> dict[str, Any]:
    """The output object of one affinity event: its variables (as ``variables()``) and the line."""
    record: dict[str, Any] = event.variables()
    record["input_line"] = input_line
    return record


def dumps_record(record: dict[str, Any]) -> bytes:
    return orjson.dumps(record) + b"\n"
