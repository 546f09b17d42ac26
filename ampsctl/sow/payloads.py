"""The message side of a SOW topic: parse, key, merge and serialize through ampsctl.messages.

One ``Payloads`` per topic wraps the codec of its message type, so the SOW never has a second
merge or key implementation (DESIGN.md): delta publish is ``codec.merge``, generated keys are
``messages.keys.generate_key`` over ``stream.record_key_values``, publisher keys go through
``keys.check_supplied_key`` (Base64 characters only).

Types without a codec here (``binary``, ``bflat``, ``msgpack``, ...) are *opaque*: the payload
is stored as it is, a publisher-supplied key is required, a delta publish stores the literal
delta (spec/messages.md §6.2 R5), and filters, select lists and generated keys are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from ampsctl.errors import InputError, UsageError
from ampsctl.messages.json_codec import JSON_TEXT
from ampsctl.messages.json_record import JsonRecord
from ampsctl.messages.keys import check_supplied_key, generate_key
from ampsctl.messages.stream import record_key_values

_JSON_SPACE = b" \t\r\n"


class Payloads:
    """Parse/key/merge/serialize for one message type."""

    __slots__ = ("message_type", "codec")

    def __init__(self, message_type: str) -> None:
        from ampsctl.messages.types import codec

        self.message_type = message_type
        try:
            self.codec: Any = codec(message_type)
        except UsageError:
            self.codec = None  # opaque: stored as bytes, see the module docstring

    @property
    def opaque(self) -> bool:
        return self.codec is None

    def parse(self, raw: bytes) -> Any:
        """The document of a payload (the raw bytes for an opaque type); InputError on garbage."""
        return raw if self.codec is None else self.codec.parse(raw)

    def serialize(self, doc: Any) -> bytes:
        return bytes(doc) if self.codec is None else self.codec.serialize(doc)

    def merge(self, stored: Any, delta: Any) -> Any:
        """Delta publish: the stored document updated by the delta (the delta itself when opaque)."""
        return delta if self.codec is None else self.codec.merge(stored, delta)

    def merged(self, stored: bytes, base: Any, payload: bytes, delta: Any, *,
               base_keeps_text: bool = False) -> tuple[bytes, Any]:
        """Delta publish as the SOW stores it: the message ``stored`` (parsed: ``base``) updated
        by ``payload`` (parsed: ``delta``), as (message, document).

        JSON numbers keep their text (docs/messages.md, "Number text"): a field the delta did
        not touch is written as it was published (``1.50``, ``1E5``), one it set as the delta
        wrote it. Only a message with a number orjson would write otherwise is read again
        (``JSON_TEXT``); its document holds ``FloatText``/``IntText``, which have the values the
        plain parse reads, so keys, filters and index columns do not change.
        ``base_keeps_text``: ``base`` is a document this method returned (so it is not checked
        again; a record updated by many deltas pays the check once)."""
        if self.message_type == "json" and self.codec is not None:
            base = base if base_keeps_text else JSON_TEXT.keeping_text(stored, base)
            delta = JSON_TEXT.keeping_text(payload, delta)
        doc = self.merge(base, delta)
        return self.serialize(doc), doc

    def record(self, doc: Any) -> Any:
        """The filterable record of a document; InputError for an opaque type."""
        if self.codec is None:
            raise InputError(
                f"messages of type '{self.message_type}' cannot be filtered",
                code="SOW_TYPE",
                hint="content filters, select lists and order-by need a parsed type: json, xml, fix or nvfix",
            )
        return self.codec.record(doc)

    def matcher(self, predicate: Callable[[Any], bool]) -> Callable[[bytes], Any]:
        """``raw -> document`` when the message passes ``predicate``, else None (scans' inner loop).

        JSON takes a direct route (orjson and JsonRecord without the codec's checks, which
        every stored message passed when it was published); a message that no longer parses
        is an InputError, as from ``parse``.
        """
        if self.message_type == "json" and self.codec is not None:
            loads, record = orjson.loads, JsonRecord

            def test_json(raw: bytes) -> Any:
                try:
                    doc = loads(raw)
                except orjson.JSONDecodeError:
                    doc = self.parse(raw)  # raises the codec's error
                return doc if predicate(record(doc)) else None

            return test_json
        parse, fields = self.parse, self.record

        def test(raw: bytes) -> Any:
            doc = parse(raw)
            return doc if predicate(fields(doc)) else None

        return test

    def select(self, doc: Any, paths: Sequence[str]) -> Any:
        """The document reduced to the fields of a select list (the codec's diff against nothing)."""
        if self.codec is None:
            self.record(doc)  # raises the opaque-type error
        return self.codec.diff(None, doc, (), send_keys=False, select=list(paths))

    def key(self, doc: Any, *, key_fields: Sequence[str], domain: str, supplied: str | None) -> str:
        """The SOW key of a message: generated from ``key_fields``, else the publisher's ``supplied`` one."""
        if key_fields:
            if self.codec is None:
                raise InputError(
                    f"a SOW topic of type '{self.message_type}' cannot generate keys from Key fields",
                    code="SOW_TYPE", hint="remove the <Key> elements and have publishers send a SowKey",
                )
            return generate_key(domain, record_key_values(self.codec, doc, key_fields))
        if supplied is None:
            raise InputError(
                "the topic has no Key fields and the message carries no SowKey",
                code="SOWKEY", hint="publishers must send a SowKey on topics configured without <Key>",
            )
        return check_supplied_key(supplied)


def json_plain(payload: bytes) -> int:
    """1 when SQLite's JSON functions find every name of a JSON payload where orjson does, else 0.

    They differ on an escaped name (SQLite's paths match the raw text) and on a name twice in one
    object (SQLite reads the first, orjson the last), so 1 means: no backslash, and as many names
    as the parsed document has keys. The scan pre-filter (``jsonfilter``) skips its text guards
    for such rows. About 0.9 µs a record (orjson there and back, so a document nested deeper than
    the 254 levels orjson writes is 0); 0 is always safe. ``sow stats --verify`` refuses a stored
    1 this does not give (docs/formats.md)."""
    payload = bytes(payload)  # a memoryview has no split, and ``in`` would compare whole items
    if b"\\" in payload:
        return 0
    try:
        canon = orjson.dumps(orjson.loads(payload))
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return 0
    return 1 if canon == payload or _names(payload) == _names(canon) else 0


def _names(text: bytes) -> int:
    """The names in JSON text without a backslash: every quote delimits a string, so the text
    between strings is every other piece, and a string is a name when a colon follows it."""
    between = b"\x00".join(text.split(b'"')[0::2]).translate(None, _JSON_SPACE)
    return between.count(b"\x00:")
