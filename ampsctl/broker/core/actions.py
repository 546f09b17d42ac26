"""What the broker core asks the transport to do: small frozen values, executed in order.

The core (``BrokerCore``) never touches a socket, a file or the clock. Every call returns a
list of these actions and the server (``ampsctl.broker.server``) carries them out *in list
order*, before it hands the core anything else. Order is part of the contract:

* ``Append`` before the ``SendDurable`` that waits for it, and before any later ``Append``;
* every frame for one connection in the order the core produced it (§11: commands on a
  connection are processed in order, query results before the results of later commands);
* ``Close`` after the frames queued before it for that connection have been handed to the
  socket (a failure ack, then the disconnect).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ampsctl.journal.record import JournalRecord
from ampsctl.protocol.fastinit import fast_init


@fast_init
@dataclass(frozen=True, slots=True)
class Send:
    """Write ``data`` (one or more encoded frames) to connection ``conn``.

    ``reply``: a query's result, the answer to the connection's own command. It may take the
    connection past its outbound limit without making it a slow consumer (connection.py)."""

    conn: int
    data: bytes
    reply: bool = False


@fast_init
@dataclass(frozen=True, slots=True)
class SendDurable:
    """Write ``data`` to ``conn`` once the journal is on disk through ``sequence``.

    Used for ``persisted`` acks (§5.2, §7.1): the server holds the frame until a journal
    commit covers ``sequence``. Frames are released in the order they were produced.
    """

    conn: int
    data: bytes
    sequence: int


@fast_init
@dataclass(frozen=True, slots=True)
class Append:
    """Append ``record`` to the journal. The core numbered it: ``record.sequence`` is exactly the
    sequence the journal writer must assign (the server checks, and stops on a mismatch)."""

    record: JournalRecord


@fast_init
@dataclass(frozen=True, slots=True)
class Close:
    """Disconnect ``conn`` after writing what was queued for it; ``reason`` goes to the log."""

    conn: int
    reason: str


class LogLevel(enum.Enum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Log:
    """A line for the broker's log (a rejected command, a heartbeat timeout ...)."""

    level: LogLevel
    message: str
    conn: int | None = None


Action = Send | SendDurable | Append | Close | Log
