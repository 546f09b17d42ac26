"""Header fields: the table of spec/protocol.md §3.2, the aliases of §3.3, the values of §3.4.

On the wire a field's key is its abbreviation when it has one, else its long name (§3.1).
``normalize`` maps every accepted spelling to that wire key, so the rest of the package reads
only wire keys. Be strict in what you send, lenient in what you accept:

* every long name and every §3.3 alias is accepted; when a header carries both the wire key
  and an alias, the wire key wins (a stable rule, independent of key order);
* a JSON ``null`` is the same as an absent field; unknown keys are kept but never read;
* integers may arrive as strings of digits, strings as integers (§2.2), booleans as
  ``"true"``/``"false"`` or 0/1 (§3.4);
* comma lists (``a``, ``sub_id``, ``sow_keys``, ``sids``) tolerate spaces, empty items and a
  trailing comma, as client constants are comma-terminated.

A value of the wrong type raises ``HeaderValueError`` naming the field and the §7.4 reason the
failure ack will carry.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ampsctl.protocol.errors import HeaderValueError, Reason

UINT64_MAX = (1 << 64) - 1
MAX_JOURNALED_TEXT = 0xFFFF  # UTF-8 bytes of a topic, SowKey, correlation id or client name (the journal's u16)


class ValueKind(enum.Enum):
    STRING = "string"
    INTEGER = "integer"
    BOOLEAN = "boolean"
    TIMESTAMP = "timestamp"  # a string, YYYYMMDDThhmmss.ffffffZ
    LEGACY = "legacy"  # documented, no defined value; never read


@dataclass(frozen=True, slots=True)
class Field:
    key: str  # the wire key (§3.1)
    long: str  # the long header name
    canonical: str  # the Protocol Reference's name
    kind: ValueKind
    aliases: tuple[str, ...] = ()


_S, _I, _B, _T, _L = ValueKind.STRING, ValueKind.INTEGER, ValueKind.BOOLEAN, ValueKind.TIMESTAMP, ValueKind.LEGACY

FIELDS: tuple[Field, ...] = (
    Field("c", "cmd", "Command", _S, ("command",)),
    Field("cid", "cmd_id", "CommandId", _S, ("command_id",)),
    Field("t", "topic", "Topic", _S),
    Field("f", "filter", "Filter", _S),
    Field("o", "opts", "Options", _S, ("options",)),
    Field("a", "ack_type", "AckType", _S),
    Field("bm", "bookmark", "Bookmark", _S),
    Field("bs", "batch_size", "BatchSize", _I),
    Field("client_name", "client_name", "ClientName", _S),
    Field("user_id", "user_id", "UserId", _S),
    Field("pw", "password", "Password", _S),
    Field("v", "version", "Version", _S),
    Field("x", "correlation_id", "CorrelationId", _S),
    Field("e", "expiration", "Expiration", _I),
    Field("s", "seq", "Sequence", _I),
    Field("k", "sow_key", "SowKey", _S),
    Field("sow_keys", "sow_keys", "SowKeys", _S),
    Field("sub_id", "sub_id", "SubscriptionId", _S),
    Field("sids", "sids", "SubscriptionIds", _S, ("subids",)),
    Field("query_id", "query_id", "QueryID", _S),
    Field("top_n", "top_n", "TopNRecordsReturned", _I),
    Field("orderby", "orderby", "OrderBy", _S, ("order_by",)),
    Field("status", "status", "Status", _S),
    Field("reason", "reason", "Reason", _S),
    Field("matches", "matches", "Matches", _I),
    Field("topic_matches", "topic_matches", "TopicMatches", _I),
    Field("records_returned", "records_returned", "RecordsReturned", _I),
    Field("records_inserted", "records_inserted", "RecordsInserted", _I),
    Field("records_updated", "records_updated", "RecordsUpdated", _I),
    Field("records_deleted", "records_deleted", "RecordsDeleted", _I),
    Field("l", "msg_len", "MsgLen", _I),
    Field("ts", "timestamp", "Timestamp", _T),
    Field("gseq", "gseq", "GroupSequenceNumber", _I),
    Field("lp", "leaseperiod", "LeasePeriod", _S, ("lease_period",)),
    Field("mt", "message_type", "MessageType", _S),  # sent by real clients (Appendix C), not in §3.2
    Field("data_only", "data_only", "DataOnly", _B),
    Field("send_empty", "send_empty", "SendEmpty", _B),
    Field("send_keys", "send_keys", "SendKeys", _B),
    Field("send_oof", "send_oof", "SendOutOfFocus", _B),
    Field("heartbeat", "heartbeat", "Heartbeat", _L),
    Field("timeout_interval", "timeout_interval", "TimeoutInterval", _L),
    Field("max_msgs", "max_msgs", "MaximumMessages", _I),
    Field("src", "src", "Src", _L),
    Field("use_ns", "use_ns", "UseNamespaces", _L),
)

FIELDS_BY_KEY: dict[str, Field] = {field.key: field for field in FIELDS}
ALIASES: dict[str, str] = {
    spelling: field.key for field in FIELDS for spelling in (field.long, *field.aliases) if spelling != field.key
}


_ALIAS_NAMES = frozenset(ALIASES)


def wire_key(name: str) -> str:
    """The wire key for any accepted spelling; unknown names come back unchanged."""
    return ALIASES.get(name, name)


def normalize(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with every alias renamed to its wire key and nulls dropped (see the module doc).

    Returns ``raw`` itself when there is nothing to change (the common case): never mutate it.
    """
    if _ALIAS_NAMES.isdisjoint(raw) and None not in raw.values():
        return raw if isinstance(raw, dict) else dict(raw)
    out: dict[str, Any] = {}
    aliased: set[str] = set()  # keys set from an alias, which a later wire key may overwrite
    for name, value in raw.items():
        if value is None:
            continue
        key = ALIASES.get(name)
        if key is None:
            out[name] = value  # a wire key, or unknown
            aliased.discard(name)
        elif key not in out or key in aliased:
            out[key] = value
            aliased.add(key)
    return out


# --------------------------------------------------------------------------------------
# typed getters (on a normalized header)
# --------------------------------------------------------------------------------------


def text(header: Mapping[str, Any], key: str, reason: Reason = Reason.INVALID_OPTIONS) -> str | None:
    """A string field; an integer is accepted and rendered in decimal (§2.2)."""
    value = header.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise HeaderValueError(key, f"header {key!r} must be a string, not {_json_type(value)}", reason)


def journaled(key: str, value: str | None, reason: Reason) -> str | None:
    """``value`` unless it is longer than the journal stores (``MAX_JOURNALED_TEXT``)."""
    if value is not None and len(value) > MAX_JOURNALED_TEXT // 4:  # 4 bytes per character at most
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_JOURNALED_TEXT:
            raise HeaderValueError(key, f"header {key!r} is {size} bytes of UTF-8; the journal stores at most "
                                   f"{MAX_JOURNALED_TEXT}", reason)
    return value


def integer(
    header: Mapping[str, Any],
    key: str,
    *,
    minimum: int = 0,
    maximum: int = UINT64_MAX,
    reason: Reason = Reason.INVALID_OPTIONS,
) -> int | None:
    """An integer field in ``[minimum, maximum]``; a string of digits is accepted (§2.2)."""
    value = header.get(key)
    if value is None:
        return None
    number = parse_int(value)
    if number is None:
        raise HeaderValueError(key, f"header {key!r} must be an integer, not {value!r}", reason)
    if not minimum <= number <= maximum:
        raise HeaderValueError(key, f"header {key!r} is {number}, outside {minimum}..{maximum}", reason)
    return number


def parse_int(value: Any) -> int | None:
    """``value`` as an int if it is a JSON integer or a string of (signed) digits, else None."""
    if isinstance(value, bool):
        return None  # True is an int in Python, never in a header
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        stripped = value.strip()
        digits = stripped[1:] if stripped[:1] in ("-", "+") else stripped
        if digits.isascii() and digits.isdigit():
            return int(stripped)
    return None


def boolean(header: Mapping[str, Any], key: str) -> bool | None:
    """A boolean field: JSON true/false, ``"true"``/``"false"`` (any case), or 0/1."""
    value = header.get(key)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise HeaderValueError(key, f"header {key!r} must be true or false, not {value!r}")


def split_list(value: str | None) -> tuple[str, ...]:
    """The items of a comma list: trimmed, empty items (and a trailing comma) dropped."""
    if not value:
        return ()
    return tuple(item for item in (part.strip() for part in value.split(",")) if item)


def join_list(items: tuple[str, ...] | list[str]) -> str | None:
    """The wire form of a comma list; None (field absent) for an empty list."""
    return ",".join(items) if items else None


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --------------------------------------------------------------------------------------
# timestamps (§3.4): basic ISO-8601, UTC, microseconds; the caller supplies the time
# --------------------------------------------------------------------------------------

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def format_timestamp(micros: int) -> str:
    """µs since the Unix epoch -> ``20240101T120000.123456Z`` (the ``ts`` header)."""
    moment = _UNIX_EPOCH + timedelta(microseconds=micros)
    return moment.strftime("%Y%m%dT%H%M%S.") + f"{moment.microsecond:06d}Z"
