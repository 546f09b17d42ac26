"""The message-type registry: detection by extension and content, and codec lookup."""

from __future__ import annotations

import pytest

from ampsctl.errors import InputError, UsageError
from ampsctl.messages import types
from ampsctl.messages.codec import Codec


@pytest.mark.parametrize(
    ("path", "raw", "expected"),
    [
        ("a.json", b"", "json"),
        ("dir.x/a.JSONL", b"<x/>", "json"),  # the extension wins over content
        ("a.xml", b"{}", "xml"),
        ("a.fix", b"", "fix"),
        ("a.nvfix", b"", "nvfix"),
        (None, b'  {"id": 1}', "json"),
        ("-", b"\n[1]", "json"),
        ("msg.txt", b"\xef\xbb\xbf<Order/>", "xml"),
        (None, b"35=D\x0155=MSFT\x01", "fix"),
        (None, b"Symbol=MSFT\x01Qty=1\x01", "nvfix"),
        ("dir.fix/noext", b"Symbol=MSFT\x01", "nvfix"),  # a dot in a directory is not an extension
    ],
)
def test_detect(path: str | None, raw: bytes, expected: str) -> None:
    assert types.detect(path, raw) == expected


@pytest.mark.parametrize("raw", [b"", b"   \n", b"hello world", b"\x00\x01\x02"])
def test_detect_unclear_is_a_clear_error(raw: bytes) -> None:
    with pytest.raises(InputError, match="cannot tell the message type") as caught:
        types.detect("data.bin", raw)
    assert "--type" in (caught.value.hint or "")


def test_json_codec_is_registered() -> None:
    codec = types.codec("JSON ")
    assert isinstance(codec, Codec) and codec.name == "json"
    assert types.codec("json") is codec
    assert "json" in types.available()


@pytest.mark.parametrize("name", ["yaml", "", "binary", "bson"])
def test_unknown_or_unsupported_types(name: str) -> None:
    with pytest.raises(UsageError) as caught:
        types.codec(name)
    assert "json" in (caught.value.hint or "")


@pytest.mark.parametrize("name", ["xml", "fix", "nvfix"])
def test_other_types_load_or_say_not_available(name: str) -> None:
    try:
        codec = types.codec(name)
    except UsageError as exc:
        assert "not available yet" in exc.message
    else:
        assert codec.name == name
