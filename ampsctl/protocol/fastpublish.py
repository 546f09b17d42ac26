"""``fast_publish``: the publish command of a plain publish header, without the generic parser.

A publisher sends the same header shape on every message: ``{"c":"publish","t":...,"s":N,
"a":"persisted"}``, maybe with a ``cid``, ``x`` or ``e``. ``parse_command`` (parse.py) spends
about 2 µs on such a frame: alias normalisation, the per-command dispatch, the ``_Input``
wrapper and the typed getters. The broker parses one per message, so this module answers that
one shape directly, in well under a microsecond.

Contract: for any header, ``fast_publish(header, body)`` is either None ("not the plain shape:
ask the generic parser") or exactly the command the generic parser returns for the same frame
(tests/protocol/test_protocol_fast_publish.py checks it with Hypothesis). So it only takes
values whose generic reading is the identity: keys among ``_KEYS`` (wire keys, no aliases, no
options), strings that are strings, integers that are ints (not bools, not digit strings) in
range, and a topic that is non-blank and literal. Anything else, including every input the
generic parser refuses, returns None, and the generic parser makes the failure ack.
"""

from __future__ import annotations

from typing import Any

from ampsctl.filter.regexes import has_metachars
from ampsctl.protocol.acks import AckType, parse_ack_types
from ampsctl.protocol.commands import SUPPORTED_ACKS, CommandKind, Publish
from ampsctl.protocol.headers import UINT64_MAX

_KEYS = frozenset({"c", "t", "a", "s", "cid", "x", "e"})
_PUBLISH_ACKS = SUPPORTED_ACKS[CommandKind.PUBLISH]
_CACHE_MAX = 4096  # the caches hold client-chosen strings: bounded, cleared when full
_topics: set[str] = set()  # topics found non-blank and literal
_acks: dict[str, frozenset[AckType]] = {}  # ``a`` text -> the publish acks it asks for
_EMPTY: frozenset[AckType] = frozenset()


PlainPublish = tuple[str | None, frozenset[AckType], str, int | None, int | None, str | None]
"""(cid, acks, topic, seq, expiration, correlation_id): the fields of a plain publish."""


def fast_publish(header: dict[str, Any], body: bytes) -> Publish | None:
    """The ``Publish`` of a plain publish header, or None (see the module docstring)."""
    fields = plain_publish(header)
    if fields is None:
        return None
    cid, acks, topic, seq, expiration, correlation_id = fields
    return Publish(cid=cid, acks=acks, topic=topic, data=body, expiration=expiration, seq=seq,
                   correlation_id=correlation_id)


def plain_publish(header: dict[str, Any]) -> PlainPublish | None:
    """``fast_publish``'s fields, without building the command (the broker's publish lane
    reads them directly: a ``Publish`` costs ~1 µs to build)."""
    name = header.get("c")
    if (name != "publish" and name != "p") or not _KEYS.issuperset(header):
        return None
    topic = header.get("t")
    if topic.__class__ is not str:
        return None
    if topic not in _topics:
        if not topic.strip() or has_metachars(topic):
            return None  # the generic parser refuses it, with its reason
        _remember(_topics, topic)
    acks = _EMPTY
    if "a" in header:
        text = header["a"]
        if text.__class__ is not str:
            return None
        acks = _acks.get(text)  # type: ignore[assignment]
        if acks is None:
            acks = parse_ack_types(text) & _PUBLISH_ACKS
            if len(_acks) >= _CACHE_MAX:
                _acks.clear()
            _acks[text] = acks
    seq = _uint(header, "s")
    expiration = _uint(header, "e")
    if seq is False or expiration is False:
        return None
    cid = _text(header, "cid")
    correlation_id = _text(header, "x")
    if cid is False or correlation_id is False:
        return None
    return cid, acks, topic, seq, expiration, correlation_id  # type: ignore[return-value]


def _uint(header: dict[str, Any], key: str) -> int | None | bool:
    """An absent key is None; an int in 0..UINT64_MAX itself; anything else False (not plain)."""
    value = header.get(key, None)
    if value is None:
        return None if key not in header else False  # a JSON null: the generic parser drops it
    if value.__class__ is int and 0 <= value <= UINT64_MAX:
        return value
    return False


def _text(header: dict[str, Any], key: str) -> str | None | bool:
    """An absent key is None; a string itself ("" counts as absent); anything else False."""
    value = header.get(key, None)
    if value is None:
        return None if key not in header else False
    if value.__class__ is str:
        return value or None
    return False


def _remember(cache: set[str], value: str) -> None:
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache.add(value)
