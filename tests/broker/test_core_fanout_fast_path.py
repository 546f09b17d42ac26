"""fan_out's fast path for one plain subscription makes the general path's bytes (fanout.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ampsctl.broker.core.fanout import Update, UpdateKind, fan_out, fan_out_message, render
from ampsctl.broker.core.subscriptions import Subscription
from ampsctl.protocol.cmdoptions import parse_command_options


def _sub(options: str | None) -> Subscription:
    return Subscription.build(conn=3, sub_id="s1", topic="orders", filter=None, predicate=None, delta=False,
                              options=parse_command_options(options), order=1)


UPDATES = [
    Update(UpdateKind.PUBLISH, "orders", b'{"id":1}'),
    Update(UpdateKind.PUBLISH, "orders", b'{"id":1}', correlation_id="corr", bookmark="12|3|"),
    Update(UpdateKind.PUBLISH, "orders", b'{"id":2}', old=b'{"id":2,"a":1}', key="k2", bookmark="12|4|"),
    Update(UpdateKind.DELETE, "orders", None, old=b'{"id":2}', key="k2"),
    Update(UpdateKind.EXPIRE, "orders", None, old=b'{"id":2}', key="k2"),
]


@pytest.mark.parametrize("options", [None, "no_sowkey"])
@pytest.mark.parametrize("update", UPDATES)
def test_one_plain_subscription_gets_the_general_paths_frame(update: Update, options: str | None) -> None:
    sub = _sub(options)
    sends = fan_out(update, [sub], 1)
    general = render(update, [sub], 1)  # the per-connection path, which the fast path skips
    assert b"".join(send.data for send in sends) == general
    assert all(send.conn == 3 for send in sends)
    assert len(sends) == (1 if general else 0)


@pytest.mark.parametrize("options", ["oof", "timestamp", "select=[/id]"])
def test_other_options_take_the_general_path(options: str) -> None:
    sub = _sub(options)
    update = Update(UpdateKind.PUBLISH, "orders", b'{"id":1}', key="k1")
    assert b"".join(send.data for send in fan_out(update, [sub], 1)) == render(update, [sub], 1)


def _subs(*options: str | None) -> list[Subscription]:
    return [Subscription.build(conn=3 + n % 2, sub_id=f"s{n}", topic="orders", filter=None, predicate=None,
                               delta=False, options=parse_command_options(option), order=n)
            for n, option in enumerate(options)]


@pytest.mark.parametrize("options", [(None,), ("no_sowkey",), ("timestamp",), ("select=[/id]",), (None, None),
                                     (None, "timestamp", "select=[/id]")])
@pytest.mark.parametrize(("correlation_id", "bookmark"), [(None, None), ("corr", "12|3|"), (None, "12|4|")])
def test_fan_out_message_is_fan_out_of_the_message_update(options: tuple[str | None, ...], correlation_id: str | None,
                                                          bookmark: str | None) -> None:
    """A publish to a topic without a SOW skips building its Update (publishing.py); same sends."""
    update = Update(UpdateKind.PUBLISH, "orders", b'{"id":1}', correlation_id=correlation_id, bookmark=bookmark)
    expected = fan_out(update, _subs(*options), 7)
    assert fan_out_message(_subs(*options), "orders", b'{"id":1}', correlation_id, bookmark, 7) == expected


@given(st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=6), st.none() | st.text(max_size=8),
       st.none() | st.text(max_size=12), st.binary(max_size=8))
def test_the_plain_frame_is_the_deliverys_encoding(topic: str, sub_id: str, correlation_id: str | None,
                                                   bookmark: str | None, data: bytes) -> None:
    """The cached-head ``p`` frame (any text, escapes included) is Delivery(...).encode()'s bytes."""
    sub = Subscription.build(conn=3, sub_id=sub_id, topic="orders", filter=None, predicate=None, delta=False,
                             options=parse_command_options(None), order=1)
    update = Update(UpdateKind.PUBLISH, topic, data, correlation_id=correlation_id, bookmark=bookmark)
    for _ in range(2):  # the second time from the cache
        sends = fan_out_message([sub], topic, data, correlation_id, bookmark, 1)
        assert b"".join(send.data for send in sends) == render(update, [sub], 1)
