"""Event-file errors of ``ampsctl affinity simulate`` say what is wrong in the words of the file.

* A byte that is not UTF-8 was "str is not valid UTF-8: surrogates not allowed" (orjson's words
  for any such byte); it is now the byte and its offset (see also the error-binary-garbage golden).
* An integer sub_id is allowed, yet a float one was told "must be a non-empty string".
* "in a unsubscribe event" is "in an unsubscribe event".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import run_ampsctl

FLAGS = ("affinity", "simulate", "--control-topic", "ctl", "--subscription-topic", "^/s/", "--format", "jsonl")


@pytest.mark.parametrize(("line", "message"), [
    (b'{"event":"disconnect","connection":"caf\xe9"}', "not valid UTF-8: byte 0xe9 at byte offset 39"),
    (b'{"event":"unsubscribe","connection":"c","sub_id":1.5}',
     "sub_id must be a non-empty string or an integer, got 1.5 in an unsubscribe event"),
    (b'{"event":"unsubscribe","connection":"c","sub_id":"1","topic":"t"}', "unknown key 'topic' in an unsubscribe event"),
])
def test_event_errors_name_the_problem(tmp_path: Path, line: bytes, message: str) -> None:
    (tmp_path / "events.jsonl").write_bytes(b'{"event":"disconnect","connection":"c0"}\n' + line + b"\n")
    result = run_ampsctl(*FLAGS, "--events", "events.jsonl", cwd=tmp_path)
    assert (result.code, result.stdout) == (3, "")
    assert result.stderr.splitlines()[0] == f"ampsctl: error: events.jsonl:2: {message}"
