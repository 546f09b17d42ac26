"""Typed commands (spec/protocol.md §5, §8), ampsctl/protocol/commands.py, parse.py and
cmdoptions.py: round trips, defaults, aliases, options and validation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protocol_strategies import COMMANDS

from ampsctl.protocol import (
    AckType,
    CommandError,
    CommandKind,
    CommandOptions,
    DeltaPublish,
    Flush,
    Frame,
    Heartbeat,
    HeartbeatAction,
    Logon,
    OrderKey,
    Publish,
    Reason,
    Sow,
    SowAndSubscribe,
    SowDeleteForm,
    Status,
    Subscribe,
    Unsubscribe,
    decode_frames,
    parse_command,
)
from ampsctl.units import parse_interval

P, C, S, PE = AckType.PROCESSED, AckType.COMPLETED, AckType.STATS, AckType.PERSISTED


def parse(header: dict[str, Any], body: bytes = b"", **kwargs: Any) -> Any:
    return parse_command(Frame(header, body), **kwargs)


def rejected(header: dict[str, Any], body: bytes = b"", **kwargs: Any) -> CommandError:
    with pytest.raises(CommandError) as caught:
        parse(header, body, **kwargs)
    return caught.value


# --------------------------------------------------------------------------------------
# round trips
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(CommandKind))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_command_round_trips_through_the_wire(kind: CommandKind, data: st.DataObject) -> None:
    command = data.draw(COMMANDS[kind])
    assert command.kind is kind
    (frame,) = decode_frames(command.encode())
    assert parse_command(frame) == command


# --------------------------------------------------------------------------------------
# the example exchange of Appendix A and the traffic of Appendix C
# --------------------------------------------------------------------------------------


def test_appendix_a_commands() -> None:
    logon = parse({"c": "logon", "cid": "1", "client_name": "cli-1", "user_id": "alice", "pw": "x", "a": "processed", "v": "0.1.0.0:python"})
    assert logon == Logon(cid="1", acks=frozenset({P}), client_name="cli-1", user_id="alice", password="x", version="0.1.0.0:python")
    assert "password" not in repr(logon) and "'x'" not in repr(logon)
    assert parse({"c": "heartbeat", "o": "start,30"}) == Heartbeat(action=HeartbeatAction.START, interval=30)
    query = parse({"c": "sow_and_subscribe", "cid": "2", "t": "orders", "f": "/qty > 5", "o": "oof", "bs": 10, "a": "processed,completed"})
    assert query == SowAndSubscribe(
        cid="2", acks=frozenset({P, C}), topic="orders", filter="/qty > 5", batch_size=10, options=CommandOptions(oof=True)
    )
    assert (query.sub_id, query.query_id) == ("2", "2")
    publish = parse({"c": "publish", "t": "orders", "s": 1, "a": "persisted", "cid": "3"}, b'{"id":1,"px":10.5,"qty":2}')
    assert publish == Publish(cid="3", acks=frozenset({PE}), topic="orders", seq=1, data=b'{"id":1,"px":10.5,"qty":2}')
    replay = parse({"c": "subscribe", "cid": "4", "t": "trades", "bm": "0", "a": "processed,completed"})
    assert replay == Subscribe(cid="4", acks=frozenset({P, C}), topic="trades", bookmark="0")
    delete = parse({"c": "sow_delete", "cid": "5", "t": "orders", "f": "1=1", "a": "processed,stats"})
    assert delete.form is SowDeleteForm.FILTER and delete.acks == {P, S}
    assert parse({"c": "unsubscribe", "sub_id": "all", "cid": "6", "a": "processed"}).all
    assert parse({"c": "flush", "cid": "7", "a": "completed"}) == Flush(cid="7", acks=frozenset({C}))
    assert parse({"c": "heartbeat", "o": "beat"}) == Heartbeat(action=HeartbeatAction.BEAT)


def test_appendix_c_client_traffic() -> None:
    logon = parse({"c": "logon", "cid": "0", "a": "processed", "client_name": "go", "version": "0.8.18", "mt": "json"})
    assert (logon.version, logon.message_type) == ("0.8.18", "json")
    assert parse({"c": "heartbeat", "opts": "stop"}).action is HeartbeatAction.STOP
    assert parse({"c": "p", "cid": "1", "t": "orders"}, b"{}") == Publish(cid="1", topic="orders", data=b"{}")
    subscribe = parse({"c": "subscribe", "cid": "1", "t": "orders", "filter": "/qty > 10", "a": "processed", "sub_id": "1"})
    assert (subscribe.filter, subscribe.sub_id) == ("/qty > 10", "1")
    bookmark = parse({"c": "subscribe", "cid": "2", "t": "t", "bm": "0", "opts": "bookmark", "a": "processed,completed"})
    assert bookmark.options.bookmark and bookmark.bookmark == "0"


def test_long_names_numbers_as_strings_and_command_case() -> None:
    sow = parse({"command": "SOW", "command_id": 9, "topic": "t", "batch_size": "25", "order_by": "/a desc", "top_n": "3"})
    assert sow == Sow(cid="9", topic="t", batch_size=25, orderby=(OrderKey("/a", True),), options=CommandOptions(top_n=3))


# --------------------------------------------------------------------------------------
# defaults and acks
# --------------------------------------------------------------------------------------


def test_ids_default_to_cid_and_stay_unset_without_one() -> None:
    assert parse({"c": "subscribe", "cid": "7", "t": "x"}).sub_id == "7"
    assert parse({"c": "subscribe", "t": "x"}).sub_id is None  # the broker assigns one (seed 002)
    assert parse({"c": "sow", "cid": "8", "t": "x"}).query_id == "8"
    assert parse({"c": "sow", "cid": "8", "t": "x", "query_id": "q"}).query_id == "q"
    assert parse({"c": "sow", "t": "x"}).batch_size == 1


@pytest.mark.parametrize(
    ("command", "asked", "kept"),
    [
        ("subscribe", "received,parsed,processed,completed,stats,none,bogus", {AckType.RECEIVED, P, C}),
        ("delta_publish", "processed,completed,stats", {P}),
        ("heartbeat", "completed", set()),
        ("sow_delete", "Processed, STATS,", {P, S}),
        ("flush", "persisted,completed", {PE, C}),
    ],
)
def test_requested_acks_are_kept_only_where_supported(command: str, asked: str, kept: set[AckType]) -> None:
    header = {"c": command, "a": asked, "t": "x", "f": "1=1", "sub_id": "s"}
    assert parse(header).acks == kept


def test_acks_echo_the_correlating_fields() -> None:
    subscribe = parse({"c": "sow_and_subscribe", "cid": "2", "t": "orders"})
    ack = subscribe.ack(P)
    assert (ack.cid, ack.topic, ack.sub_id, ack.query_id, ack.status) == ("2", "orders", "2", "2", Status.SUCCESS)
    persisted = parse({"c": "publish", "cid": "3", "t": "orders", "s": 5}).ack(PE)
    assert persisted.header() == {"c": "ack", "cid": "3", "a": "persisted", "status": "success", "t": "orders", "s": 5}
    failure = subscribe.ack(P, status=Status.FAILURE, reason=Reason.BAD_FILTER, topic=None)
    assert failure.header() == {
        "c": "ack", "cid": "2", "a": "processed", "status": "failure", "reason": "bad filter", "sub_id": "2", "query_id": "2"
    }


# --------------------------------------------------------------------------------------
# options (§8)
# --------------------------------------------------------------------------------------

MINIMUM_SET = {
    "oof": {"oof": True},
    "no_empties": {"no_empties": True},
    "no_sowkey": {"no_sowkey": True},
    "send_keys": {"send_keys": True},
    "replace": {"replace": True},
    "pause": {"pause": True},
    "resume": {"resume": True},
    "live": {"live": True},
    "timestamp": {"timestamp": True},
    "top_n=10": {"top_n": 10},
    "top_n=10,skip_n=20": {"top_n": 10, "skip_n": 20},
    "conflation=2s": {"conflation": parse_interval("2s")},
    "conflation_key=[/tickerId, /venue]": {"conflation_key": ("/tickerId", "/venue")},
    "select=[-/,+/a,/b/c]": {"select": ("-/", "+/a", "+/b/c")},
    # accepted and ignored by the local broker
    "rate=2x": {"rate": "2x"},
    "rate_max_gap=1s": {"rate_max_gap": parse_interval("1s")},
    "fully_durable": {"fully_durable": True},
    "max_backlog=5": {"max_backlog": 5},
    "bookmark_not_found=EPOCH": {"bookmark_not_found": "epoch"},
    "ack_conflation=100ms": {"ack_conflation": parse_interval("100ms")},
    "udo_coverage=/space/C.*": {"user": (("udo_coverage", "/space/C.*"),)},
}


@pytest.mark.parametrize(("text", "fields"), sorted(MINIMUM_SET.items()))
def test_the_section_8_2_options_are_recognised(text: str, fields: dict[str, Any]) -> None:
    options = parse({"c": "sow_and_subscribe", "t": "orders", "o": text}).options
    assert options == CommandOptions(**fields)
    assert parse({"c": "subscribe", "t": "orders", "o": options.format()}).options == options


def test_comma_terminated_spaced_and_repeated_options() -> None:
    options = parse({"c": "subscribe", "t": "x", "o": "oof, conflation=2s, conflation_key = [/tickerId],top_n=1,top_n=5,"}).options
    assert options == CommandOptions(
        oof=True, conflation=parse_interval("2s"), conflation_key=("/tickerId",), top_n=5
    )


def test_the_option_wins_over_the_legacy_top_n_header() -> None:
    assert parse({"c": "sow", "t": "x", "top_n": 3, "o": "top_n=7"}).options.top_n == 7


def test_legacy_boolean_headers_fold_into_options() -> None:
    options = parse({"c": "delta_subscribe", "t": "x", "send_oof": "true", "send_keys": True, "send_empty": False}).options
    assert (options.oof, options.send_keys, options.no_empties) == (True, True, True)


def test_broker_declared_options_are_accepted_as_user_options() -> None:
    header = {"c": "subscribe", "t": "control", "o": "coverage=/a.*"}
    assert rejected(header).reason is Reason.INVALID_OPTIONS
    assert parse(header, user_options=frozenset({"coverage"})).options.user_option("coverage") == "/a.*"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus", "unknown option 'bogus'"),
        ("projection=[SUM(/q) AS /q],grouping=[/a]", "aggregated subscriptions"),
        ("oof=true", "is a flag"),
        ("top_n", "needs a value"),
        ("top_n=-1", "whole number"),
        ("skip_n=5", "skip_n needs top_n"),
        ("pause,resume", "cannot be combined"),
        ("conflation=fast", "conflation=fast"),
        ("select=[a]", "path"),
        ("select=[]", "list"),
        ("conflation_key=[/a//b]", "empty step"),
        ("rate=fast", "replay speed"),
        ("bookmark_not_found=maybe", "now, epoch, fail"),
        ("oof,=5", "no name"),
    ],
)
def test_bad_options_are_invalid_options(text: str, message: str) -> None:
    error = rejected({"c": "subscribe", "cid": "1", "t": "x", "o": text, "a": "processed"})
    assert error.reason is Reason.INVALID_OPTIONS and message in error.message
    assert error.ack is not None and error.ack.reason == "invalid options"


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("/a", (OrderKey("/a"),)),
        ("/a DESC, /b TEXT", (OrderKey("/a", True), OrderKey("/b", False, True))),
        ("/c text desc,/d asc", (OrderKey("/c", True, True), OrderKey("/d"))),
        ("", ()),
    ],
)
def test_orderby(text: str, keys: tuple[OrderKey, ...]) -> None:
    assert parse({"c": "sow", "t": "x", "orderby": text}).orderby == keys


@pytest.mark.parametrize("text", ["a", "/a UP", "/a DESC ASC", "/a TEXT TEXT", "/a//b"])
def test_bad_orderby(text: str) -> None:
    assert rejected({"c": "sow", "t": "x", "orderby": text}).reason is Reason.INVALID_ORDER_BY


@pytest.mark.parametrize(
    ("text", "action", "interval"),
    [
        (None, HeartbeatAction.BEAT, None),
        ("beat", HeartbeatAction.BEAT, None),
        ("stop", HeartbeatAction.STOP, None),
        ("start,30", HeartbeatAction.START, 30),
        ("start,2m", HeartbeatAction.START, 120),
    ],
)
def test_heartbeat_options(text: str | None, action: HeartbeatAction, interval: int | None) -> None:
    assert parse({"c": "heartbeat", "o": text}) == Heartbeat(action=action, interval=interval)


@pytest.mark.parametrize("text", ["start", "start,0", "start,500ms", "start,x", "beat,5", "pulse"])
def test_bad_heartbeat_options(text: str) -> None:
    assert rejected({"c": "heartbeat", "o": text}).reason is Reason.INVALID_OPTIONS


# --------------------------------------------------------------------------------------
# per-command validation
# --------------------------------------------------------------------------------------


def test_sow_delete_forms_are_exclusive() -> None:
    assert parse({"c": "sow_delete", "t": "x", "sow_keys": "1,2,"}).form is SowDeleteForm.KEYS
    assert parse({"c": "sow_delete", "t": "x"}, b'{"id":1}').form is SowDeleteForm.DATA
    assert parse({"c": "sow_delete", "t": "q", "bm": "1|1|,1|2|"}).form is SowDeleteForm.BOOKMARKS
    error = rejected({"c": "sow_delete", "cid": "5", "t": "x", "f": "1=1", "sow_keys": "1", "a": "stats"})
    assert error.reason is Reason.INVALID_OPTIONS and "f and sow_keys" in error.message
    assert error.ack is not None and error.ack.ack_type is S  # the only ack the client waits for


def test_unsubscribe_needs_an_id() -> None:
    assert rejected({"c": "unsubscribe", "cid": "6"}).reason is Reason.INVALID_OPTIONS
    assert parse({"c": "unsubscribe", "sub_id": "a, b", "query_id": "q"}) == Unsubscribe(sub_ids=("a", "b"), query_ids=("q",))


def test_explicit_sow_keys_must_be_base64() -> None:
    assert parse({"c": "publish", "t": "x", "k": "QUJD+/="}).sow_key == "QUJD+/="
    assert rejected({"c": "publish", "t": "x", "k": "a b"}).reason is Reason.INVALID_SOW_KEY
    assert rejected({"c": "sow", "t": "x", "sow_keys": "1,a-b"}).reason is Reason.INVALID_SOW_KEY


def test_delta_subscriptions_reject_bookmarks() -> None:
    for command in ("delta_subscribe", "sow_and_delta_subscribe"):
        error = rejected({"c": command, "t": "x", "bm": "0"})
        assert error.reason is Reason.INVALID_OPTIONS and "seed 004" in error.message


def test_subscription_patterns_must_compile() -> None:
    assert parse({"c": "subscribe", "t": ".*_ORDERS"}).is_regex
    assert not parse({"c": "subscribe", "t": "orders"}).is_regex
    assert rejected({"c": "sow", "t": "orders("}).reason is Reason.BAD_REGEX_TOPIC


def test_batch_size_limits() -> None:
    assert parse({"c": "sow", "t": "x", "bs": 10_000}).batch_size == 10_000
    for bad in (0, 10_001, "ten"):
        assert rejected({"c": "sow", "t": "x", "bs": bad}).reason is Reason.INVALID_OPTIONS


def test_delta_publish_is_its_own_type() -> None:
    command = parse({"c": "delta_publish", "t": "x"}, b"{}")
    assert isinstance(command, DeltaPublish) and not isinstance(command, Publish)
    assert command != Publish(topic="x", data=b"{}")


def test_empty_strings_count_as_absent() -> None:
    command = parse({"c": "sow_and_subscribe", "t": "x", "f": "", "bm": "", "sub_id": "", "cid": "4"})
    assert (command.filter, command.bookmark, command.sub_id) == (None, None, "4")


@pytest.mark.parametrize("cid", [None, "c1"])
@pytest.mark.parametrize("seq", [None, 0, 42])
@pytest.mark.parametrize("ack_type", [AckType.PROCESSED, AckType.PERSISTED])
def test_a_publish_encoded_ack_is_byte_for_byte_its_ack_encoded(cid: str | None, seq: int | None,
                                                                ack_type: AckType) -> None:
    for command in (Publish(topic="orders", cid=cid, seq=seq, data=b"{}"),
                    DeltaPublish(topic="orders", cid=cid, seq=seq, data=b"{}")):
        assert command.encoded_ack(ack_type) == command.ack(ack_type).encode()
