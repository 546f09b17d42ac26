"""The journal's JSON Lines form: what ``journal import`` reads and ``journal dump`` writes.

One JSON object per line (docs/formats.md, "Journal JSON Lines"):

    {"command": "publish", "topic": "orders", "message_type": "json", "data": {"id": 1},
     "sow_key": "1", "expiration": 30, "correlation_id": "c1", "client_name": "pub-1",
     "publisher_sequence": 7, "timestamp": "20261122T093000.123456Z"}

* ``command``: publish (the default), delta_publish, sow_delete or expire.
* ``topic``: required. ``message_type``: json by default; any name is accepted, and the
  message of a json, xml, fix or nvfix record is checked with that type's codec.
* The message of publish and delta_publish is exactly one of ``data`` (a JSON object, json
  records only), ``payload`` (the message text) or ``payload_base64`` (any bytes).
* sow_delete takes exactly one of ``filter`` (an AMPS filter, checked), ``keys`` (a list of
  SOW keys, or one comma-separated string) or ``data`` (the message whose key fields name the
  record: a JSON object or the message text); expire takes ``sow_key`` and no message.
* ``timestamp``: µs since the epoch (an integer) or AMPS/ISO-8601 text, UTC. A record without
  one gets the previous record's timestamp plus the import's step (1 ms unless told), and the
  first record the import's start (2026-01-01T00:00:00Z unless told): deterministic, so the
  same file always gives the same journal.
* ``sequence`` and ``bookmark`` (written by dump) are ignored: the journal assigns them.
  Any other field is an error, so a misspelt one is not silently dropped.

``record_to_json`` writes exactly this shape, so ``dump --format jsonl`` imports back into an
identical journal (sequences and bookmarks included, when imported into a new journal).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from ampsctl.errors import AmpsctlError, InputError, Location
from ampsctl.journal.bookmarks import parse_timestamp, timestamp_value
from ampsctl.journal.record import Command, JournalRecord, sow_delete_payload
from ampsctl.lines import not_utf8, without_bom
from ampsctl.messages.json_codec import allowing_deep_nesting, dumps_exact, loads_as_written

DEFAULT_START = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z in µs
DEFAULT_STEP = 1_000  # µs between records that have no timestamp
_OPTIONAL_TEXT = ("sow_key", "correlation_id", "client_name")
_OPTIONAL_INT = ("expiration", "publisher_sequence")
_MESSAGE = ("data", "payload", "payload_base64")
_DELETE_BY = ("filter", "keys", "data", "payload")
_IGNORED = ("sequence", "bookmark")
_KNOWN = frozenset(("command", "topic", "message_type", "timestamp", *_OPTIONAL_TEXT, *_OPTIONAL_INT,
                    *_MESSAGE, "filter", "keys", *_IGNORED))
_CHECKED_TYPES = ("json", "xml", "fix", "nvfix")
_UINT64 = (1 << 64) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1  # a journal record's timestamp is a signed 64-bit µs count
_QUOTED = {name: b'"%s"' % name.encode("ascii") for name in _KNOWN}
# a name spelled with a \\u escape (every field name is ASCII letters and _): it may repeat another
_ESCAPED_NAME = re.compile(rb'"[A-Za-z_]*\\u[^"]*"\s*:')
_NOT_UTF8_HINT = ("JSON Lines are UTF-8: convert the file first (iconv -f LATIN1 -t UTF-8, or -f UTF-16 for one that "
                  "starts with the bytes FF FE), and give binary messages as payload_base64")
HINT = ('one JSON object per line, e.g. {"command":"publish","topic":"orders","data":{"id":1}}; '
        "see `ampsctl journal import --help`")


class Clock:
    """Timestamps for records without one: ``start``, then the previous record's plus ``step``."""

    __slots__ = ("previous", "start", "step")

    def __init__(self, start: int = DEFAULT_START, step: int = DEFAULT_STEP) -> None:
        self.start, self.step = start, step
        self.previous: int | None = None

    def stamp(self, given: int | None) -> int:
        """The record's timestamp; InputError (no location) when a computed one leaves the journal's range."""
        value = given if given is not None else (self.start if self.previous is None else self.previous + self.step)
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise _bad(f"this record has no timestamp, and the previous record's ({self.previous}) plus the step "
                       f"({self.step} µs) is {value}, beyond the largest timestamp a journal holds ({_INT64_MAX} µs)",
                       hint="give this record a 'timestamp', or an earlier one to the record before it "
                            "(or a smaller --step-us to `ampsctl journal import`)")
        self.previous = value
        return value


def parse_line(raw: bytes | str, clock: Clock) -> JournalRecord:
    """One JSONL line as a record (sequence 0: the writer assigns it); InputError without a location."""
    try:
        obj = _loads(raw)
    except ValueError as exc:  # orjson's JSONDecodeError and json's are ValueErrors
        bad_byte = not_utf8(raw)  # orjson calls any bad byte "surrogates not allowed" at char 0
        if bad_byte is not None:
            raise _bad(f"the line is {bad_byte}", hint=_NOT_UTF8_HINT) from None
        raise _bad(f"not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise _bad(f"a line must be a JSON object, not {_kind(obj)}")
    unknown = sorted(set(obj) - _KNOWN)
    if unknown:
        raise _bad(f"unknown field {unknown[0]!r}", hint=f"fields: {', '.join(sorted(_KNOWN))}")
    twice = _field_twice(raw, obj)
    if twice is not None:
        raise _bad(f"field {twice!r} is given twice", hint="give each field once: JSON keeps only the last of two equal names")
    command = _command(obj.get("command", "publish"))
    topic = obj.get("topic")
    if not isinstance(topic, str) or not topic:
        raise _bad("'topic' is required and must be a non-empty string")
    message_type = obj.get("message_type", "json")
    if not isinstance(message_type, str) or not message_type:
        raise _bad("'message_type' must be a non-empty string such as json, xml, fix or nvfix")
    texts = {name: _text(obj, name) for name in _OPTIONAL_TEXT}
    numbers = {name: _count(obj, name) for name in _OPTIONAL_INT}
    if command is Command.SOW_DELETE:
        payload = _delete_payload(obj, message_type)
    elif command is Command.EXPIRE:
        payload = _expire_payload(obj, texts["sow_key"])
    else:
        payload = _message(obj, message_type)
    timestamp = clock.stamp(_timestamp(obj.get("timestamp")))
    return JournalRecord(0, timestamp, command, topic, message_type, payload, texts["sow_key"], numbers["expiration"],
                         texts["correlation_id"], texts["client_name"], numbers["publisher_sequence"])


def parse_lines(lines: Iterable[bytes], source: str, clock: Clock) -> Iterator[JournalRecord]:
    """Records of every non-blank line; errors carry ``source:line``."""
    for number, line in enumerate(without_bom(lines), 1):
        if not line.strip():
            continue
        try:
            yield parse_line(line, clock)
        except AmpsctlError as exc:
            raise InputError(exc.message, code="JOURNAL_JSONL", hint=exc.hint or HINT, location=Location(source, number)) from None


def record_to_json(record: JournalRecord) -> dict[str, Any]:
    """The JSONL object of a record (None fields left out; see the module docstring)."""
    out: dict[str, Any] = {
        "sequence": record.sequence,
        "bookmark": record.bookmark,
        "timestamp": timestamp_value(record.timestamp),
        "command": record.command.label,
        "topic": record.topic,
        "message_type": record.message_type,
    }
    for name in (*_OPTIONAL_TEXT, *_OPTIONAL_INT):
        value = getattr(record, name)
        if value is not None:
            out[name] = value
    if record.command is Command.SOW_DELETE:
        out.update(_delete_fields(record.payload))
    elif record.command is not Command.EXPIRE or record.payload:
        out.update(_payload_fields(record.payload))
    return out


@dataclass(frozen=True, slots=True)
class DeleteCriteria:
    """What a SOW_DELETE payload says: exactly one of filter, keys, data (message text)."""

    filter: str | None = None
    keys: tuple[str, ...] | None = None
    data: bytes | None = None


def delete_criteria(payload: bytes) -> DeleteCriteria | None:
    """The criteria of a SOW_DELETE payload, or None when it is not one of the three shapes."""
    try:
        obj = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or len(obj) != 1:
        return None
    (name, value), = obj.items()
    if name == "filter" and isinstance(value, str):
        return DeleteCriteria(filter=value)
    if name == "keys" and isinstance(value, list) and all(isinstance(k, str) for k in value):
        return DeleteCriteria(keys=tuple(value))
    if name == "data" and isinstance(value, str):
        return DeleteCriteria(data=value.encode("utf-8"))
    return None


# ----------------------------------------------------------------------------- helpers


def _loads(raw: bytes | str) -> Any:
    """A line's JSON, checked by orjson, its numbers as written: a message given as an object is
    journaled with ``1.50``, ``1E5`` and integers beyond 64 bits as they are in the line."""
    return loads_as_written(raw)


def _field_twice(raw: bytes | str, obj: dict[str, Any]) -> str | None:
    """A field name (all known ones) the line's object holds twice (orjson keeps the last silently), or None.

    Cheap test first: each name appears once in the text as written, and no name is spelled
    with a \\u escape; only a line that fails it (a name repeated inside ``data`` too, say) is
    read again by the standard library, which shows every name of the object."""
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    counts = list(map(data.count, map(_QUOTED.__getitem__, obj)))  # every name is known by now
    if counts.count(1) == len(counts) and (b"\\" not in data or not _ESCAPED_NAME.search(data)):
        return None
    names: list[str] = []

    def pairs(found: list[tuple[str, Any]]) -> None:
        names[:] = [name for name, _ in found]  # the outermost object is the last one closed

    allowing_deep_nesting(lambda text: json.loads(text, object_pairs_hook=pairs), data)  # orjson has accepted the line
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def _dumps(value: Any) -> bytes:
    """``data`` as message bytes; integers beyond 64 bits are written exactly (the standard library)."""
    return dumps_exact(value)


def _bad(message: str, *, hint: str = HINT) -> InputError:
    return InputError(message, code="JOURNAL_JSONL", hint=hint)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(type(value), "a number" if value is not None else "null")


def _command(value: Any) -> Command:
    if isinstance(value, str):
        try:
            return Command.from_label(value)
        except ValueError:
            pass
    raise _bad(f"unknown command {value!r}", hint="command is one of publish, delta_publish, sow_delete, expire")


def _text(obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    if value is not None and not isinstance(value, str):
        raise _bad(f"'{name}' must be a string, not {_kind(value)}")
    return value


def _count(obj: dict[str, Any], name: str) -> int | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _UINT64:
        unit = " (seconds; 0 = never expires)" if name == "expiration" else ""
        raise _bad(f"'{name}' must be a whole number from 0 to {_UINT64}{unit}, not {value!r}")
    return value


def _timestamp(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _bad(f"'timestamp' must be µs since the epoch or timestamp text, not {_kind(value)}")
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise _bad(f"'timestamp' {value} is out of range (µs since the epoch)")
        return value
    return parse_timestamp(value)


def _only_one(obj: dict[str, Any], names: tuple[str, ...], what: str) -> tuple[str, Any]:
    given = [name for name in names if name in obj]
    if len(given) != 1:
        found = f"got {', '.join(repr(n) for n in given)}" if given else "got none"
        raise _bad(f"{what} needs exactly one of {', '.join(repr(n) for n in names)} ({found})")
    return given[0], obj[given[0]]


def _message(obj: dict[str, Any], message_type: str) -> bytes:
    for name in ("filter", "keys"):
        if name in obj:
            raise _bad(f"'{name}' belongs to sow_delete, not to {obj.get('command', 'publish')}")
    name, value = _only_one(obj, _MESSAGE, f"a {obj.get('command', 'publish')}")
    if name == "data":
        if message_type.lower() != "json" or not isinstance(value, dict):
            raise _bad("'data' must be a JSON object, for json messages; give other messages as 'payload' text")
        return _dumps(value)
    if not isinstance(value, str):
        raise _bad(f"'{name}' must be a string, not {_kind(value)}")
    if name == "payload_base64":
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise _bad("'payload_base64' is not valid Base64") from None
    try:
        payload = value.encode("utf-8")
    except UnicodeEncodeError:
        raise _bad(f"'{name}' is not valid Unicode text; give binary messages as 'payload_base64'") from None
    _check_message(payload, message_type)
    return payload


def _check_message(payload: bytes, message_type: str) -> None:
    """Parse a message of a type ampsctl knows, so a typo fails the import, not the replay."""
    kind = message_type.strip().lower()
    if kind not in _CHECKED_TYPES:
        return
    from ampsctl.messages import types

    try:
        types.codec(kind).parse(payload)
    except AmpsctlError as exc:
        raise _bad(f"the {kind} message is invalid: {exc.message}", hint=exc.hint or HINT) from None


def _delete_payload(obj: dict[str, Any], message_type: str) -> bytes:
    if "payload_base64" in obj:
        raise _bad("'payload_base64' cannot be used with sow_delete; give 'data' or 'payload' text")
    name, value = _only_one(obj, _DELETE_BY, "a sow_delete")
    if name == "filter":
        if not isinstance(value, str) or not value.strip():
            raise _bad("'filter' must be a non-empty string")
        from ampsctl.filter.compiler import compile_filter
        from ampsctl.filter.errors import FilterError
        from ampsctl.filter.parser import parse

        try:
            compile_filter(parse(value))
        except FilterError as exc:
            where = f" at character {exc.position + 1}" if exc.position is not None else ""
            raise _bad(f"invalid 'filter' {value!r}{where}: {exc.message}", hint=exc.hint or HINT) from None
        return sow_delete_payload(filter=value)
    if name == "keys":
        keys = [k.strip() for k in value.split(",")] if isinstance(value, str) else value
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k for k in keys):
            raise _bad("'keys' must be a non-empty list of SOW keys (strings), or one comma-separated string")
        return sow_delete_payload(keys=keys)
    if isinstance(value, dict) and name == "data":
        if message_type.lower() != "json":
            raise _bad("'data' as a JSON object needs message_type json; give other messages as text")
        text = _dumps(value).decode("utf-8")
    elif isinstance(value, str):
        text = value
        _check_message(value.encode("utf-8"), message_type)
    else:
        raise _bad(f"'{name}' must be a JSON object or the message text, not {_kind(value)}")
    return sow_delete_payload(data=text)


def _expire_payload(obj: dict[str, Any], sow_key: str | None) -> bytes:
    extra = [name for name in (*_MESSAGE, "filter", "keys") if name in obj]
    if extra:
        raise _bad(f"an expire has no message: remove {extra[0]!r}")
    if not sow_key:
        raise _bad("an expire needs 'sow_key': the key of the record that expired")
    return b""


def _payload_fields(payload: bytes) -> dict[str, str]:
    try:
        return {"payload": payload.decode("utf-8")}
    except UnicodeDecodeError:
        return {"payload_base64": base64.b64encode(payload).decode("ascii")}


def _delete_fields(payload: bytes) -> dict[str, Any]:
    criteria = delete_criteria(payload)
    if criteria is None:
        return _payload_fields(payload)  # not written by ampsctl: show it as it is
    if criteria.filter is not None:
        return {"filter": criteria.filter}
    if criteria.keys is not None:
        return {"keys": list(criteria.keys)}
    return {"data": (criteria.data or b"").decode("utf-8")}
