"""Inputs: the lines of the JSONL inputs (journal import, affinity event files, filter test
data, client publish --file; ``UTF8_BOM`` is also what ``ampsctl delta`` skips) and standard
input."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import BinaryIO

from ampsctl.errors import InputError

UTF8_BOM = b"\xef\xbb\xbf"


def without_bom(lines: Iterable[bytes]) -> Iterator[bytes]:
    """``lines`` with a UTF-8 byte order mark dropped from the first one: Windows tools write
    one, and RFC 8259 lets a JSON parser ignore it (orjson refuses it). The other lines pass
    through ``chain`` in C, so a file of millions of lines pays nothing per line."""
    lines = iter(lines)
    for first in lines:
        return chain((first.removeprefix(UTF8_BOM),), lines)
    return iter(())


def stdin_bytes() -> BinaryIO:
    """Standard input as bytes; InputError when the process has none (started with it closed,
    ``<&-``), where Python leaves ``sys.stdin`` None."""
    if sys.stdin is None:
        raise InputError("standard input is closed", code="IO", hint="pipe the input in, or give a file name instead of -")
    return sys.stdin.buffer


def not_utf8(raw: bytes | str) -> str | None:
    """Where ``raw`` stops being UTF-8 ("not valid UTF-8: byte 0xff at byte offset 7"), or None.
    orjson calls any such byte "surrogates not allowed" at char 0; readers ask this on failure."""
    if isinstance(raw, str):
        return None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start}"
    return None
