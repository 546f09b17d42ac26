"""The messages ``ampsctl client publish`` sends: one inline message, or JSON Lines from a file or stdin.

The whole input is read and checked before anything is sent, so a bad line publishes nothing
(exit 3, naming FILE:LINE) instead of leaving half a file on the broker. Each message must be a
JSON object (the only message type served is json, and SOW keys are read from objects); blank
lines are skipped. The bytes are sent as they were written, not re-encoded.
"""

from __future__ import annotations

from typing import BinaryIO

import orjson

from ampsctl.errors import InputError, Location, UsageError
from ampsctl.lines import stdin_bytes, without_bom

HINT = 'give one JSON object per line, e.g. {"id":1,"qty":5}'


def read_messages(*, data: str | None, file: str | None, stdin: BinaryIO | None = None) -> list[bytes]:
    """The messages of ``--data`` (one) or ``--file`` (JSON Lines; ``-`` is stdin): exactly one of them."""
    if (data is None) == (file is None):
        raise UsageError("give the messages with exactly one of --data MESSAGE and --file FILE",
                         hint="--file - reads JSON Lines from stdin")
    if data is not None:
        body = data.encode("utf-8")
        _check(body, "--data", None)
        return [body]
    assert file is not None
    name = "<stdin>" if file == "-" else file
    try:
        if file == "-":
            text = (stdin or stdin_bytes()).read()
        else:
            with open(file, "rb") as stream:
                text = stream.read()
    except OSError as exc:  # also standard input: a closed descriptor, a directory, EIO
        raise InputError(f"cannot read '{name}': {exc.strerror}", code="IO",
                         hint="give an existing JSON Lines file, or - for stdin") from None
    messages = []
    for number, line in enumerate(without_bom(text.splitlines()), 1):
        body = line.strip()
        if body:
            _check(body, name, number)
            messages.append(body)
    if not messages:
        raise InputError(f"no messages in {name}", code="CLIENT-INPUT", hint=HINT)
    return messages


def _check(body: bytes, name: str, line: int | None) -> None:
    where = Location(name, line) if line else None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc}", code="CLIENT-INPUT", hint=HINT,
                         location=where or Location(name)) from None
    if not isinstance(value, dict):
        raise InputError(f"a message must be a JSON object, not {type(value).__name__}", code="CLIENT-INPUT",
                         hint=HINT, location=where or Location(name))
