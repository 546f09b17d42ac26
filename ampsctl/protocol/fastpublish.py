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
from ampsctl.protocol.headers import MAX_JOURNALED_TEXT, UINT64_MAX

_KEYS = frozenset({"c", "t", "a", "s", "cid", "x", "e"})
_PUBLISH_ACKS = SUPPORTED_ACKS[CommandKind.PUBLISH]
_CACHE_MAX = 4096  # the caches hold client-chosen strings: bounded, cleared when full
_topics: set[str] = set()  # topics found non-blank and literal
_acks: dict[str, frozenset[AckType]] = {}  # ``a`` text -> the publish acks it asks for
_EMPTY: frozenset[AckType] = frozenset()
_LONG = MAX_JOURNALED_TEXT // 4  # longer texts may not fit the journal: the generic parser measures them


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
        if not topic.strip() or has_metachars(topic) or len(topic) > _LONG:
            return None  # the generic parser refuses it, with its reason (or measures it)
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
    # Each optional field, inlined (once per message): absent is None; a JSON null, a bool, a
    # digit string, a number out of range or a non-string text is not plain (None returned).
    seq = header.get("s")
    if seq is None:
        if "s" in header:
            return None
    elif seq.__class__ is not int or not 0 <= seq <= UINT64_MAX:
        return None
    expiration = header.get("e")
    if expiration is None:
        if "e" in header:
            return None
    elif expiration.__class__ is not int or not 0 <= expiration <= UINT64_MAX:
        return None
    cid = header.get("cid")
    if cid is None:
        if "cid" in header:
            return None
    elif cid.__class__ is not str:
        return None
    correlation_id = header.get("x")
    if correlation_id is None:
        if "x" in header:
            return None
    elif correlation_id.__class__ is not str or len(correlation_id) > _LONG:
        return None
    return cid or None, acks, topic, seq, expiration, correlation_id or None


def _remember(cache: set[str], value: str) -> None:
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache.add(value)
