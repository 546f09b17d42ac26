"""SOW keys: AMPS-generated keys from `<Key>` fields, and publisher-supplied keys (spec/messages.md §3).

Theory of operation (scheme version 2, ``KEY_SCHEME_VERSION``, documented in docs/formats.md "SOW keys"):

    key = decimal( CRC-64/ECMA-182( utf8(domain) + NUL + NUL.join(canon(v) for v in values) ) )
    canon(NULL) = b"\\x01N"            canon(v) = b"\\x02" + utf8(text form of v)

* AMPS's own checksum is unspecified and opaque; we do not imitate it, we only keep its
  documented properties: the same values in the same domain always give the same key, the
  domain (topic name unless KeyDomain is set) separates topics, and composite keys are ordered.
* The text form is used because AMPS hash indexes compare values as text, so JSON ``1`` and
  ``"1"`` key the same record while ``1`` and ``1.0`` do not (K6/K7, [ASSUME] in the spec).
  Fields of the text formats (XML, FIX, NVFIX) are keyed on their text as written, not typed
  by inference (FIX ``11=007`` and ``11=7`` are two records); scheme 1 typed them, and
  sow/checkpoint.py keys a scheme-1 file's records again when it loads them.
* The per-value prefix byte keeps ``("ab", "c")`` and ``("a", "bc")`` apart (K4). It is only
  unambiguous while no text contains NUL, so a domain or key value with NUL is rejected rather
  than allowed to collide with a different tuple.
* A missing key field is an error by default (the spec's [ASSUME]: never key silently on NULL);
  ``allow_missing=True`` keys it as NULL instead. Arrays and objects cannot be key values.
* ``canon_id`` is a cheaper stand-in for ``canon`` with the same equality, for grouping the
  records of a stream by key (ampsctl.messages.stream) without building key bytes.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from ampsctl.errors import InputError
from ampsctl.messages.paths import join_path, split_path

KEY_SCHEME_VERSION = 2  # 2: text formats key their fields as written (docs/formats.md)
_POLY = 0x42F0E1EBA9EA3693  # ECMA-182, MSB-first, init 0, no reflection, no final xor
_MASK = (1 << 64) - 1
_NULL = b"\x01N"
_VALUE = b"\x02"
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_MISSING = object()


def _table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 56
        for _ in range(8):
            crc = ((crc << 1) ^ _POLY) & _MASK if crc & (1 << 63) else (crc << 1) & _MASK
        table.append(crc)
    return tuple(table)


_TABLE = _table()
_LITTLE_ENDIAN = sys.byteorder == "little"


@cache  # built on first use (about 30 ms): importing this module stays cheap
def _table16() -> tuple[int, ...]:
    """The CRC of every two-byte word from state 0: one lookup advances the CRC by 16 bits."""
    table, mask = _TABLE, _MASK
    out = []
    for word in range(65536):
        crc = table[word >> 8]
        out.append(((crc << 8) & mask) ^ table[(crc >> 56) ^ (word & 0xFF)])
    return tuple(out)


def crc64_ecma(data: bytes, crc: int = 0) -> int:
    """CRC-64/ECMA-182 of ``data`` (check value for b"123456789": 0x6C40DF5F0B497347).

    ``crc``: the value for the bytes before ``data``, to continue a checksum (the CRC has no
    final xor, so its value is its running state). Two bytes per step: the input is read as
    big-endian 16-bit words (``array`` converts them in C) and ``_table16`` advances the CRC
    by a word at a time, half the Python-level steps of the byte-wise loop, same values."""
    size = len(data)
    if size > 1:
        words = array("H", data[:size & ~1] if size & 1 else data)
        if _LITTLE_ENDIAN:
            words.byteswap()
        table16, mask = _table16(), _MASK
        for word in words:
            crc = ((crc << 16) & mask) ^ table16[(crc >> 48) ^ word]
    if size & 1:
        crc = ((crc << 8) & _MASK) ^ _TABLE[(crc >> 56) ^ data[-1]]
    return crc


def canon(value: Any) -> bytes:
    """The canonical bytes of one key value: NULL (None or empty text) or its text form."""
    if value is None or value == "":
        return _NULL  # an empty value is NULL (spec §2.1, §2.3)
    if isinstance(value, bool):  # before int: bool is an int subclass
        text = "true" if value else "false"
    elif isinstance(value, int | str):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)  # shortest round-trip form: 1.0 stays "1.0", so 1 and 1.0 differ (K7)
    elif isinstance(value, bytes):
        return _VALUE + value if b"\x00" not in value else _reject_nul(value)
    else:
        raise InputError(
            f"a {type(value).__name__} cannot be a SOW key value",
            code="SOWKEY",
            hint="key fields must hold a scalar: text, a number, a boolean or null",
        )
    if "\x00" in text:
        _reject_nul(text)
    return _VALUE + text.encode("utf-8", errors="surrogateescape")


def canon_id(value: Any) -> int | str | bytes | None:
    """A hashable stand-in for ``canon(value)``: equal for two values exactly when canon is.

    Grouping a stream by SOW key needs key equality, not key bytes, and this is cheaper for
    the common values. NULL is None. A value whose canon text is the decimal form of an int of
    at most ``_INT_ID_DIGITS`` characters stands for that int, so 7 and "7" meet without
    formatting the int (and sequential ids hash to neighbouring slots); other ASCII text
    stands for itself; anything else for its canon bytes. Ints, str and bytes never compare
    equal to each other. Errors are canon's.
    """
    kind = type(value)
    if kind is int:  # exactly int: bool and int subclasses take canon's route
        return value if _INT_ID_MIN < value < _INT_ID_MAX else str(value)
    if kind is str and value and value.isascii() and "\x00" not in value:
        return _text_id(value)
    canonical = canon(value)
    if canonical == _NULL:
        return None
    text = canonical[1:]
    return _text_id(text.decode("ascii")) if text.isascii() else canonical


# canon_id's ints: exactly those whose decimal text has at most 18 characters.
_INT_ID_DIGITS = 18
_INT_ID_MIN = -(10 ** (_INT_ID_DIGITS - 1))
_INT_ID_MAX = 10**_INT_ID_DIGITS


def _text_id(text: str) -> int | str:
    """canon_id of ASCII text: its int if it is an int's decimal form, else itself."""
    if len(text) <= _INT_ID_DIGITS and (text.isdigit() or (text[:1] == "-" and text[1:].isdigit())):
        number = int(text)
        if str(number) == text:  # "07", "-0" are other text than 7 and 0
            return number
    return text


def _reject_nul(value: Any) -> bytes:
    raise InputError(
        f"SOW key value {value!r} contains a NUL character",
        code="SOWKEY",
        hint="NUL separates key values in the key scheme (docs/formats.md), so it cannot appear inside one",
    )


def key_material(domain: str, values: Sequence[Any]) -> bytes:
    """The bytes the checksum covers: domain, NUL, then the NUL-joined canonical values."""
    if "\x00" in domain:
        raise InputError(f"key domain {domain!r} contains a NUL character", code="SOWKEY", hint="use a topic name or KeyDomain without NUL")
    if not values:
        raise InputError("a generated SOW key needs at least one key value", code="SOWKEY", hint="configure one <Key> per key field")
    return domain.encode("utf-8", errors="surrogateescape") + b"\x00" + b"\x00".join(canon(v) for v in values)


def generate_key(domain: str, values: Sequence[Any]) -> str:
    """The SOW key of ``values`` (in `<Key>` order) in ``domain`` (topic name or KeyDomain).

    ``str(crc64_ecma(key_material(domain, values)))``, with the CRC of the domain part (the same
    for every record of a topic) computed once per domain and continued over the values."""
    state = _domain_crc(domain)  # key_material's checks, in its order: the domain first
    if not values:
        key_material(domain, values)  # raises its error for an empty value list
    return str(crc64_ecma(b"\x00".join(canon(v) for v in values), state))


@lru_cache(maxsize=4096)  # domains are topic names and KeyDomains: few, reused on every record
def _domain_crc(domain: str) -> int:
    """The CRC of ``utf8(domain) + NUL``, the start of every key material in ``domain``."""
    if "\x00" in domain:
        raise InputError(f"key domain {domain!r} contains a NUL character", code="SOWKEY", hint="use a topic name or KeyDomain without NUL")
    return crc64_ecma(domain.encode("utf-8", errors="surrogateescape") + b"\x00")


def check_supplied_key(text: str) -> str:
    """A publisher-supplied SowKey, returned unchanged when every character is Base64 (§3.2)."""
    if not text:
        raise InputError("empty SowKey", code="SOWKEY", hint="a supplied SowKey needs at least one Base64 character")
    for position, char in enumerate(text):
        if char not in _BASE64:
            raise InputError(
                f"SowKey {text!r} has {char!r} at position {position + 1}, which is not a Base64 character",
                code="SOWKEY",
                hint="supplied SOW keys may use only A-Z, a-z, 0-9, '+', '/' and '='",
            )
    return text


@dataclass(frozen=True, slots=True)
class _Step:
    """The duck-typed step records read (filter.ast.Step lives above this package)."""

    name: str
    index: int | None = None


@dataclass(frozen=True, slots=True)
class _Field:
    steps: tuple[_Step, ...]
    bracketed: bool = False
    qualifier: tuple[str, ...] = ()


def key_values(source: Any, key_paths: Sequence[str], *, allow_missing: bool = False) -> tuple[Any, ...]:
    """The values of ``key_paths`` ("/id", "/55") in a message, ready for ``generate_key``.

    ``source`` is a JSON document (dict), a FIX/NVFIX document (a sequence of (name, text)
    pairs), or any record with ``get(field)`` (what ``Codec.record`` returns). ``get`` cannot
    tell an absent field from a NULL one, so for a record NULL counts as missing unless it
    also has ``present(field)`` (XmlRecord does) to say the field is there.
    """
    if not key_paths:
        raise InputError("no key fields given", code="SOWKEY", hint="give at least one key path, e.g. --key /id")
    values = []
    for path in key_paths:
        steps = split_path(path)
        value = _lookup(source, steps)
        if value is _MISSING:
            if not allow_missing:
                raise InputError(
                    f"key field {join_path(steps)} is missing from the message",
                    code="SOWKEY",
                    hint="every message stored in a SOW topic must carry all of its <Key> fields",
                )
            value = None
        elif isinstance(value, list | tuple):
            raise InputError(
                f"key field {join_path(steps)} holds an array (repeated field), which cannot be a key value",
                code="SOWKEY",
                hint="point <Key> at a single scalar field",
            )
        elif isinstance(value, dict):
            raise InputError(
                f"key field {join_path(steps)} holds an object, which cannot be a key value",
                code="SOWKEY",
                hint="point <Key> at a scalar field inside the object, e.g. /customer/id",
            )
        values.append(value)
    return tuple(values)


def sow_key(source: Any, key_paths: Sequence[str], domain: str, *, allow_missing: bool = False) -> str:
    """``generate_key(domain, key_values(source, key_paths))`` in one call."""
    return generate_key(domain, key_values(source, key_paths, allow_missing=allow_missing))


def _lookup(source: Any, steps: tuple[str, ...]) -> Any:
    if isinstance(source, dict):
        current: Any = source
        for step in steps:
            if isinstance(current, list):
                return current  # a step through an array: reported as an array, not as missing
            if not isinstance(current, dict) or step not in current:
                return _MISSING
            current = current[step]
        return current
    if isinstance(source, list | tuple):
        return _lookup_pairs(source, steps)
    if callable(getattr(source, "get", None)):
        field = _Field(tuple(_Step(step) for step in steps))
        # A record of a text format gives its key fields as written (XmlRecord.key_value):
        # hash indexes, and so SOW keys, evaluate values as strings (seed 003).
        value = getattr(source, "key_value", source.get)(field)
        if value is None:  # absent, or present and NULL: a record that can tell says which
            present = getattr(source, "present", None)
            return None if present is not None and present(field) else _MISSING
        return value
    raise TypeError(f"cannot read key fields from a {type(source).__name__}")


def _lookup_pairs(pairs: Sequence[Any], steps: tuple[str, ...]) -> Any:
    """FIX is flat: one step names a tag; a repeated tag is an array."""
    if len(steps) != 1:  # no message has such a field: say why rather than "missing"
        raise InputError(
            f"key field {join_path(steps)} has {len(steps)} steps, but FIX and NVFIX messages are flat",
            code="SOWKEY",
            hint="a FIX or NVFIX key field is one step, like /55 or /Symbol",
        )
    found = [text for name, text in pairs if name == steps[0]]
    if not found:
        return _MISSING
    # The text as written, not typed by inference: hash indexes evaluate values as strings
    # (seed 003), so 11=007 and 11=7 are two orders, not one.
    return found if len(found) > 1 else found[0]
