"""The AMPS ``amps`` protocol, sans-IO (spec/protocol.md): bytes in, typed values out, and back.

This package never imports asyncio or socket and never reads the clock (DESIGN.md): the broker
and the client own the sockets and pass ``now`` in. A broker connection does::

    decoder = FrameDecoder(max_frame_size)           # one per connection
    try:
        frames = decoder.feed(data)                  # FrameError: close this connection
    except FrameError as error:
        frames, fatal = error.frames, error          # process what arrived intact, then close
    for frame in frames:
        try:
            command = parse_command(frame)           # Logon | Publish | ... | Flush
        except CommandError as error:
            send(error.reply())                      # the failure ack, if one was requested
            continue
        ... command.ack(AckType.PROCESSED).encode(), Delivery(...).encode(), SowBatch(...).encode()

and a client encodes commands (``Subscribe(...).encode()``) and reads replies with
``parse_message(frame)``. See docs/protocol.md for what is accepted and emitted.
"""

from ampsctl.protocol.acks import ACK_ORDER, Ack, AckType, Status, logon_ack, persisted_ack, stats_ack
from ampsctl.protocol.cmdoptions import NO_OPTIONS, CommandOptions, HeartbeatAction, OrderKey
from ampsctl.protocol.commands import (
    SUPPORTED_ACKS,
    Command,
    CommandKind,
    DeltaPublish,
    DeltaSubscribe,
    Flush,
    Heartbeat,
    Logon,
    Publish,
    Sow,
    SowAndDeltaSubscribe,
    SowAndSubscribe,
    SowDelete,
    SowDeleteForm,
    Subscribe,
    Unsubscribe,
)
from ampsctl.protocol.errors import (
    CommandError,
    DecoderFailed,
    FrameError,
    FrameGarbage,
    FrameTooLarge,
    FrameTruncated,
    HeaderBadUtf8,
    HeaderNotJson,
    HeaderNotObject,
    ProtocolError,
    Reason,
    SowBatchError,
    UnknownMessage,
)
from ampsctl.protocol.frames import DEFAULT_MAX_FRAME_SIZE, Frame, FrameDecoder, decode_frames, encode_frame
from ampsctl.protocol.headers import format_timestamp
from ampsctl.protocol.messages import (
    Delivery,
    GroupBegin,
    GroupEnd,
    Oof,
    OofReason,
    ServerHeartbeat,
    ServerMessage,
    SowBatch,
    SowRecord,
    parse_message,
    sow_batches,
)
from ampsctl.protocol.parse import parse_command

__all__ = [
    "ACK_ORDER",
    "DEFAULT_MAX_FRAME_SIZE",
    "NO_OPTIONS",
    "SUPPORTED_ACKS",
    "Ack",
    "AckType",
    "Command",
    "CommandError",
    "CommandKind",
    "CommandOptions",
    "DecoderFailed",
    "DeltaPublish",
    "DeltaSubscribe",
    "Delivery",
    "Flush",
    "Frame",
    "FrameDecoder",
    "FrameError",
    "FrameGarbage",
    "FrameTooLarge",
    "FrameTruncated",
    "GroupBegin",
    "GroupEnd",
    "HeaderBadUtf8",
    "HeaderNotJson",
    "HeaderNotObject",
    "Heartbeat",
    "HeartbeatAction",
    "Logon",
    "Oof",
    "OofReason",
    "OrderKey",
    "ProtocolError",
    "Publish",
    "Reason",
    "ServerHeartbeat",
    "ServerMessage",
    "Sow",
    "SowAndDeltaSubscribe",
    "SowAndSubscribe",
    "SowBatch",
    "SowBatchError",
    "SowDelete",
    "SowDeleteForm",
    "SowRecord",
    "Status",
    "Subscribe",
    "UnknownMessage",
    "Unsubscribe",
    "decode_frames",
    "encode_frame",
    "format_timestamp",
    "logon_ack",
    "parse_command",
    "parse_message",
    "persisted_ack",
    "sow_batches",
    "stats_ack",
]
