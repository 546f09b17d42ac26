"""Framing (spec/protocol.md §2), ampsctl/protocol/frames.py: split independence, encoding,
header location, SOW batches and the fatal frame errors. No sockets."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protocol_strategies import bodies, raw_frames

from ampsctl.protocol import (
    DecoderFailed,
    Frame,
    FrameDecoder,
    FrameError,
    FrameGarbage,
    FrameTooLarge,
    FrameTruncated,
    HeaderBadUtf8,
    HeaderNotJson,
    HeaderNotObject,
    SowBatchError,
    decode_frames,
    encode_frame,
)
from ampsctl.protocol.frames import MAX_LENGTH, encode_sow_batch, split_sow_records


def prefixed(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def chunks_at(stream: bytes, cuts: Iterable[int]) -> list[bytes]:
    points = [0, *sorted(set(cuts)), len(stream)]
    return [stream[a:b] for a, b in zip(points, points[1:], strict=False)]


def feed_all(chunks: Iterable[bytes], decoder: FrameDecoder | None = None) -> list[Frame]:
    decoder = decoder or FrameDecoder()
    frames = [frame for chunk in chunks for frame in decoder.feed(chunk)]
    decoder.finish()
    return frames


def feed_until_error(chunks: Iterable[bytes], max_frame_size: int) -> tuple[list[Frame], FrameError]:
    decoder, frames = FrameDecoder(max_frame_size), []
    try:
        for chunk in chunks:
            frames += decoder.feed(chunk)
        decoder.finish()
    except FrameError as error:
        return frames + error.frames, error
    raise AssertionError("the bad tail was accepted")


# --------------------------------------------------------------------------------------
# split independence (Hypothesis)
# --------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(frames=st.lists(raw_frames, max_size=6), data=st.data())
def test_any_split_gives_identical_frames(frames: list[tuple[dict, bytes]], data: st.DataObject) -> None:
    stream = b"".join(encode_frame(header, body) for header, body in frames)
    expected = [Frame(header, body) for header, body in frames]
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12), label="cuts")
    assert feed_all([stream]) == expected
    assert feed_all(stream[i : i + 1] for i in range(len(stream))) == expected
    assert feed_all(chunks_at(stream, cuts)) == expected
    assert feed_all([memoryview(stream), b""]) == expected  # any bytes-like input


BAD_TAILS = [
    (prefixed(b""), FrameGarbage),
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", FrameTooLarge),
    (prefixed(b"\x16\x03\x01\x02\x00\x01"), FrameGarbage),  # a TLS ClientHello
    (prefixed(b'["c","publish"]{}'), HeaderNotObject),
    (prefixed(b'{"c":"publish",'), HeaderNotJson),
    (prefixed(b'{"c":"p\xffublish"}{}'), HeaderBadUtf8),
    (prefixed(b"hello world"), FrameGarbage),
    (prefixed(b"nope"), HeaderNotJson),
    (prefixed(b'{"a":1}')[:-2], FrameTruncated),
]


@settings(max_examples=100, deadline=None)
@given(frames=st.lists(raw_frames, max_size=4), tail=st.sampled_from(BAD_TAILS), data=st.data())
def test_errors_and_the_frames_before_them_do_not_depend_on_the_split(
    frames: list[tuple[dict, bytes]], tail: tuple[bytes, type[FrameError]], data: st.DataObject
) -> None:
    bad, error_type = tail
    good = b"".join(encode_frame(header, body) for header, body in frames)
    stream = good + bad + encode_frame({"c": "heartbeat"})  # nothing after the error is decoded
    if error_type is FrameTruncated:
        stream = good + bad
    expected = [Frame(header, body) for header, body in frames]
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12), label="cuts")
    results = [
        feed_until_error(split, 1024)
        for split in ([stream], [stream[i : i + 1] for i in range(len(stream))], chunks_at(stream, cuts))
    ]
    for decoded, error in results:
        assert decoded == expected
        assert type(error) is error_type and error.fatal
    assert len({str(error) for _, error in results}) == 1


# --------------------------------------------------------------------------------------
# encoding
# --------------------------------------------------------------------------------------


def test_the_worked_logon_example_of_section_2_4() -> None:
    header = {
        "c": "logon",
        "cid": "1",
        "client_name": "cli-1",
        "user_id": "alice",
        "pw": "s3cret",
        "a": "processed",
        "v": "0.1.0:pyamps",
    }
    wire = encode_frame(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    assert wire == len(text).to_bytes(4, "big") + text  # compact JSON, the length excludes itself
    assert decode_frames(wire) == [Frame(header)]


def test_encoding_is_compact_drops_none_and_keeps_integers_numeric() -> None:
    wire = encode_frame({"c": "publish", "t": "orders", "s": 1, "x": None, "cid": "é"}, b'{"id":1}')
    assert wire[4:] == '{"c":"publish","t":"orders","s":1,"cid":"é"}{"id":1}'.encode()
    assert int.from_bytes(wire[:4], "big") == len(wire) - 4


def test_header_scanning_honours_strings_escapes_nesting_and_whitespace() -> None:
    tricky = {"t": 'a}b"c\\', "x": "}{", "nested": {"a": [1, {"b": "}"}]}, "u": "中文"}
    body = b'}{"not":"a header"}'
    assert decode_frames(encode_frame(tricky, body)) == [Frame(tricky, body)]
    spaced = prefixed(b' \r\n{"c" : "heartbeat"}')
    assert decode_frames(spaced) == [Frame({"c": "heartbeat"})]


@given(body=bodies)
def test_the_body_is_opaque_bytes(body: bytes) -> None:
    frame = Frame({"c": "publish", "t": "bin"}, body + b"\xff\xfe\x00")
    assert decode_frames(frame.encode()) == [frame]


class _Huge(bytes):
    """A body that claims a uint32's worth of bytes, without allocating them."""

    def __len__(self) -> int:
        return MAX_LENGTH


def test_the_length_prefix_cannot_overflow() -> None:
    with pytest.raises(FrameTooLarge):
        encode_frame({"c": "p"}, _Huge())


# --------------------------------------------------------------------------------------
# decoder behaviour
# --------------------------------------------------------------------------------------


def test_an_oversize_length_fails_before_its_body_arrives() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    with pytest.raises(FrameTooLarge) as caught:
        decoder.feed((101).to_bytes(4, "big"))
    assert (caught.value.size, caught.value.limit) == (101, 100)
    assert decoder.failed is caught.value and decoder.buffered == 0


def test_a_frame_of_exactly_the_limit_is_accepted() -> None:
    wire = encode_frame({"c": "publish"}, b"x" * 50)
    assert FrameDecoder(max_frame_size=len(wire) - 4).feed(wire) == [Frame({"c": "publish"}, b"x" * 50)]


def test_garbage_fails_on_its_first_header_byte_without_waiting_for_the_body() -> None:
    decoder = FrameDecoder()
    assert decoder.feed((4096).to_bytes(4, "big")) == []
    with pytest.raises(FrameGarbage):
        decoder.feed(b"\x01")


def test_a_failed_decoder_stays_failed_and_keeps_the_frames_before_the_error() -> None:
    first = encode_frame({"c": "publish", "t": "a"}, b"1")
    decoder = FrameDecoder()
    with pytest.raises(HeaderNotObject) as caught:
        decoder.feed(first + prefixed(b"[1]"))
    assert caught.value.frames == [Frame({"c": "publish", "t": "a"}, b"1")]
    with pytest.raises(DecoderFailed):
        decoder.feed(first)
    decoder.finish()  # already failed: nothing more to report


def test_finish_reports_a_peer_that_disconnected_mid_frame() -> None:
    wire = encode_frame({"c": "publish", "t": "a"}, b"payload")
    decoder = FrameDecoder()
    assert decoder.feed(wire + wire[:9]) == [Frame({"c": "publish", "t": "a"}, b"payload")]
    assert decoder.buffered == 9
    with pytest.raises(FrameTruncated, match="9 bytes"):
        decoder.finish()


def test_a_large_frame_in_small_pieces_is_not_quadratic() -> None:
    body = b"x" * (8 * 1024 * 1024)
    wire = encode_frame({"c": "publish", "t": "big"}, body)
    decoder = FrameDecoder()
    started = time.perf_counter()
    frames = [frame for i in range(0, len(wire), 1024) for frame in decoder.feed(wire[i : i + 1024])]
    assert frames == [Frame({"c": "publish", "t": "big"}, body)]
    assert time.perf_counter() - started < 5  # a rescan per piece would take minutes


def test_max_frame_size_must_fit_a_uint32() -> None:
    with pytest.raises(ValueError):
        FrameDecoder(0)
    with pytest.raises(ValueError):
        FrameDecoder(MAX_LENGTH + 1)


def test_frames_recorded_from_an_independent_client_decode() -> None:
    """Appendix C traffic: long keys, ``c=p``, ``opts``, a payload right after the header."""
    sent = [
        b'{"c":"logon","cid":"0","a":"processed","client_name":"go-1","version":"0.8.18","mt":"json"}',
        b'{"c":"heartbeat","opts":"stop"}',
        b'{"c":"p","cid":"1","t":"orders"}{"id":7,"qty":3}',
        b'{"c":"subscribe","cid":"1","t":"orders","filter":"/qty > 10","a":"processed","sub_id":"1"}',
    ]
    frames = decode_frames(b"".join(prefixed(payload) for payload in sent))
    assert [frame.header["c"] for frame in frames] == ["logon", "heartbeat", "p", "subscribe"]
    assert frames[2].body == b'{"id":7,"qty":3}'


# --------------------------------------------------------------------------------------
# SOW batches (§2.3)
# --------------------------------------------------------------------------------------


def test_sow_batch_layout_matches_the_spec_example() -> None:
    records = [({"k": "111", "x": "YWJj"}, b'{"id":1,"px":10.5,"qty":7}'), ({"k": "222"}, b'{"id":2,"px":11.0,"qty":3}')]
    wire = encode_sow_batch({"c": "sow", "t": "orders", "query_id": "q1", "l": 99}, records)
    (frame,) = decode_frames(wire)
    assert frame.header == {"c": "sow", "t": "orders", "query_id": "q1", "bs": 2}  # no outer l
    assert frame.body == (
        b'{"k":"111","x":"YWJj","l":26}{"id":1,"px":10.5,"qty":7}{"k":"222","l":26}{"id":2,"px":11.0,"qty":3}'
    )
    assert split_sow_records(frame.body) == [
        ({"k": "111", "x": "YWJj", "l": 26}, records[0][1]),
        ({"k": "222", "l": 26}, records[1][1]),
    ]


@given(records=st.lists(st.tuples(st.dictionaries(st.sampled_from(["k", "x", "bm", "ts"]), st.text(max_size=5)), bodies), max_size=5))
def test_sow_records_round_trip(records: list[tuple[dict, bytes]]) -> None:
    (frame,) = decode_frames(encode_sow_batch({"c": "sow"}, records))
    assert frame.header["bs"] == len(records)
    assert split_sow_records(frame.body) == [({**header, "l": len(data)}, data) for header, data in records]


def test_sow_records_accept_msg_len_and_string_lengths() -> None:
    assert split_sow_records(b'{"k":"1","msg_len":"2"}{}') == [({"k": "1", "msg_len": "2"}, b"{}")]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"k":"1"}{}', "no valid l"),
        (b'{"k":"1","l":5}{}', "only 2 bytes follow"),
        (b'{"k":"1","l":-1}', "no valid l"),
        (b"garbage", "record 1"),
    ],
)
def test_bad_sow_records_raise(body: bytes, message: str) -> None:
    with pytest.raises(SowBatchError, match=message):
        split_sow_records(body)
