"""JSON numbers that keep the text they were written with (docs/messages.md, "Number text").

orjson reads a number into a float or an int and writes it back in its own form: ``1E5``
comes out as ``100000.0``, ``1.50`` as ``1.5``, ``-0`` as ``0``, and a number with more digits
than a double holds loses them. A delta merge must write the fields it did not touch as they
were published, so the text-keeping codecs (``json_codec.TextJsonCodec``, ``ExactJsonCodec``) read such a number
as a ``FloatText`` or ``IntText``: a float or int with the same value (filters, SOW keys and
arithmetic see the number, as before) that also carries its text, which ``dumps`` writes back.

Most messages have no such number, and reading one number at a time in Python costs several
times orjson's parse; so ``rewritten_numbers`` first screens the bytes for anything that could
be such a number. Only then is the message read again with the standard library, whose hooks
see each number's text. The screen is conservative: text in a string that looks like such a
number (a date's "-0" does not, a UUID's "0e" does) only costs the slower read, never a wrong
document.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import orjson

# Where orjson would write a number with other text (checked against orjson 3: shortest
# round-trip digits, an exponent below 1e-5 and from 1e16 on, ".0" for an integral float): a
# number with an exponent, the integer -0, an integer of 19 digits or more (it may lie beyond
# 64 bits), and a fraction that has a trailing zero after its first digit (1.50), starts with
# five zeros (0.000001 is written 1e-6) or makes 16 digits or more with the integer part. Any
# other number (at most 15 significant digits, at least 1e-5) is written as it was read.
#
# A regular expression anchored where a value starts took longer than orjson's parse (it tries
# every byte), so the screen is made of searches CPython does at C speed: the message with its
# digits and points made '0' and bytes that may end a number made ',', searched for fixed
# substrings; and an expression that starts with a literal '.', which runs only at points.
_SCREEN = bytes(
    0x30 if 0x30 <= byte <= 0x39 or byte == 0x2E else 0x65 if byte in b"eE" else 0x2D if byte == 0x2D
    else 0x2C if byte in b",]} \t\r\n" else 0x20
    for byte in range(256)
)
# A run of 17 digits and points: 16 digits with a point, or an integer of 17 digits or more.
_EXPONENT, _MINUS_ZERO, _LONG_INTEGER = b"0e", b"-0,", b"0" * 17
_FRACTION = re.compile(rb"\.(?:[0-9]*[0-9]0(?![0-9])|00000)")

_INT_LOW, _INT_HIGH = -(2**63), 2**64 - 1  # what orjson reads as an int


class FloatText(float):
    """A JSON number read as a float (as orjson reads it) that keeps its text."""

    __slots__ = ("text",)
    text: bytes

    def __new__(cls, value: float, text: bytes) -> FloatText:
        number = super().__new__(cls, value)
        number.text = text
        return number

    def __reduce__(self) -> tuple[Any, ...]:
        return FloatText, (float(self), self.text)


class IntText(int):
    """A JSON integer that keeps its text: ``-0``, or one beyond 64 bits read exactly."""

    text: bytes

    def __new__(cls, value: int, text: bytes) -> IntText:
        number = super().__new__(cls, value)
        number.text = text
        return number

    def __reduce__(self) -> tuple[Any, ...]:
        return IntText, (int(self), self.text)


FLOATS, INTEGERS = 1, 2  # what rewritten_numbers found: numbers with a point or exponent, integers


def rewritten_numbers(raw: bytes | bytearray | memoryview | str, doc: Any) -> int:
    """0 when orjson writes every number of ``raw`` (whose document orjson read as ``doc``)
    with the text it has there; else ``FLOATS``, ``INTEGERS`` or both: the kinds of number that
    it may write otherwise.

    Cheapest first: the message is what orjson writes (a compact producer), or is that but for
    blanks (a producer that writes ", " and ": ", or indents); any JSON text with the same
    characters outside blanks has the same tokens, so every number in it is one that orjson
    wrote. Otherwise the screen below decides, which may also find such a number in text in a
    string: that only costs the slower read."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    try:
        written = orjson.dumps(doc)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes
        return _screened(data)
    if written == data or written.translate(None, _BLANKS) == data.translate(None, _BLANKS):
        return 0
    return _screened(data)


_BLANKS = b" \t\r\n"


def _screened(data: bytes) -> int:
    screened = data.translate(_SCREEN)
    long_run = _LONG_INTEGER in screened
    found = FLOATS if long_run or _EXPONENT in screened or _FRACTION.search(data) is not None else 0
    return found | INTEGERS if long_run or _MINUS_ZERO in screened else found


def loads_keeping_text(raw: bytes | bytearray | memoryview | str, found: int, *, exact_integers: bool) -> Any:
    """The document of JSON text that orjson has accepted, with every number that orjson would
    rewrite held as a ``FloatText`` or ``IntText``; ``found`` is what ``rewritten_numbers`` said.
    ``exact_integers``: an integer beyond 64 bits has its exact value (an ``IntText``);
    otherwise it is the float orjson reads, so it keys, filters and compares as before (a
    ``FloatText``). The caller handles RecursionError."""
    text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8")  # orjson accepted it: UTF-8
    return _decoder(found, exact_integers).decode(text)


@cache  # a decoder per combination: json.loads with hooks builds one per call, which costs more than the parse
def _decoder(found: int, exact_integers: bool) -> json.JSONDecoder:
    hooks: dict[str, Any] = {}
    if found & FLOATS:
        hooks["parse_float"] = _float
    if found & INTEGERS:
        hooks["parse_int"] = _exact_integer if exact_integers else _integer
    return json.JSONDecoder(**hooks)


def _float(token: str) -> float:
    value = float(token)
    written = token.encode("ascii")
    return value if orjson.dumps(value) == written else FloatText(value, written)


def _integer(token: str) -> Any:
    value = int(token)
    if _INT_LOW <= value <= _INT_HIGH:
        return IntText(value, b"-0") if token == "-0" else value
    return FloatText(float(token), token.encode("ascii"))  # as orjson reads it


def _exact_integer(token: str) -> Any:
    value = int(token)
    if _INT_LOW <= value <= _INT_HIGH:
        return IntText(value, b"-0") if token == "-0" else value
    return IntText(value, token.encode("ascii"))


def number_text(value: Any) -> Any:
    """orjson's ``default`` for the text-keeping numbers: their text, as it was read. Other
    subclasses that OPT_PASSTHROUGH_SUBCLASS hands over are written as orjson writes them."""
    kind = type(value)
    if kind is FloatText or kind is IntText:
        return orjson.Fragment(value.text)
    for base in (str, int, dict, list):
        if isinstance(value, base):
            return base(value)
    raise TypeError(f"Type is not JSON serializable: {kind.__name__}")


def dumps(doc: Any) -> bytes:
    """``orjson.dumps`` that writes ``FloatText`` and ``IntText`` as their text.

    OPT_PASSTHROUGH_SUBCLASS hands int subclasses to ``number_text`` (orjson would write the
    int), and str, dict and list subclasses, which it gives back as orjson wrote them; bool is
    not passed through."""
    return orjson.dumps(doc, default=number_text, option=orjson.OPT_PASSTHROUGH_SUBCLASS)


def typed_number(value: Any) -> tuple[type, Any] | None:
    """(kind, value) of a text-keeping number for typed equality, else None.

    Its kind is that of its text (spec §2.1: no fraction and no exponent is an integer), and an
    integer compares exactly, so ``12345678901234567890123`` and ``...124``, one float to
    orjson, still differ; a float compares as the double it is (``1E5`` equals ``100000.0``)."""
    kind = type(value)
    if kind is IntText:
        return int, int(value)
    if kind is FloatText:
        text = value.text
        if b"." in text or b"e" in text or b"E" in text:
            return float, float(value)
        return int, int(text)
    return None
