"""Output helpers shared by the commands that print many records (journal, sow) or tables (affinity)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any


_ESCAPED = None  # the compiled pattern of what terminal_text escapes, made on first use


def terminal_text(text: str, *, lines: bool = False, soh: str | None = "|") -> str:
    """Text safe for a terminal: what ``str.isprintable`` rejects, bar spaces such as U+00A0,
    is escaped as Python writes it (``\\n``, ``\\x1b``, ``\\u202e``; an undecodable byte
    that ``os.fsdecode`` kept as a lone surrogate as the byte, ``\\xff``).

    C0 and C1 controls would drive the terminal or start a line that looks like output; bidi
    overrides and zero-width characters make text read as something it is not; a lone
    surrogate would crash a strict UTF-8 stdout.
    ``lines`` keeps newlines and tabs; FIX's field separator SOH is shown as ``soh`` (None:
    escaped like the rest).
    """
    if soh is not None and "\x01" in text:
        text = text.replace("\x01", soh)
    if text.isprintable():
        return text
    global _ESCAPED
    if _ESCAPED is None:
        import regex  # on demand: most text is printable, and every CLI start would pay for it

        _ESCAPED = regex.compile(r"[\p{C}\p{Zl}\p{Zp}]")
    escape = _escape_keeping_lines if lines else _escape
    return _ESCAPED.sub(escape, text)


def _escape(match: Any) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, as os.fsdecode and surrogateescape keep it
        return f"\\x{code - 0xDC00:02x}"
    return match.group().encode("unicode_escape").decode("ascii")


def _escape_keeping_lines(match: Any) -> str:
    char = match.group()
    return char if char == "\n" or char == "\t" else _escape(match)


def json_text(value: Any) -> str:
    """Compact JSON; integers beyond 64 bits (which orjson refuses) written exactly."""
    from ampsctl.messages.json_codec import dumps_exact

    return dumps_exact(value).decode("utf-8")


def json_array(items: Iterable[str]) -> Iterator[str]:
    """A JSON array streamed one element per line (one element of lookahead for the commas)."""
    yield "["
    previous = None
    for item in items:
        if previous is not None:
            yield previous + ","
        previous = item
    if previous is not None:
        yield previous
    yield "]"


def write_lines(lines: Iterable[str]) -> None:
    """Write lines in batches (a dump can have millions); what was produced before an error is kept."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # an in-process capture (tests) has no byte buffer
        for line in lines:
            sys.stdout.write(line + "\n")
        return
    sys.stdout.flush()
    batch: list[str] = []
    size = 0
    try:
        for line in lines:
            batch.append(line)
            size += len(line)
            if size >= 1 << 20:
                buffer.write(("\n".join(batch) + "\n").encode("utf-8", "surrogateescape"))
                batch, size = [], 0
    finally:
        if batch:
            buffer.write(("\n".join(batch) + "\n").encode("utf-8", "surrogateescape"))
        buffer.flush()
