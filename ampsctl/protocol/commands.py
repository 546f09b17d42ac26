"""Typed client commands (spec/protocol.md §5): one frozen dataclass per command.

``parse_command`` (protocol/parse.py) builds these from frames; a client builds them directly
and sends ``command.encode()``. Both directions agree: for every command ``c``,
``parse_command(decode(c.encode())) == c``.

Conventions shared by every command:

* ``acks`` holds the requested ack types that the command supports (§7.2); unsupported ones
  were silently dropped (§7.2 [REC]), so the broker answers exactly what is in ``acks``.
* ``sub_id`` and ``query_id`` default to ``cid`` (§5.4, §5.6); when both are absent they stay
  None and the broker assigns an id (seed 002).
* ``command.ack(type, ...)`` builds an ack that correlates: ``cid`` plus the topic, ids and
  (publish) sequence the command carried (§6.1 [REC] "always echo").
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson

from ampsctl.filter.regexes import has_metachars
from ampsctl.protocol import headers as h
from ampsctl.protocol.acks import Ack, AckType, Status, format_ack_types
from ampsctl.protocol.cmdoptions import (
    NO_OPTIONS,
    CommandOptions,
    HeartbeatAction,
    OrderKey,
    format_heartbeat_options,
    format_orderby,
)
from ampsctl.protocol.fastinit import fast_init
from ampsctl.protocol.frames import encode_bodiless, encode_frame


class CommandKind(enum.StrEnum):
    LOGON = "logon"
    PUBLISH = "publish"
    DELTA_PUBLISH = "delta_publish"
    SUBSCRIBE = "subscribe"
    DELTA_SUBSCRIBE = "delta_subscribe"
    SOW = "sow"
    SOW_AND_SUBSCRIBE = "sow_and_subscribe"
    SOW_AND_DELTA_SUBSCRIBE = "sow_and_delta_subscribe"
    SOW_DELETE = "sow_delete"
    UNSUBSCRIBE = "unsubscribe"
    HEARTBEAT = "heartbeat"
    FLUSH = "flush"


# Every spelling of ``c`` a client may send: the names, and ``p`` for publish (§5.2, Appendix C).
COMMAND_NAMES: dict[str, CommandKind] = {kind.value: kind for kind in CommandKind} | {"p": CommandKind.PUBLISH}

_R, _PR, _PE, _C, _S = AckType.RECEIVED, AckType.PROCESSED, AckType.PERSISTED, AckType.COMPLETED, AckType.STATS
# §7.2. delta_publish's completed/stats are "accept and ignore" (§5.3), so they are not here.
SUPPORTED_ACKS: dict[CommandKind, frozenset[AckType]] = {
    CommandKind.LOGON: frozenset({_R, _PR}),
    CommandKind.PUBLISH: frozenset({_R, _PR, _PE}),
    CommandKind.DELTA_PUBLISH: frozenset({_R, _PR, _PE}),
    CommandKind.SUBSCRIBE: frozenset({_R, _PR, _PE, _C}),
    CommandKind.DELTA_SUBSCRIBE: frozenset({_R, _PR, _C, _S}),
    CommandKind.SOW: frozenset({_R, _PR, _C, _S}),
    CommandKind.SOW_AND_SUBSCRIBE: frozenset({_R, _PR, _C, _S}),
    CommandKind.SOW_AND_DELTA_SUBSCRIBE: frozenset({_R, _PR, _C, _S}),
    CommandKind.SOW_DELETE: frozenset({_R, _PR, _PE, _C, _S}),
    CommandKind.UNSUBSCRIBE: frozenset({_R, _PR}),
    CommandKind.HEARTBEAT: frozenset({_R, _PR}),
    CommandKind.FLUSH: frozenset({_R, _PR, _PE, _C}),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Command:
    kind: ClassVar[CommandKind]
    cid: str | None = None
    acks: frozenset[AckType] = frozenset()

    def wants(self, ack_type: AckType) -> bool:
        return ack_type in self.acks

    def ack(self, ack_type: AckType, *, status: Status = Status.SUCCESS, reason: str | None = None, **fields: Any) -> Ack:
        """An ack for this command: ``cid`` and the echoed fields, overridable by ``fields``."""
        return Ack(ack_type, status, self.cid, reason, **(self._echo() | fields))

    def header(self) -> dict[str, Any]:
        return {"c": self.kind.value, "cid": self.cid, "a": format_ack_types(self.acks), **self._fields()}

    @property
    def body(self) -> bytes:
        return b""

    def encode(self) -> bytes:
        return encode_frame(self.header(), self.body)

    def _fields(self) -> dict[str, Any]:
        return {}

    def _echo(self) -> dict[str, Any]:
        return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Logon(_Command):
    kind: ClassVar[CommandKind] = CommandKind.LOGON
    client_name: str | None = None
    user_id: str | None = None
    password: str | None = field(default=None, repr=False)  # never in logs
    version: str | None = None
    correlation_id: str | None = None
    message_type: str | None = None  # ``mt``, sent by some clients (Appendix C)
    options: CommandOptions = NO_OPTIONS

    def _fields(self) -> dict[str, Any]:
        return {
            "client_name": self.client_name,
            "user_id": self.user_id,
            "pw": self.password,
            "v": self.version,
            "x": self.correlation_id,
            "mt": self.message_type,
            "o": self.options.format(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class _PublishCommand(_Command):
    topic: str
    data: bytes = b""
    expiration: int | None = None  # seconds
    seq: int | None = None
    correlation_id: str | None = None
    sow_key: str | None = None  # explicit SowKey, Base64 characters only (§3.4)
    options: CommandOptions = NO_OPTIONS

    @property
    def body(self) -> bytes:
        return self.data

    def _fields(self) -> dict[str, Any]:
        return {
            "t": self.topic,
            "e": self.expiration,
            "s": self.seq,
            "x": self.correlation_id,
            "k": self.sow_key,
            "o": self.options.format(),
        }

    def _echo(self) -> dict[str, Any]:
        return {"topic": self.topic, "seq": self.seq}

    def ack(self, ack_type: AckType, *, status: Status = Status.SUCCESS, reason: str | None = None, **fields: Any) -> Ack:
        if fields:
            return _Command.ack(self, ack_type, status=status, reason=reason, **fields)
        return Ack(ack_type, status, self.cid, reason, topic=self.topic, seq=self.seq)  # every publish: no merging

    def encoded_ack(self, ack_type: AckType) -> bytes:
        """``self.ack(ack_type).encode()`` for a success ack, without building the ``Ack``.

        The broker sends one or two per publish; the header is ``Ack.header``'s, key for key in
        its order (c, cid, a, status, t, s), so the bytes are identical (tests pin it)."""
        return encode_publish_ack(ack_type, self.cid, self.topic, self.seq)


def encode_publish_ack(ack_type: AckType, cid: str | None, topic: str | None, seq: int | None) -> bytes:
    """``_PublishCommand.encoded_ack`` from the fields (the broker's publish lane has no command).

    The common ack (no cid, a topic and a sequence) is its cached header text up to ``"s":``,
    then the number: orjson writes an int as its decimal digits, so the bytes are the same."""
    if cid is None and topic is not None and seq is not None and seq.__class__ is int:
        head = _ACK_HEADS.get((ack_type, topic))
        if head is None:
            if len(_ACK_HEADS) >= 4096:  # topics are client-chosen: bounded
                _ACK_HEADS.clear()
            head = _ACK_HEADS[(ack_type, topic)] = orjson.dumps(
                {"c": "ack", "a": ack_type, "status": Status.SUCCESS, "t": topic, "s": 0})[:-2]
        text = b"%b%d}" % (head, seq)
        return _LENGTH.pack(len(text)) + text
    return _encode_publish_ack(ack_type, cid, topic, seq)


_ACK_HEADS: dict[tuple[AckType, str], bytes] = {}
_LENGTH = struct.Struct(">I")


def _encode_publish_ack(ack_type: AckType, cid: str | None, topic: str | None, seq: int | None) -> bytes:
    header: dict[str, Any] = {"c": "ack", "cid": cid, "a": ack_type, "status": Status.SUCCESS}
    if cid is None:
        del header["cid"]
    if topic is not None:
        header["t"] = topic
    if seq is not None:
        header["s"] = seq
    return encode_bodiless(header)


@fast_init  # built for every publish the broker receives
@dataclass(frozen=True, slots=True, kw_only=True)
class Publish(_PublishCommand):
    kind: ClassVar[CommandKind] = CommandKind.PUBLISH


@fast_init  # built for every publish the broker receives
@dataclass(frozen=True, slots=True, kw_only=True)
class DeltaPublish(_PublishCommand):
    kind: ClassVar[CommandKind] = CommandKind.DELTA_PUBLISH


@dataclass(frozen=True, slots=True, kw_only=True)
class _SubscribeCommand(_Command):
    topic: str  # a name, or a pattern when it holds regex characters (§5.4)
    sub_id: str | None = None  # defaults to cid
    filter: str | None = None
    bookmark: str | None = None  # raw bm: a bookmark, a comma list, 0, 0|1|, recent or a timestamp
    options: CommandOptions = NO_OPTIONS

    def __post_init__(self) -> None:
        if self.sub_id is None:
            object.__setattr__(self, "sub_id", self.cid)  # frozen: the one sanctioned write

    @property
    def is_regex(self) -> bool:
        return has_metachars(self.topic)

    @property
    def sub_ids(self) -> tuple[str, ...]:
        """``sub_id`` as a list: pause/resume (and replace) may name several (§5.4)."""
        return h.split_list(self.sub_id)

    def _fields(self) -> dict[str, Any]:
        return {"t": self.topic, "sub_id": self.sub_id, "f": self.filter, "bm": self.bookmark, "o": self.options.format()}

    def _echo(self) -> dict[str, Any]:
        return {"topic": self.topic, "sub_id": self.sub_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscribe(_SubscribeCommand):
    kind: ClassVar[CommandKind] = CommandKind.SUBSCRIBE


@dataclass(frozen=True, slots=True, kw_only=True)
class DeltaSubscribe(_SubscribeCommand):
    """Never carries a bookmark: bookmark delta subscriptions are rejected (seed 004, §5.5)."""

    kind: ClassVar[CommandKind] = CommandKind.DELTA_SUBSCRIBE


@dataclass(frozen=True, slots=True, kw_only=True)
class _QueryCommand(_Command):
    topic: str
    query_id: str | None = None  # defaults to cid
    filter: str | None = None
    sow_keys: tuple[str, ...] = ()
    batch_size: int = 1  # the server default (§3.2); at most 10000
    orderby: tuple[OrderKey, ...] = ()
    bookmark: str | None = None  # historical query
    options: CommandOptions = NO_OPTIONS  # top_n here also holds the legacy top_n header

    def __post_init__(self) -> None:
        if self.query_id is None:
            object.__setattr__(self, "query_id", self.cid)

    @property
    def is_regex(self) -> bool:
        return has_metachars(self.topic)

    def _fields(self) -> dict[str, Any]:
        return {
            "t": self.topic,
            "query_id": self.query_id,
            "f": self.filter,
            "sow_keys": h.join_list(self.sow_keys),
            "bs": self.batch_size,
            "orderby": format_orderby(self.orderby),
            "bm": self.bookmark,
            "o": self.options.format(),
        }

    def _echo(self) -> dict[str, Any]:
        return {"topic": self.topic, "query_id": self.query_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class Sow(_QueryCommand):
    kind: ClassVar[CommandKind] = CommandKind.SOW


@dataclass(frozen=True, slots=True, kw_only=True)
class _SowAndSubscribeCommand(_QueryCommand):
    sub_id: str | None = None  # defaults to cid

    def __post_init__(self) -> None:
        if self.query_id is None:
            object.__setattr__(self, "query_id", self.cid)
        if self.sub_id is None:
            object.__setattr__(self, "sub_id", self.cid)

    def _fields(self) -> dict[str, Any]:
        return {"sub_id": self.sub_id, **_QueryCommand._fields(self)}

    def _echo(self) -> dict[str, Any]:
        return {"topic": self.topic, "sub_id": self.sub_id, "query_id": self.query_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class SowAndSubscribe(_SowAndSubscribeCommand):
    kind: ClassVar[CommandKind] = CommandKind.SOW_AND_SUBSCRIBE


@dataclass(frozen=True, slots=True, kw_only=True)
class SowAndDeltaSubscribe(_SowAndSubscribeCommand):
    """Never carries a bookmark, as DeltaSubscribe."""

    kind: ClassVar[CommandKind] = CommandKind.SOW_AND_DELTA_SUBSCRIBE


class SowDeleteForm(enum.Enum):
    """The four mutually exclusive forms of sow_delete (§5.9)."""

    FILTER = "filter"
    KEYS = "keys"
    DATA = "data"
    BOOKMARKS = "bookmarks"  # queue acknowledgement


@dataclass(frozen=True, slots=True, kw_only=True)
class SowDelete(_Command):
    """Exactly one of filter, sow_keys, data and bookmark is set (parse_command checks it)."""

    kind: ClassVar[CommandKind] = CommandKind.SOW_DELETE
    topic: str
    filter: str | None = None
    sow_keys: tuple[str, ...] = ()
    data: bytes = b""
    bookmark: str | None = None  # queue acknowledgement: a comma list of bookmarks
    options: CommandOptions = NO_OPTIONS

    @property
    def form(self) -> SowDeleteForm:
        if self.filter is not None:
            return SowDeleteForm.FILTER
        if self.sow_keys:
            return SowDeleteForm.KEYS
        if self.bookmark is not None:
            return SowDeleteForm.BOOKMARKS
        return SowDeleteForm.DATA

    @property
    def body(self) -> bytes:
        return self.data

    def _fields(self) -> dict[str, Any]:
        return {
            "t": self.topic,
            "f": self.filter,
            "sow_keys": h.join_list(self.sow_keys),
            "bm": self.bookmark,
            "o": self.options.format(),
        }

    def _echo(self) -> dict[str, Any]:
        return {"topic": self.topic}


@dataclass(frozen=True, slots=True, kw_only=True)
class Unsubscribe(_Command):
    """At least one of sub_ids and query_ids; ``sub_ids == ("all",)`` removes every subscription."""

    kind: ClassVar[CommandKind] = CommandKind.UNSUBSCRIBE
    sub_ids: tuple[str, ...] = ()
    query_ids: tuple[str, ...] = ()

    @property
    def all(self) -> bool:
        return "all" in self.sub_ids

    def _fields(self) -> dict[str, Any]:
        return {"sub_id": h.join_list(self.sub_ids), "query_id": h.join_list(self.query_ids)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat(_Command):
    kind: ClassVar[CommandKind] = CommandKind.HEARTBEAT
    action: HeartbeatAction = HeartbeatAction.BEAT
    interval: int | None = None  # whole seconds, START only

    def _fields(self) -> dict[str, Any]:
        return {"o": format_heartbeat_options(self.action, self.interval)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Flush(_Command):
    kind: ClassVar[CommandKind] = CommandKind.FLUSH
    client_name: str | None = None

    def _fields(self) -> dict[str, Any]:
        return {"client_name": self.client_name}


Command = (
    Logon
    | Publish
    | DeltaPublish
    | Subscribe
    | DeltaSubscribe
    | Sow
    | SowAndSubscribe
    | SowAndDeltaSubscribe
    | SowDelete
    | Unsubscribe
    | Heartbeat
    | Flush
)
