"""The protocol's typed errors, and the reason strings acks carry (spec/protocol.md §7.4).

Two families, split by what the broker must do about them:

* ``FrameError`` (``fatal = True``): the byte stream itself is broken (garbage, a length of
  zero or over the cap, a header that is not a UTF-8 JSON object) or ended mid-frame. Per §2.1
  [REC] and §4.5 the broker closes that one connection. There is nothing to answer: without a
  parseable header there is no ``cid`` to correlate an ack with, and once one frame is wrong
  the length prefix of the next one cannot be trusted either.
* ``CommandError`` (``fatal = False``): a well-framed command that cannot be executed (unknown
  ``c``, missing topic, bad option, publish to a regex topic ...). The connection stays open;
  the broker sends ``error.ack`` (status ``failure``, a §7.4 reason, the command's ``cid``)
  when the command asked for an ack, and otherwise only logs.

``HeaderValueError`` is the internal signal from the header getters; ``parse_command`` turns it
into a ``CommandError`` once it knows the command's id and requested acks.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from ampsctl.errors import InputError

if TYPE_CHECKING:  # acks.py imports frames.py, which imports this module
    from ampsctl.protocol.acks import Ack
    from ampsctl.protocol.frames import Frame


class Reason(enum.StrEnum):
    """Failure reasons on the wire (§7.4); a StrEnum so an Ack can carry any str as well."""

    DUPLICATE = "duplicate"
    BAD_FILTER = "bad filter"
    BAD_REGEX_TOPIC = "bad regex topic"
    SUBSCRIPTION_ALREADY_EXISTS = "subscription already exists"
    INVALID_TOPIC = "invalid topic"
    NAME_IN_USE = "name in use"
    AUTH_FAILURE = "auth failure"
    NOT_ENTITLED = "not entitled"
    LOGON_REQUIRED = "logon required"
    INVALID_OPTIONS = "invalid options"
    INVALID_BOOKMARK = "invalid bookmark"
    INVALID_ORDER_BY = "invalid order by"
    INVALID_SOW_KEY = "invalid sow key"
    INVALID_COMMAND = "invalid command"
    ALREADY_LOGGED_ON = "already logged on"


class ProtocolError(InputError):
    """Anything the AMPS protocol layer rejects. ``fatal``: close the connection."""

    fatal = True


# --------------------------------------------------------------------------------------
# framing: fatal for the connection
# --------------------------------------------------------------------------------------


class FrameError(ProtocolError):
    """The byte stream cannot be decoded further.

    ``frames`` holds the complete, valid frames that preceded the bad one in the same
    ``FrameDecoder.feed`` call: they arrived intact, so the broker processes them before it
    closes the connection (commands on a connection are processed in order, §11).
    """

    fatal = True
    error_code = "FRAME"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, code=self.error_code, hint=hint)
        self.frames: list[Frame] = []


class FrameGarbage(FrameError):
    """Bytes that cannot be an AMPS frame: a zero length, or a header that is not JSON at all."""

    error_code = "FRAME-GARBAGE"


class FrameTooLarge(FrameError):
    """A length prefix above the decoder's ``max_frame_size`` (64 MiB by default)."""

    error_code = "FRAME-SIZE"

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"frame of {size} bytes is over the {limit}-byte limit",
            hint="split large SOW results with a smaller batch size, or raise the broker's frame limit",
        )
        self.size = size
        self.limit = limit


class HeaderNotJson(FrameError):
    """The header starts like JSON but is not well-formed, or is not closed inside the frame."""

    error_code = "FRAME-JSON"


class HeaderNotObject(FrameError):
    """The header is valid JSON but not an object (an array, a string, a number ...)."""

    error_code = "FRAME-OBJECT"


class HeaderBadUtf8(FrameError):
    """The header bytes are not valid UTF-8 (the body is opaque and never checked)."""

    error_code = "FRAME-UTF8"


class FrameTruncated(FrameError):
    """The stream ended in the middle of a frame (a client that disconnected mid-frame)."""

    error_code = "FRAME-TRUNCATED"


class DecoderFailed(FrameError):
    """``feed`` after an earlier fatal error: the stream position is lost for good."""

    error_code = "FRAME-FAILED"


class SowBatchError(ProtocolError):
    """A ``sow`` frame whose records cannot be split (client side: inner header without ``l``,
    or ``l`` past the end of the frame). Fatal: the server speaks a different dialect."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="SOW-BATCH", hint="each record is a header with l, then l bytes (§2.3)")


class UnknownMessage(ProtocolError):
    """Client side: a server message of a kind (or ack type/status) this client does not know.
    Not fatal: a newer server may send more than we understand; log it and read on."""

    fatal = False

    def __init__(self, message: str) -> None:
        super().__init__(message, code="MESSAGE")


# --------------------------------------------------------------------------------------
# commands: recoverable, answered with a failure ack
# --------------------------------------------------------------------------------------


class HeaderValueError(ProtocolError):
    """A header field whose value has the wrong type or shape; becomes a CommandError."""

    fatal = False

    def __init__(self, field: str, message: str, reason: Reason = Reason.INVALID_OPTIONS) -> None:
        super().__init__(message, code="HEADER")
        self.field = field
        self.reason = reason


class CommandError(ProtocolError):
    """A framed command the broker rejects; the connection stays open.

    ``command`` is the ``c`` value as sent (None if absent), ``cid`` the command id for
    correlation, ``reason`` the §7.4 reason and ``ack`` the failure ack to send, or None when
    the command requested no ack that could carry it. ``received``: the success ``received`` ack
    that comes first when the command asked for it and the failure rides on another ack (the
    command did arrive, §7.1).
    """

    fatal = False

    def __init__(
        self,
        reason: Reason,
        message: str,
        *,
        command: str | None,
        cid: str | None,
        ack: Ack | None,
        hint: str | None = None,
        received: Ack | None = None,
    ) -> None:
        super().__init__(message, code="COMMAND", hint=hint)
        self.reason = reason
        self.command = command
        self.cid = cid
        self.ack = ack
        self.received = received

    def reply(self) -> bytes | None:
        """The frame bytes to answer with (``received``, then the failure ack), or None."""
        if self.ack is None:
            return None
        return self.ack.encode() if self.received is None else self.received.encode() + self.ack.encode()
