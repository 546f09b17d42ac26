"""One test per class of bad input (issue 7, "Bad input"), each asserting the typed error and
what it implies for the broker: close the connection (FrameError, no reply is possible), or
answer with a failure ack that correlates by cid and keep serving (CommandError).

Also: the package stays sans-IO (DESIGN.md layers)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from ampsctl.protocol import (
    CommandError,
    FrameDecoder,
    FrameError,
    FrameGarbage,
    FrameTooLarge,
    FrameTruncated,
    HeaderBadUtf8,
    HeaderNotJson,
    HeaderNotObject,
    Reason,
    decode_frames,
    encode_frame,
    parse_command,
)

PACKAGE = Path(__file__).resolve().parents[2] / "ampsctl" / "protocol"


def prefixed(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def frame_error(stream: bytes, max_frame_size: int = 1 << 20) -> FrameError:
    decoder = FrameDecoder(max_frame_size)
    with pytest.raises(FrameError) as caught:
        decoder.feed(stream)
        decoder.finish()
    assert caught.value.fatal  # the broker closes this one connection
    assert decoder.failed is caught.value
    return caught.value


def command_error(header: dict, body: bytes = b"") -> CommandError:
    (frame,) = decode_frames(encode_frame(header, body))  # the frame itself is fine
    with pytest.raises(CommandError) as caught:
        parse_command(frame)
    assert not caught.value.fatal  # the connection stays open
    return caught.value


# --------------------------------------------------------------------------------------
# fatal: the stream cannot be trusted, there is no cid to answer
# --------------------------------------------------------------------------------------


def test_garbage() -> None:
    error = frame_error(b"\x00\x00\x00\x05\x16\x03\x01\x00\x00")
    assert isinstance(error, FrameGarbage) and error.code == "FRAME-GARBAGE"
    assert isinstance(frame_error(b"\x00\x00\x00\x00"), FrameGarbage)


def test_oversize_frame() -> None:
    error = frame_error(prefixed(b'{"c":"publish","t":"x"}' + b"x" * 2000), max_frame_size=1024)
    assert isinstance(error, FrameTooLarge) and error.code == "FRAME-SIZE" and "over the 1024-byte limit" in str(error)


def test_header_that_is_not_json() -> None:
    error = frame_error(prefixed(b'{c:"publish"}{}'))
    assert isinstance(error, HeaderNotJson) and error.code == "FRAME-JSON"


def test_header_that_is_a_list() -> None:
    error = frame_error(prefixed(b'[{"c":"publish"}]'))
    assert isinstance(error, HeaderNotObject) and "an array" in str(error)


def test_header_that_is_not_utf8() -> None:
    error = frame_error(prefixed(b'{"c":"publish","t":"\xc3\x28"}'))
    assert isinstance(error, HeaderBadUtf8) and error.code == "FRAME-UTF8"


def test_client_that_disconnects_mid_frame() -> None:
    assert isinstance(frame_error(encode_frame({"c": "publish", "t": "x"}, b"{}")[:-1]), FrameTruncated)


def test_bad_frames_keep_the_good_frames_before_them() -> None:
    good = encode_frame({"c": "publish", "t": "x", "cid": "1"}, b"{}")
    error = frame_error(good + good + prefixed(b"[]"))
    assert [frame.header["cid"] for frame in error.frames] == ["1", "1"]


# --------------------------------------------------------------------------------------
# recoverable: a failure ack that correlates, when one was requested
# --------------------------------------------------------------------------------------


def test_unknown_command() -> None:
    error = command_error({"c": "start_timer", "cid": "7", "a": "processed"})
    assert (error.reason, error.command, error.cid) == (Reason.INVALID_COMMAND, "start_timer", "7")
    assert error.reply() == encode_frame(
        {"c": "ack", "cid": "7", "a": "processed", "status": "failure", "reason": "invalid command"}
    )


def test_unknown_command_without_acks_is_only_logged() -> None:
    error = command_error({"c": "start_timer", "cid": "7"})
    assert error.ack is None and error.reply() is None


def test_missing_required_field() -> None:
    error = command_error({"c": "subscribe", "cid": "3", "a": "processed,completed"})
    assert error.reason is Reason.INVALID_TOPIC
    assert error.reply() == encode_frame(
        {"c": "ack", "cid": "3", "a": "processed", "status": "failure", "reason": "invalid topic", "sub_id": "3"}
    )


def test_missing_command() -> None:
    error = command_error({"cid": "3", "t": "x", "a": "processed"})
    assert error.reason is Reason.INVALID_COMMAND and "no 'c'" in error.message


def test_publish_to_a_regex_topic() -> None:
    error = command_error({"c": "publish", "cid": "4", "t": ".*_ORDERS", "s": 12, "a": "persisted"}, b"{}")
    assert error.reason is Reason.INVALID_TOPIC and "literal" in error.message
    # a publish store waits for persisted acks: the failure comes on one, with its sequence (§7.5)
    assert error.reply() == encode_frame(
        {"c": "ack", "cid": "4", "a": "persisted", "status": "failure", "reason": "invalid topic", "t": ".*_ORDERS", "s": 12}
    )


def test_bad_option() -> None:
    error = command_error({"c": "sow", "cid": "5", "t": "orders", "o": "projection=[COUNT(/id) AS /n]", "a": "completed"})
    assert error.reason is Reason.INVALID_OPTIONS
    assert error.reply() == encode_frame(
        {"c": "ack", "cid": "5", "a": "completed", "status": "failure", "reason": "invalid options", "t": "orders", "query_id": "5"}
    )


def test_bad_regex_topic() -> None:
    error = command_error({"c": "subscribe", "cid": "6", "t": "orders[", "a": "processed"})
    assert error.reason is Reason.BAD_REGEX_TOPIC and error.ack is not None and error.ack.reason == "bad regex topic"


def test_a_regex_topic_nested_too_deeply_is_a_bad_regex_topic() -> None:
    error = command_error({"c": "subscribe", "cid": "7", "t": "(" * 1000 + "a" + ")" * 1000, "a": "processed"})
    assert error.reason is Reason.BAD_REGEX_TOPIC and "nested too deeply" in error.message


def test_bad_header_value_types() -> None:
    error = command_error({"c": "publish", "cid": "8", "t": "x", "s": "first", "a": "processed"})
    assert error.reason is Reason.INVALID_OPTIONS and "'s'" in error.message
    unreadable_cid = command_error({"c": "publish", "cid": [1], "t": "x", "a": "processed"})
    assert unreadable_cid.cid is None and unreadable_cid.ack is not None and unreadable_cid.ack.cid is None


LONG = "é" * 32768  # 32,768 characters, 65,536 bytes of UTF-8: one byte more than the journal stores


@pytest.mark.parametrize(
    ("header", "field", "reason"),
    [
        ({"c": "publish", "t": LONG}, "t", Reason.INVALID_TOPIC),
        ({"c": "publish", "t": "orders", "x": LONG}, "x", Reason.INVALID_OPTIONS),
        ({"c": "delta_publish", "t": "orders", "k": "A" * 65536}, "k", Reason.INVALID_SOW_KEY),
        ({"c": "logon", "client_name": LONG}, "client_name", Reason.INVALID_OPTIONS),
    ],
)
def test_values_longer_than_the_journal_stores_are_refused(header, field, reason) -> None:
    error = command_error({**header, "cid": "9", "a": "processed"}, b'{"id":1}')
    assert error.reason is reason and f"header '{field}' is 65536 bytes of UTF-8" in error.message
    assert error.ack is not None and error.ack.cid == "9"


@pytest.mark.parametrize(("command", "field"), [("subscribe", "sub_id"), ("sow_and_subscribe", "sub_id"),
                                               ("sow", "query_id"), ("delta_subscribe", "sub_id")])
@pytest.mark.parametrize("value", ["a,b", " x", "x "])
def test_ids_unsubscribe_could_not_name_are_refused(command, field, value) -> None:
    error = command_error({"c": command, "cid": "3", "t": "orders", field: value, "a": "processed"})
    assert error.reason is Reason.INVALID_OPTIONS and "could not be unsubscribed" in error.message


def test_values_the_journal_stores_just_fit() -> None:
    (frame,) = decode_frames(encode_frame({"c": "publish", "t": "é" * 32767 + "x", "x": "x" * 65535}, b"{}"))
    command = parse_command(frame)
    assert len(command.topic.encode()) == len(command.correlation_id) == 65535


# --------------------------------------------------------------------------------------
# sans-IO (DESIGN.md): no asyncio, socket or time, no clock reads
# --------------------------------------------------------------------------------------

FORBIDDEN_MODULES = {"asyncio", "socket", "selectors", "time", "pyspark"}
CLOCK_CALLS = {"now", "utcnow", "today", "time", "monotonic", "perf_counter"}


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda path: path.name)
def test_protocol_modules_do_no_io_and_read_no_clock(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not {alias.name.split(".")[0] for alias in node.names} & FORBIDDEN_MODULES
        elif isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] not in FORBIDDEN_MODULES
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            assert node.func.attr not in CLOCK_CALLS, f"{path.name}:{node.lineno} reads the clock"


def test_importing_the_protocol_starts_no_io_machinery() -> None:
    code = "import sys, ampsctl.protocol; print(sorted(m for m in ('asyncio', 'socket', 'pyspark') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
