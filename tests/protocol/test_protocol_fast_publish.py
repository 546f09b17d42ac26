"""``fast_publish`` (protocol/fastpublish.py) builds exactly the command the generic parser builds.

Differential: Hypothesis draws headers from the keys and values that decide between the two
(aliases, nulls, wrong types, digit strings, bools, out-of-range numbers, blank and regex
topics, unknown ack names ...). Whenever the fast parser answers, the generic one must answer
the same command; ``parse_command`` must always behave as the generic parser does.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ampsctl.protocol.acks import Ack, AckType, Status
from ampsctl.protocol.commands import Publish, encode_publish_ack
from ampsctl.protocol.errors import CommandError
from ampsctl.protocol.fastpublish import fast_publish, plain_publish
from ampsctl.protocol.frames import Frame
from ampsctl.protocol.parse import parse_command, parse_generic

U64 = (1 << 64) - 1
_TEXTS = st.sampled_from(["", " ", "c1", "orders", "a,b", "x" * 40, "é"]) | st.text(max_size=8)
_INTS = st.sampled_from([-1, 0, 1, 5, U64, U64 + 1]) | st.integers()
_ANY = st.one_of(st.none(), st.booleans(), _INTS, _TEXTS, st.floats(allow_nan=False), st.just([1]), st.just({}))

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "c": st.sampled_from(["publish", "p", "Publish", " publish", "publish ", "delta_publish", "sow", "P"]) | _ANY,
    "t": st.sampled_from(["orders", "bench", "", "  ", "or.*", "a[b", "t b", "ünï"]) | _ANY,
    "a": st.sampled_from(["persisted", "processed,persisted", "received,processed,persisted", "PERSISTED",
                          "completed", "stats", "none", "bogus", "persisted,", " processed , persisted", ""]) | _ANY,
    "s": _INTS | _ANY | st.sampled_from(["5", " 7 ", "-1", "+3", "x"]),
    "e": _INTS | _ANY | st.sampled_from(["60", "x"]),
    "cid": _TEXTS | _ANY,
    "x": _TEXTS | _ANY,
}
# Keys the fast parser must leave to the generic one: aliases, options, SowKey, legacy flags.
OTHER_KEYS = ["k", "o", "cmd", "command", "topic", "seq", "ack_type", "cmd_id", "correlation_id", "expiration",
              "send_oof", "sow_key", "opts", "bs", "unknown"]


@st.composite
def headers(draw: st.DrawFn) -> dict[str, Any]:
    header: dict[str, Any] = {}
    for key in draw(st.permutations(list(VALUES)))[: draw(st.integers(0, len(VALUES)))]:
        header[key] = draw(VALUES[key])
    if draw(st.booleans()):  # mostly the plain shape, so that the fast path is exercised
        header["c"] = draw(st.sampled_from(["publish", "p"]))
        header["t"] = draw(st.sampled_from(["orders", "bench", "ünï"]))
    for key in draw(st.lists(st.sampled_from(OTHER_KEYS), max_size=2)):
        header[key] = draw(_ANY)
    return header


def _outcome(parse: Any, frame: Frame) -> Any:
    try:
        return parse(frame)
    except CommandError as error:
        return ("error", error.reason, error.message, error.reply())


@settings(max_examples=1500)
@given(headers(), st.binary(max_size=16))
def test_fast_publish_builds_what_the_generic_parser_builds(header: dict[str, Any], body: bytes) -> None:
    frame = Frame(header, body)
    generic = _outcome(parse_generic, frame)
    fast = fast_publish(dict(header), body)
    if fast is not None:
        assert fast == generic
        assert type(fast) is Publish
    assert _outcome(parse_command, frame) == generic


@given(headers())
def test_plain_publish_is_fast_publishs_fields(header: dict[str, Any]) -> None:
    fields = plain_publish(header)
    fast = fast_publish(header, b"{}")
    if fields is None:
        assert fast is None
    else:
        assert fast is not None
        assert fields == (fast.cid, fast.acks, fast.topic, fast.seq, fast.expiration, fast.correlation_id)


def test_the_headers_publishers_send_take_the_fast_path() -> None:
    for header in ({"c": "publish", "t": "orders", "s": 1, "a": "persisted"},
                   {"c": "p", "t": "orders", "cid": "7", "a": "processed,persisted", "x": "corr", "e": 60},
                   {"c": "publish", "t": "orders"}):
        assert fast_publish(header, b"{}") == parse_generic(Frame(header, b"{}"))


def test_other_headers_are_left_to_the_generic_parser() -> None:
    for header in ({"c": "publish", "t": "orders", "k": "a1"}, {"c": "publish", "t": "orders", "o": "x"},
                   {"cmd": "publish", "t": "orders"}, {"c": "publish", "t": "orders", "s": "5"},
                   {"c": "publish", "t": "orders", "s": True}, {"c": "publish", "t": "or.*"},
                   {"c": "publish", "t": " "}, {"c": "publish", "t": "orders", "cid": None},
                   {"c": "delta_publish", "t": "orders"}, {"c": "publish", "t": "orders", "e": -1}):
        assert fast_publish(header, b"{}") is None


@given(st.sampled_from(list(AckType)), st.none() | st.text(max_size=6), st.text(max_size=12),
       st.none() | st.integers(0, U64) | st.booleans())
def test_encode_publish_ack_is_the_acks_own_encoding(ack_type: AckType, cid: str | None, topic: str,
                                                     seq: int | None) -> None:
    """The cached-head encoding of the broker's publish acks (commands.encode_publish_ack)."""
    expected = Ack(ack_type, Status.SUCCESS, cid, None, topic=topic, seq=seq).encode()
    assert encode_publish_ack(ack_type, cid, topic, seq) == expected
    assert encode_publish_ack(ack_type, cid, topic, seq) == expected  # the cached head, second time
