"""Carrying ampsctl's typed errors out of Spark tasks and back to the driver.

An exception raised in a Python worker reaches the driver as a Java exception whose text holds
the worker's traceback; its type is lost. So a task raises ``TaskError`` whose message embeds
the error as one tagged JSON line (``[AMPSCTL_ERROR] {...}``), and the driver's
``from_spark`` finds the tag in whatever Spark raised and rebuilds the same ampsctl error
(a corrupt journal stays exit 3 with its segment and offset, a record the SOW cannot apply
keeps its sequence). No pyspark import: this module only reads exception text.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from ampsctl.errors import AmpsctlError, EnvironmentProblem, InputError, Location
from ampsctl.journal.errors import JournalCorruptError, JournalFormatError
from ampsctl.sow.errors import ReplayError

TAG = "[AMPSCTL_ERROR]"
_TAGGED = re.compile(re.escape(TAG) + r" (\{.*?\})(?:\n|$)")


class TaskError(RuntimeError):
    """The exception a Spark task raises for an ampsctl error; see the module docstring."""


def to_task_error(exc: AmpsctlError) -> TaskError:
    fields: dict[str, object] = {"type": type(exc).__name__, "message": exc.message, "code": exc.code, "hint": exc.hint}
    if isinstance(exc, JournalCorruptError):  # JournalFormatError too: not a segment at all, another message
        fields.update(type=type(exc).__name__ if isinstance(exc, JournalFormatError) else "JournalCorruptError",
                      path=exc.path, offset=exc.offset, reason=exc.reason)
    elif isinstance(exc, ReplayError):
        fields.update(type="ReplayError", sequence=exc.sequence, topic=exc.topic,
                      message=exc.message.split("): ", 1)[-1])
    elif exc.location is not None:
        fields["location"] = str(exc.location)
    return TaskError(f"{TAG} {json.dumps(fields)}\n")


def from_spark(exc: BaseException) -> AmpsctlError | None:
    """The ampsctl error a failed Spark job carried, or None when it carried none."""
    text = str(exc)
    found = _TAGGED.search(text)
    if found is None:
        cause = exc.__cause__ or exc.__context__
        return from_spark(cause) if cause is not None and cause is not exc else None
    fields = json.loads(found[1])
    if fields["type"] == "JournalFormatError":
        return JournalFormatError(fields["path"], fields["reason"], hint=fields["hint"], offset=fields["offset"])
    if fields["type"] == "JournalCorruptError":
        return JournalCorruptError(fields["path"], fields["offset"], fields["reason"], hint=fields["hint"], code=fields["code"])
    if fields["type"] == "ReplayError":
        return ReplayError(fields["sequence"], fields["topic"], fields["message"], hint=fields["hint"], code=fields["code"])
    location = Location(fields["location"]) if fields.get("location") else None
    # the exit code is the class's: an executor's missing or busy resource stays exit 4
    kind = EnvironmentProblem if fields["type"] == "EnvironmentProblem" else InputError
    return kind(fields["message"], code=fields["code"], hint=fields["hint"], location=location)


@contextmanager
def translated(path: str | None = None) -> Iterator[None]:
    """Turn a failed Spark job that carried an ampsctl error back into that error.

    With ``path``, a location at its absolute form (what executors are given to open) names the
    file as the user gave it. An ampsctl error raised on the driver passes as it is."""
    try:
        yield
    except AmpsctlError:
        raise
    except Exception as exc:
        error = from_spark(exc)
        if error is None:
            raise
        if path is not None and error.location is not None and error.location.path == os.path.abspath(path):
            error.location = Location(path)
        raise error from None
