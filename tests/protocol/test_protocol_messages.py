"""Server messages and acks (spec/protocol.md §6, §7), ampsctl/protocol/messages.py and acks.py:
the builders' wire form, round trips through parse_message, and the named ack constructors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from protocol_strategies import server_messages

from ampsctl.protocol import (
    ACK_ORDER,
    Ack,
    AckType,
    Delivery,
    Frame,
    GroupBegin,
    GroupEnd,
    Oof,
    OofReason,
    ServerHeartbeat,
    ServerMessage,
    SowBatch,
    SowRecord,
    Status,
    UnknownMessage,
    decode_frames,
    logon_ack,
    parse_message,
    persisted_ack,
    sow_batches,
    stats_ack,
)
from ampsctl.protocol.acks import failure_ack_type, format_ack_types, parse_ack_types


def wire(message: ServerMessage) -> Frame:
    (frame,) = decode_frames(message.encode())
    return frame


@settings(max_examples=300, deadline=None)
@given(message=server_messages)
def test_every_server_message_round_trips(message: ServerMessage) -> None:
    assert parse_message(wire(message)) == message


# --------------------------------------------------------------------------------------
# acks (§6.1, §7)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("ack_type", list(AckType))
def test_every_ack_type_carries_status_and_reason(ack_type: AckType) -> None:
    ok = Ack(ack_type, cid="9")
    assert wire(ok).header == {"c": "ack", "cid": "9", "a": ack_type.value, "status": "success"}
    failed = Ack(ack_type, Status.FAILURE, "9", "bad filter")
    assert wire(failed).header == {"c": "ack", "cid": "9", "a": ack_type.value, "status": "failure", "reason": "bad filter"}
    assert not failed.ok and ok.ok


def test_logon_ack_fields() -> None:
    ack = logon_ack("1", client_name="cli-1", user_id="alice", version="0.1.0.0", seq=0, password="never sent")
    assert wire(ack).header == {
        "c": "ack", "cid": "1", "a": "processed", "status": "success",
        "client_name": "cli-1", "user_id": "alice", "v": "0.1.0.0", "s": 0,
    }
    retry = logon_ack("1", status=Status.RETRY, user_id="alice", password="token")
    assert wire(retry).header["pw"] == "token"  # only a retry hands credentials back (§4.1)


def test_persisted_acks_conflated_and_per_command() -> None:
    assert wire(persisted_ack(seq=5)).header == {"c": "ack", "a": "persisted", "status": "success", "s": 5}
    failed = persisted_ack(seq=3, status=Status.FAILURE, reason="duplicate")
    assert wire(failed).header == {"c": "ack", "a": "persisted", "status": "failure", "reason": "duplicate", "s": 3}
    bookmark = persisted_ack(sub_id="4", bookmark="1|17|")
    assert wire(bookmark).header == {"c": "ack", "a": "persisted", "status": "success", "sub_id": "4", "bm": "1|17|"}


def test_stats_acks_for_queries_and_sow_delete() -> None:
    query = stats_ack("2", matches=3, topic_matches=10, records_returned=3, query_id="2")
    assert wire(query).header == {
        "c": "ack", "cid": "2", "a": "stats", "status": "success",
        "query_id": "2", "matches": 3, "topic_matches": 10, "records_returned": 3,
    }
    delete = stats_ack("5", matches=1, topic_matches=1, records_deleted=1)
    assert wire(delete).header == {
        "c": "ack", "cid": "5", "a": "stats", "status": "success", "matches": 1, "topic_matches": 1, "records_deleted": 1,
    }


def test_ack_type_lists() -> None:
    assert parse_ack_types("processed, completed,none,bogus,") == {AckType.PROCESSED, AckType.COMPLETED}
    assert parse_ack_types(None) == frozenset()
    assert format_ack_types({AckType.STATS, AckType.RECEIVED, AckType.PROCESSED}) == "received,processed,stats"
    assert format_ack_types(()) is None
    assert ACK_ORDER[0] is AckType.RECEIVED and ACK_ORDER[-1] is AckType.STATS


@pytest.mark.parametrize(
    ("requested", "carrier"),
    [
        ({AckType.RECEIVED, AckType.PROCESSED, AckType.COMPLETED}, AckType.PROCESSED),
        ({AckType.PERSISTED}, AckType.PERSISTED),
        ({AckType.COMPLETED, AckType.STATS}, AckType.COMPLETED),
        ({AckType.STATS}, AckType.STATS),
        ({AckType.RECEIVED}, AckType.RECEIVED),
        (set(), None),
    ],
)
def test_the_failure_rides_on_an_ack_the_client_waits_for(requested: set[AckType], carrier: AckType | None) -> None:
    assert failure_ack_type(frozenset(requested)) is carrier


def test_client_side_ack_parsing_accepts_strings_and_aliases() -> None:
    frame = Frame({"c": "ack", "command_id": 3, "ack_type": "persisted", "status": "success", "seq": "5"})
    assert parse_message(frame) == Ack(AckType.PERSISTED, cid="3", seq=5)
    with pytest.raises(UnknownMessage):
        parse_message(Frame({"c": "ack", "a": "teleported"}))


# --------------------------------------------------------------------------------------
# p, sow, oof, group_begin/end, heartbeat (§6.2 - §6.6)
# --------------------------------------------------------------------------------------


def test_delivery_sends_sub_id_and_sids_only_for_several() -> None:
    one = Delivery(topic="orders", data=b"{}", sub_ids=("4",), bookmark="1|17|")
    assert wire(one) == Frame({"c": "p", "t": "orders", "sub_id": "4", "bm": "1|17|"}, b"{}")
    several = Delivery(topic="orders", data=b"{}", sub_ids=("4", "7"), sow_key="111", timestamp="20240101T120000.000000Z")
    assert wire(several).header == {
        "c": "p", "t": "orders", "sub_id": "4", "sids": "4,7", "k": "111", "ts": "20240101T120000.000000Z"
    }


def test_clients_also_accept_publish_for_delivered_messages() -> None:
    frame = Frame({"c": "publish", "t": "x", "subids": "a,b", "correlation_id": "YWJj"}, b"1")
    assert parse_message(frame) == Delivery(topic="x", data=b"1", sub_ids=("a", "b"), correlation_id="YWJj")


def test_sow_batch_matches_appendix_a() -> None:
    batch = SowBatch(topic="orders", query_id="2", sub_id="2", records=(SowRecord(data=b'{"id":1,"px":10.5,"qty":7}', sow_key="111"),))
    frame = wire(batch)
    assert frame.header == {"c": "sow", "t": "orders", "query_id": "2", "sub_id": "2", "bs": 1}
    assert frame.body == b'{"k":"111","l":26}{"id":1,"px":10.5,"qty":7}'


def test_sow_batches_cut_a_result_by_batch_size() -> None:
    records = [SowRecord(data=str(i).encode(), sow_key=str(i)) for i in range(5)]
    batches = list(sow_batches("t", records, 2, query_id="q"))
    assert [len(batch.records) for batch in batches] == [2, 2, 1]
    assert [batch.group_seq for batch in batches] == [1, 2, 3]
    assert [record for batch in batches for record in batch.records] == records
    assert list(sow_batches("t", [], 10)) == []
    with pytest.raises(ValueError):
        list(sow_batches("t", records, 0))


def test_oof_carries_reason_key_and_body_length() -> None:
    oof = Oof(topic="orders", reason=OofReason.MATCH, sow_key="111", sub_ids=("2",), data=b'{"id":1,"px":10.5,"qty":2}')
    assert wire(oof) == Frame(
        {"c": "oof", "t": "orders", "k": "111", "reason": "match", "sub_id": "2", "l": 26}, b'{"id":1,"px":10.5,"qty":2}'
    )
    unknown = parse_message(Frame({"c": "oof", "t": "x", "reason": "moved"}))
    assert isinstance(unknown, Oof) and unknown.reason == "moved"


def test_group_delimiters_and_heartbeat() -> None:
    assert wire(GroupBegin(query_id="2", sub_id="2")) == Frame({"c": "group_begin", "query_id": "2", "sub_id": "2"})
    assert wire(GroupEnd(query_id="q")) == Frame({"c": "group_end", "query_id": "q"})
    assert ServerHeartbeat().encode() == b'\x00\x00\x00\x11{"c":"heartbeat"}'


def test_unknown_server_messages_are_not_fatal() -> None:
    with pytest.raises(UnknownMessage) as caught:
        parse_message(Frame({"c": "start_timer"}))
    assert not caught.value.fatal


def test_a_sow_batch_encodes_as_encode_sow_batch_of_its_record_headers() -> None:
    from ampsctl.protocol.frames import encode_sow_batch
    from ampsctl.protocol.messages import SowBatch, SowRecord

    records = (SowRecord(data=b'{"id":1}', sow_key="k1"), SowRecord(data=b""),
               SowRecord(data=b"x", sow_key="k3", correlation_id="c", bookmark="1|2|", timestamp="20240101T000000Z"),
               SowRecord(data=b"y", bookmark="1|3|"))
    for query_id, sub_id in ((None, None), ("q", "s")):
        batch = SowBatch(topic="orders", records=records, query_id=query_id, sub_id=sub_id, group_seq=3)
        expected = encode_sow_batch(batch.header(), ((record.header(), record.data) for record in records))
        assert batch.encode() == expected
