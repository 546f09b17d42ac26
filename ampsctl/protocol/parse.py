"""``parse_command``: a decoded Frame -> a typed, validated command (spec/protocol.md §5).

Everything here is recoverable: a bad command raises ``CommandError`` carrying the failure
ack the broker sends (status ``failure``, the §7.4 reason, the command's ``cid`` and the
ids/topic/sequence it echoes), and the connection stays open. Checks that need broker state
(is the topic a SOW topic, is the filter valid for its message type, is the bookmark in the
journal, does the sub_id exist) are the broker core's; checks that need only the command are
made here, once, so the core receives commands it can trust:

* ``c`` is a known command (else ``invalid command``), ``t`` present and non-blank (else
  ``invalid topic``), a publish topic is literal (regex characters: ``invalid topic``), a
  subscription/query pattern compiles (``bad regex topic``);
* options per cmdoptions.py, ``orderby`` (``invalid order by``), SowKeys in the Base64
  alphabet (``invalid sow key``, §3.4), ``bs`` in 1..10000, exactly one sow_delete form, at
  least one id on unsubscribe, no ``bm`` on delta subscriptions (``invalid options``);
* every typed header value (§3.4), with the reason of the field it belongs to.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ampsctl.errors import InputError
from ampsctl.filter.errors import FilterError
from ampsctl.filter.regexes import compile_pattern, has_metachars
from ampsctl.messages.keys import check_supplied_key
from ampsctl.protocol import headers as h
from ampsctl.protocol.acks import Ack, AckType, Status, failure_ack_type, parse_ack_types
from ampsctl.protocol.cmdoptions import NO_OPTIONS, CommandOptions, parse_command_options, parse_heartbeat_options, parse_orderby
from ampsctl.protocol.commands import (
    COMMAND_NAMES,
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
    Subscribe,
    Unsubscribe,
)
from ampsctl.protocol.errors import CommandError, HeaderValueError, Reason
from ampsctl.protocol.fastpublish import fast_publish
from ampsctl.protocol.frames import Frame

MAX_BATCH_SIZE = 10_000  # §3.2: "> 10000 is an error"
_SUBSCRIBING = frozenset(
    {CommandKind.SUBSCRIBE, CommandKind.DELTA_SUBSCRIBE, CommandKind.SOW_AND_SUBSCRIBE, CommandKind.SOW_AND_DELTA_SUBSCRIBE}
)
_QUERYING = frozenset({CommandKind.SOW, CommandKind.SOW_AND_SUBSCRIBE, CommandKind.SOW_AND_DELTA_SUBSCRIBE})
_PUBLISHING = frozenset({CommandKind.PUBLISH, CommandKind.DELTA_PUBLISH})
_LEGACY = frozenset({"send_oof", "send_keys", "send_empty"})


def parse_command(frame: Frame, *, user_options: frozenset[str] = frozenset()) -> Command:
    """The typed command of ``frame``, or CommandError (see the module docstring).

    ``user_options`` names options the broker accepts besides ``udo_*``, e.g. a configured
    ``CoverageSubsetOption`` (seed 000). A plain publish header takes ``fast_publish``
    (fastpublish.py), which builds the same command as ``parse_generic`` faster.
    """
    command = fast_publish(frame.header, frame.body)
    if command is not None:
        return command
    return parse_generic(frame, user_options=user_options)


def parse_generic(frame: Frame, *, user_options: frozenset[str] = frozenset()) -> Command:
    """``parse_command`` without its publish fast path: every command, every header shape."""
    header = h.normalize(frame.header)
    name = header.get("c")
    kind = COMMAND_NAMES.get(name.strip().lower()) if isinstance(name, str) else None
    requested = parse_ack_types(header["a"]) if isinstance(header.get("a"), str) else frozenset()
    acks = requested if kind is None else _supported(requested, kind)
    try:
        cid, bad_cid = h.text(header, "cid") or None, None
    except HeaderValueError as exc:
        cid, bad_cid = None, exc  # still answered, without a cid to correlate
    if kind is None:
        message = "command has no 'c' header" if name is None else f"unknown command {name!r}"
        raise _failure(None, name, header, cid, acks, Reason.INVALID_COMMAND, message)
    if bad_cid is not None:
        raise _failure(kind, name, header, None, acks, bad_cid.reason, bad_cid.message)
    try:
        return _PARSERS[kind](_Input(header, frame.body, cid, acks, user_options))
    except HeaderValueError as exc:
        raise _failure(kind, name, header, cid, acks, exc.reason, exc.message) from None


@functools.lru_cache(maxsize=256)  # a few (ack list, command) pairs, once per command
def _supported(requested: frozenset[AckType], kind: CommandKind) -> frozenset[AckType]:
    return requested & SUPPORTED_ACKS[kind]


# Publish topics already found valid (non-blank, literal): publishers send the same few topics
# on every message. Bounded: cleared when full.
_PUBLISH_TOPICS: set[str] = set()
_PUBLISH_TOPICS_MAX = 4096


class _Input:
    """What every per-command parser reads."""

    __slots__ = ("header", "body", "cid", "acks", "user_options")

    def __init__(
        self, header: dict[str, Any], body: bytes, cid: str | None, acks: frozenset[AckType], user_options: frozenset[str]
    ) -> None:
        self.header, self.body, self.cid, self.acks, self.user_options = header, body, cid, acks, user_options

    def text(self, key: str, reason: Reason = Reason.INVALID_OPTIONS) -> str | None:
        """A string field; an empty string counts as absent (``"f":""`` is no filter)."""
        return h.text(self.header, key, reason) or None

    def options(self, *, top_n: int | None = None) -> CommandOptions:
        options = parse_command_options(self.text("o"), user_names=self.user_options, header_top_n=top_n)
        if _LEGACY.isdisjoint(self.header):
            return options
        legacy = {}  # the legacy boolean headers of §3.2, folded into the options they predate
        if h.boolean(self.header, "send_oof"):
            legacy["oof"] = True
        if h.boolean(self.header, "send_keys"):
            legacy["send_keys"] = True
        if h.boolean(self.header, "send_empty") is False:
            legacy["no_empties"] = True
        return replace(options, **legacy) if legacy else options

    def topic(self, *, pattern_allowed: bool) -> str:
        if not pattern_allowed:
            known = self.header.get("t")
            if type(known) is str and known in _PUBLISH_TOPICS:
                return known
        topic = h.journaled("t", h.text(self.header, "t", Reason.INVALID_TOPIC), Reason.INVALID_TOPIC)
        if topic is None or not topic.strip():
            raise HeaderValueError("t", "the command has no topic ('t')", Reason.INVALID_TOPIC)
        if has_metachars(topic):
            if not pattern_allowed:
                raise HeaderValueError(
                    "t",
                    f"cannot publish to {topic!r}: a topic with regular-expression characters is a pattern, "
                    "and publish topics are literal",
                    Reason.INVALID_TOPIC,
                )
            try:
                compile_pattern(topic)
            except FilterError as exc:
                raise HeaderValueError("t", f"bad regex topic: {exc.message}", Reason.BAD_REGEX_TOPIC) from None
        elif not pattern_allowed and type(self.header.get("t")) is str:  # not an integer rendered as text
            if len(_PUBLISH_TOPICS) >= _PUBLISH_TOPICS_MAX:
                _PUBLISH_TOPICS.clear()
            _PUBLISH_TOPICS.add(topic)
        return topic

    def subscription_id(self, key: str) -> str | None:
        """A sub_id or query_id that ``unsubscribe`` can name: it splits at commas and trims spaces."""
        value = self.text(key)
        if value is not None and ("," in value or value != value.strip()):
            raise HeaderValueError(key, f"{key} {value!r} could not be unsubscribed: unsubscribe reads a comma list "
                                   "of trimmed ids; use an id without commas or spaces at its ends")
        return value

    def sow_key(self) -> str | None:
        key = h.journaled("k", h.text(self.header, "k", Reason.INVALID_SOW_KEY), Reason.INVALID_SOW_KEY)
        return _checked_key("k", key) if key is not None else None

    def sow_keys(self) -> tuple[str, ...]:
        return tuple(_checked_key("sow_keys", key) for key in h.split_list(self.text("sow_keys", Reason.INVALID_SOW_KEY)))


def _checked_key(field: str, key: str) -> str:
    try:
        return check_supplied_key(key)
    except InputError as exc:
        raise HeaderValueError(field, exc.message, Reason.INVALID_SOW_KEY) from None


# --------------------------------------------------------------------------------------
# one parser per command
# --------------------------------------------------------------------------------------


def _logon(i: _Input) -> Logon:
    return Logon(
        cid=i.cid,
        acks=i.acks,
        client_name=h.journaled("client_name", i.text("client_name"), Reason.INVALID_OPTIONS),
        user_id=i.text("user_id"),
        password=i.text("pw"),
        version=i.text("v"),
        correlation_id=i.text("x"),
        message_type=i.text("mt"),
        options=i.options(),
    )


def _publish(cls: type[Publish] | type[DeltaPublish]) -> Callable[[_Input], Publish | DeltaPublish]:
    def parse(i: _Input) -> Publish | DeltaPublish:
        header = i.header
        # The broker's hot path: absent optional headers skip their getters (same results).
        plain = "o" not in header and _LEGACY.isdisjoint(header)
        return cls(
            cid=i.cid,
            acks=i.acks,
            topic=i.topic(pattern_allowed=False),
            data=i.body,
            expiration=h.integer(header, "e") if "e" in header else None,
            seq=h.integer(header, "s"),
            correlation_id=h.journaled("x", i.text("x"), Reason.INVALID_OPTIONS) if "x" in header else None,
            sow_key=i.sow_key() if "k" in header else None,
            options=NO_OPTIONS if plain else i.options(),
        )

    return parse


def _subscribe(cls: type[Subscribe] | type[DeltaSubscribe]) -> Callable[[_Input], Subscribe | DeltaSubscribe]:
    def parse(i: _Input) -> Subscribe | DeltaSubscribe:
        topic = i.topic(pattern_allowed=True)
        bookmark = _bookmark(i, delta=cls is DeltaSubscribe)
        return cls(
            cid=i.cid,
            acks=i.acks,
            topic=topic,
            sub_id=i.subscription_id("sub_id"),
            filter=i.text("f"),
            bookmark=bookmark,
            options=i.options(),
        )

    return parse


def _query_fields(i: _Input, *, delta: bool) -> dict[str, Any]:
    topic = i.topic(pattern_allowed=True)
    return {
        "cid": i.cid,
        "acks": i.acks,
        "topic": topic,
        "query_id": i.subscription_id("query_id"),
        "filter": i.text("f"),
        "sow_keys": i.sow_keys(),
        "batch_size": h.integer(i.header, "bs", minimum=1, maximum=MAX_BATCH_SIZE) or 1,
        "orderby": parse_orderby(i.text("orderby", Reason.INVALID_ORDER_BY)),
        "bookmark": _bookmark(i, delta=delta),
        "options": i.options(top_n=h.integer(i.header, "top_n")),
    }


def _sow(i: _Input) -> Sow:
    return Sow(**_query_fields(i, delta=False))


def _sow_and_subscribe(cls: type[SowAndSubscribe] | type[SowAndDeltaSubscribe]) -> Callable[[_Input], Any]:
    def parse(i: _Input) -> SowAndSubscribe | SowAndDeltaSubscribe:
        fields = _query_fields(i, delta=cls is SowAndDeltaSubscribe)
        return cls(sub_id=i.subscription_id("sub_id"), **fields)

    return parse


def _bookmark(i: _Input, *, delta: bool) -> str | None:
    bookmark = i.text("bm", Reason.INVALID_BOOKMARK)
    if bookmark is not None and delta:
        raise HeaderValueError("bm", "delta subscriptions cannot replay a bookmark (seed 004)", Reason.INVALID_OPTIONS)
    return bookmark


def _sow_delete(i: _Input) -> SowDelete:
    topic = i.topic(pattern_allowed=True)
    filter_text, keys, bookmark = i.text("f"), i.sow_keys(), i.text("bm", Reason.INVALID_BOOKMARK)
    given = [name for name, present in (("f", filter_text), ("sow_keys", keys), ("body", i.body), ("bm", bookmark)) if present]
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        raise HeaderValueError(
            "sow_delete", f"sow_delete takes exactly one of f, sow_keys, a message body or bm (got {what})"
        )
    return SowDelete(
        cid=i.cid, acks=i.acks, topic=topic, filter=filter_text, sow_keys=keys, data=i.body, bookmark=bookmark, options=i.options()
    )


def _unsubscribe(i: _Input) -> Unsubscribe:
    sub_ids, query_ids = h.split_list(i.text("sub_id")), h.split_list(i.text("query_id"))
    if not sub_ids and not query_ids:
        raise HeaderValueError("sub_id", "unsubscribe needs sub_id (an id, a comma list or all) or query_id")
    return Unsubscribe(cid=i.cid, acks=i.acks, sub_ids=sub_ids, query_ids=query_ids)


def _heartbeat(i: _Input) -> Heartbeat:
    action, interval = parse_heartbeat_options(i.text("o"))
    return Heartbeat(cid=i.cid, acks=i.acks, action=action, interval=interval)


def _flush(i: _Input) -> Flush:
    return Flush(cid=i.cid, acks=i.acks, client_name=i.text("client_name"))


_PARSERS: dict[CommandKind, Callable[[_Input], Any]] = {
    CommandKind.LOGON: _logon,
    CommandKind.PUBLISH: _publish(Publish),
    CommandKind.DELTA_PUBLISH: _publish(DeltaPublish),
    CommandKind.SUBSCRIBE: _subscribe(Subscribe),
    CommandKind.DELTA_SUBSCRIBE: _subscribe(DeltaSubscribe),
    CommandKind.SOW: _sow,
    CommandKind.SOW_AND_SUBSCRIBE: _sow_and_subscribe(SowAndSubscribe),
    CommandKind.SOW_AND_DELTA_SUBSCRIBE: _sow_and_subscribe(SowAndDeltaSubscribe),
    CommandKind.SOW_DELETE: _sow_delete,
    CommandKind.UNSUBSCRIBE: _unsubscribe,
    CommandKind.HEARTBEAT: _heartbeat,
    CommandKind.FLUSH: _flush,
}


# --------------------------------------------------------------------------------------
# the failure ack
# --------------------------------------------------------------------------------------


def _failure(
    kind: CommandKind | None,
    name: Any,
    header: Mapping[str, Any],
    cid: str | None,
    acks: frozenset[AckType],
    reason: Reason,
    message: str,
) -> CommandError:
    ack_type = failure_ack_type(acks)
    echo = _echo(kind, header, cid)
    ack = None if ack_type is None else Ack(ack_type, Status.FAILURE, cid, reason.value, **echo)
    received = None  # a known command arrived, whatever is wrong with it (§7.1); an unknown one did not
    if kind is not None and ack_type is not AckType.RECEIVED and AckType.RECEIVED in acks:
        received = Ack(AckType.RECEIVED, Status.SUCCESS, cid, None, **echo)
    command = name if isinstance(name, str) else None
    return CommandError(reason, message, command=command, cid=cid, ack=ack, received=received)


def _echo(kind: CommandKind | None, header: Mapping[str, Any], cid: str | None) -> dict[str, Any]:
    """Best effort: the correlating fields of a command that did not parse (never raises)."""
    if kind is None:
        return {}

    def string(key: str) -> str | None:
        value = header.get(key)
        return value if isinstance(value, str) and value else None

    echo: dict[str, Any] = {"topic": string("t")}
    if kind in _SUBSCRIBING:
        echo["sub_id"] = string("sub_id") or cid
    if kind in _QUERYING:
        echo["query_id"] = string("query_id") or cid
    if kind in _PUBLISHING:
        seq = h.parse_int(header.get("s"))
        echo["seq"] = seq if seq is not None and 0 <= seq <= h.UINT64_MAX else None
    return echo
