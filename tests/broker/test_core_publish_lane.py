"""The core's publish lane (``BrokerCore.receive`` with a plain publish header) does what
``handle`` does with the generically parsed command: the same actions, in the same order, and
the same state afterwards (journal numbering, SOW, publisher memory, sessions)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ampsctl.broker.core import Action, BrokerCore
from ampsctl.protocol.commands import Subscribe
from ampsctl.protocol.fastpublish import plain_publish
from ampsctl.protocol.frames import Frame
from ampsctl.protocol.parse import parse_generic
from tests.broker.core_helpers import NOW, logged_on, make_core, send, spec

PUB, SUB, OOF = 1, 2, 3


def _core(*, journal: bool) -> BrokerCore:
    core = make_core(spec("orders"), recorded=["orders", "bench"] if journal else None)
    for conn in (PUB, SUB, OOF):
        logged_on(core, conn, f"c{conn}")
    send(core, SUB, Subscribe(cid="s1", topic="orders"))
    send(core, SUB, Subscribe(cid="s2", topic="bench"))
    send(core, OOF, Subscribe(cid="s3", topic="orders", filter="/qty > 5", options=_options("oof")))
    return core


def _options(text: str) -> Any:
    from ampsctl.protocol.cmdoptions import parse_command_options

    return parse_command_options(text)


def _reference(core: BrokerCore, conn: int, frame: Frame, now: int) -> list[Action]:
    """What the core did before the lane: parse generically, then ``handle``."""
    return core.handle(conn, parse_generic(frame), now)


def _state(core: BrokerCore) -> Any:
    store = core.store
    records = sorted((topic.topic, record.key, record.payload) for topic in store.topics() for record in topic.records())
    publishers = {name: (p.last_seq, p.last_journaled) for name, p in core.publishers.by_name.items()}
    sessions = {conn: (s.last_in, s.last_out) for conn, s in core.sessions.items()}
    return core.last_sequence, store.last_sequence, records, publishers, sessions


header_fields = st.fixed_dictionaries(
    {"t": st.sampled_from(["orders", "bench", "other"])},
    optional={
        "s": st.integers(0, 6),
        "a": st.sampled_from(["persisted", "processed", "received,processed,persisted", "processed,persisted"]),
        "cid": st.sampled_from(["c1", "", "2"]),
        "x": st.sampled_from(["corr", ""]),
        "e": st.integers(0, 100),
    },
)
bodies = st.one_of(
    st.builds(lambda i, q: json.dumps({"id": i, "qty": q}).encode(), st.integers(0, 3), st.integers(0, 10)),
    st.just(b'{"qty":1}'),  # no key: the SOW topic refuses it
    st.just(b"not json"),
)


@settings(max_examples=150, deadline=None)
@pytest.mark.parametrize("journal", [True, False])
@given(messages=st.lists(st.tuples(header_fields, bodies), min_size=1, max_size=12))
def test_the_publish_lane_does_what_handle_does(journal: bool, messages: list[tuple[dict[str, Any], bytes]]) -> None:
    lane, reference = _core(journal=journal), _core(journal=journal)
    for step, (fields, body) in enumerate(messages):
        header = {"c": "publish", **fields}
        assert plain_publish(header) is not None  # the lane is taken
        now = NOW + step
        got = lane.receive(PUB, Frame(dict(header), body), now)
        expected = _reference(reference, PUB, Frame(dict(header), body), now)
        assert got == expected
        assert _state(lane) == _state(reference)


def test_a_connection_not_logged_on_is_not_served_by_the_lane() -> None:
    core = make_core(spec("orders"), recorded=["orders"], require_logon=True)
    core.connected(9, NOW)
    reference = make_core(spec("orders"), recorded=["orders"], require_logon=True)
    reference.connected(9, NOW)
    frame = Frame({"c": "publish", "t": "orders", "a": "processed"}, b'{"id":1}')
    assert core.receive(9, frame, NOW) == reference.receive(9, frame, NOW)
    assert core.last_sequence == 0
