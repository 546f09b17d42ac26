"""``ampsctl client publish`` input: --data or JSON Lines, checked before anything is sent."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ampsctl.client.outgoing import read_messages
from ampsctl.errors import InputError, UsageError


def test_inline_message_is_sent_as_written() -> None:
    assert read_messages(data='{"id": 1,  "qty":5}', file=None) == [b'{"id": 1,  "qty":5}']


def test_json_lines_skip_blank_lines_and_keep_bytes(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"id":1}\n\n   \n{"id": 2}\r\n{"s":"\xc3\xa9"}')
    assert read_messages(data=None, file=str(path)) == [b'{"id":1}', b'{"id": 2}', b'{"s":"\xc3\xa9"}']


def test_stdin_is_dash() -> None:
    assert read_messages(data=None, file="-", stdin=io.BytesIO(b'{"a":1}\n{"b":2}\n')) == [b'{"a":1}', b'{"b":2}']


@pytest.mark.parametrize(("text", "line", "why"), [
    (b'{"id":1}\n{"id":\n', 2, "not JSON"),
    (b'{"id":1}\n\n[1,2]\n', 3, "must be a JSON object, not list"),
    (b'"text"\n', 1, "must be a JSON object, not str"),
])
def test_a_bad_line_is_named(tmp_path: Path, text: bytes, line: int, why: str) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(text)
    with pytest.raises(InputError, match=why) as error:
        read_messages(data=None, file=str(path))
    assert str(error.value.location) == f"{path}:{line}"


def test_empty_and_missing_inputs(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(InputError, match="no messages in"):
        read_messages(data=None, file=str(tmp_path / "empty.jsonl"))
    with pytest.raises(InputError, match="cannot read"):
        read_messages(data=None, file=str(tmp_path / "missing.jsonl"))
    with pytest.raises(InputError, match="not JSON") as error:
        read_messages(data="{", file=None)
    assert str(error.value.location) == "--data"


def test_exactly_one_source() -> None:
    with pytest.raises(UsageError, match="exactly one of --data"):
        read_messages(data="{}", file="-")
    with pytest.raises(UsageError, match="exactly one of --data"):
        read_messages(data=None, file=None)
