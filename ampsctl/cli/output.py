"""Output helpers shared by the commands that print many records (journal, sow) or tables (affinity)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any


# C0 and C1 controls (ESC, CSI, BEL, newline...) as \xNN; FIX's field separator SOH as |.
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(32), *range(127, 160))} | {0x01: "|"}
_CONTROLS_BUT_LINES = {code: text for code, text in _CONTROLS.items() if code not in (0x09, 0x0A)}


def terminal_text(text: str, *, lines: bool = False) -> str:
    """Text for a terminal: control characters escaped, not sent (``lines`` keeps newlines and tabs)."""
    return text.translate(_CONTROLS_BUT_LINES if lines else _CONTROLS)


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
