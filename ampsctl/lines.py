"""Lines of the JSONL inputs: journal import, affinity event files, filter test data,
client publish --file; ``UTF8_BOM`` is also what ``ampsctl delta`` skips."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

UTF8_BOM = b"\xef\xbb\xbf"


def without_bom(lines: Iterable[bytes]) -> Iterator[bytes]:
    """``lines`` with a UTF-8 byte order mark dropped from the first one: Windows tools write
    one, and RFC 8259 lets a JSON parser ignore it (orjson refuses it). The other lines pass
    through ``chain`` in C, so a file of millions of lines pays nothing per line."""
    lines = iter(lines)
    for first in lines:
        return chain((first.removeprefix(UTF8_BOM),), lines)
    return iter(())
