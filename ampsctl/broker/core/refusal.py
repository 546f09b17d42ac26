"""``Refused``: a command the core will not execute, and the reasons only the core decides.

Command handlers validate everything *before* they change any state or produce any frame, and
raise ``Refused`` for the first problem. The dispatcher turns it into the failure ack (on the
first requested ack that can carry it, ``protocol.acks.failure_ack_type``) and a log line; the
connection stays open (§7.4). Nothing else ever escapes a handler: a bug is a bug.
"""

from __future__ import annotations

from ampsctl.errors import InputError

# Reasons the protocol package does not list (spec §7.4 says the docs give no complete list).
# ``invalid message``: a publish to a SOW topic whose body cannot be stored (not a JSON object,
# no key fields and no SowKey, a negative expiration). Written down in docs/broker.md.
INVALID_MESSAGE = "invalid message"


class Refused(InputError):
    """A command refused with the §7.4 ``reason``; ``message`` says why, for the log."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message, code="BROKER-REFUSED")
        self.reason = str(reason)
