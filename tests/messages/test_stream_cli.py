"""Stream inputs of ``ampsctl delta merge --stream`` / ``conflate`` (ampsctl.cli.delta_cmd).

* Inputs are read line by line, never whole.
* A large single file is folded by two processes (``_fold_in_two``); whatever the split
  point, the output, the errors and the exit code are those of the one-process fold, also
  when merging is not associative across the split (a scalar then an object), when the second
  part has bad messages, or when the worker dies.

The CLI runs in this process (``ampsctl.cli.app.main``), so the split can be forced on small
files; the worker is a real forked process.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ampsctl.cli import delta_cmd
from ampsctl.cli.app import main

Outcome = tuple[int, bytes, str]


def run(*args: str) -> Outcome:
    """(exit code, stdout bytes, stderr) of one in-process CLI run; stdout has a byte buffer."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):  # type: ignore[type-var]
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code or 0
    out.flush()
    return code, out.buffer.getvalue(), err.getvalue()  # type: ignore[attr-defined]


def line_starts(data: bytes) -> list[int]:
    """Every offset where a line starts, after the first line."""
    return [index + 1 for index, byte in enumerate(data) if byte == ord("\n") and index + 1 < len(data)]


@contextlib.contextmanager
def split_at(offset: int | None):
    """Force the two-process fold to split at ``offset`` (None: one process)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(delta_cmd, "_split_point", lambda sources: offset)
        yield


def both_ways(path: Path, *options: str, key: str = "/id") -> tuple[Outcome, list[Outcome]]:
    """The one-process outcome and the two-process outcome for every split point of ``path``."""
    args = ("delta", "merge", "--stream", "--key", key, *options, str(path))
    with split_at(None):
        expected = run(*args)
    outcomes = []
    for offset in line_starts(path.read_bytes()):
        with split_at(offset):
            outcomes.append(run(*args))
    return expected, outcomes


def jsonl(*docs: Any) -> bytes:
    return b"".join(doc if isinstance(doc, bytes) else orjson.dumps(doc) + b"\n" for doc in docs)


# ----------------------------------------------------------------------- two processes


def test_not_associative_across_the_split(tmp_path: Path) -> None:
    # id 1: an object, then a scalar, then an object (which replaces: no merge with the first);
    # id 2 only after any split; "1" is id 1.
    path = tmp_path / "u.jsonl"
    path.write_bytes(jsonl({"id": 1, "a": {"x": 1}, "n": 0}, {"id": 1, "a": 5}, {"id": 2, "b": [1]}, {"id": "1", "a": {"y": 2}}, {"id": 2, "b": {"c": 1}}, {"id": 1, "n": 1}))
    expected, outcomes = both_ways(path)
    assert expected == (0, b'{"id":1,"a":{"y":2},"n":1}\n{"id":2,"b":{"c":1}}\n', "")
    assert outcomes == [expected] * 5


def test_records_both_parts_have_are_folded_here_in_line_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "u.jsonl"
    path.write_bytes(jsonl({"id": 1, "a": 1}, {"id": 2, "a": 1}, {"id": 3, "a": 1}, {"id": 2, "a": {"x": 1}}, {"id": 4}, {"id": 2, "a": {"y": 1}}, {"id": 1, "b": 2}))
    dropped: list[list[int]] = []
    without = delta_cmd._without
    monkeypatch.setattr(delta_cmd, "_without", lambda data, ends, drop: dropped.append(drop) or without(data, ends, drop))
    with split_at(line_starts(path.read_bytes())[2]):  # after id 3
        outcome = run("delta", "merge", "--stream", "--key", "/id", str(path))
    assert dropped == [[0, 2]]  # ids 2 and 1 of the worker's part: shared, so folded here
    assert outcome == (0, b'{"id":1,"a":1,"b":2}\n{"id":2,"a":{"x":1,"y":1}}\n{"id":3,"a":1}\n{"id":4}\n', "")


def test_fix_streams_split_too(tmp_path: Path) -> None:
    path = tmp_path / "u.fix"
    path.write_bytes(b"55=IBM\x0144=1\x01\n55=MSFT\x0144=7\x01\n55=IBM\x0144=2\x0138=100\x01\n55=MSFT\x0138=5\x01\n")
    expected, outcomes = both_ways(path, key="/55")
    assert expected == (0, b"55=IBM\x0144=2\x0138=100\x01\n55=MSFT\x0144=7\x0138=5\x01\n", "")
    assert outcomes == [expected] * 3


@pytest.mark.parametrize("keep_going", [False, True])
def test_bad_messages_in_either_part(tmp_path: Path, keep_going: bool) -> None:
    # The worker gives up at its first bad message and this process reads its part: the same
    # errors, line numbers and counts as one process.
    path = tmp_path / "u.jsonl"
    path.write_bytes(jsonl({"id": 1, "a": 1}, b"{bad\n", {"id": 2}, b"\n", {"a": 3}, b"[1]\r\n", {"id": 1, "b": 2}, {"id": [1]}, {"id": 3}))
    expected, outcomes = both_ways(path, *(["--keep-going"] if keep_going else []))
    assert expected[0] == (1 if keep_going else 3)
    assert ":2: invalid JSON message" in expected[2]
    assert outcomes == [expected] * len(outcomes)


def test_a_dead_worker_is_replaced_by_reading_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "u.jsonl"
    path.write_bytes(jsonl({"id": 1, "a": {"x": 1}}, {"id": 1, "a": 2}, {"id": 1, "a": {"y": 1}}, {"id": 2}))
    monkeypatch.setattr(delta_cmd, "_fold_worker", lambda *args: os._exit(9))
    expected, outcomes = both_ways(path)
    assert expected[1] == b'{"id":1,"a":{"y":1}}\n{"id":2}\n'
    assert outcomes == [expected] * 3


def test_no_second_process_folds_it_all_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing.process

    def cannot_fork(self: Any) -> None:
        raise OSError("Resource temporarily unavailable")

    path = tmp_path / "u.jsonl"
    path.write_bytes(jsonl({"id": 1, "a": {"x": 1}}, {"id": 1, "a": 2}, {"id": 1, "a": {"y": 1}}, {"id": 2}))
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", cannot_fork)
    expected, outcomes = both_ways(path)
    assert expected[1] == b'{"id":1,"a":{"y":1}}\n{"id":2}\n'
    assert outcomes == [expected] * 3


def test_split_point_only_for_one_large_regular_file_and_two_cpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "u.jsonl"
    path.write_bytes(b"\n" + jsonl(*({"id": n} for n in range(100))))
    monkeypatch.setattr(delta_cmd, "_PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    _, sources, opened = delta_cmd._open_streams([str(path)], None)
    with opened:
        split = delta_cmd._split_point(sources)
        assert split is not None and split in line_starts(path.read_bytes())
        assert split >= path.stat().st_size * delta_cmd._FIRST_PART
        assert sources[0].stream.tell() == len(b"\n" + jsonl({"id": 0}))  # pread: the read position stays
        assert delta_cmd._split_point(sources * 2) is None
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
        assert delta_cmd._split_point(sources) is None
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(delta_cmd, "_PARALLEL_MIN_BYTES", path.stat().st_size + 1)
    _, sources, opened = delta_cmd._open_streams([str(path)], None)
    with opened:
        assert delta_cmd._split_point(sources) is None


def test_all_prints_every_record_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "u.jsonl"
    path.write_bytes(jsonl({"id": 1, "a": 1}, {"id": 1, "b": 1}))
    monkeypatch.setattr(delta_cmd, "_PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(delta_cmd, "_fold_in_two", lambda *args: pytest.fail("--all must not split"))
    assert run("delta", "merge", "--stream", "--all", "--key", "/id", str(path)) == (0, b'{"id":1,"a":1}\n{"id":1,"a":1,"b":1}\n', "")


scalars = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["", "x", "1"]))
fields = st.dictionaries(st.sampled_from(["a", "b"]), st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.sampled_from(["x", "y"]), scalars, max_size=2)), max_size=2)
messages = st.builds(lambda key, rest: {"id": key, **rest}, st.sampled_from([1, 2, "1", 3]), fields)
lines = st.one_of(messages.map(lambda doc: orjson.dumps(doc) + b"\n"), st.sampled_from([b"\n", b" \r\n", b"{bad\n", b'{"a":1}\n', b"[2]\n"]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(lines, min_size=2, max_size=7), st.booleans())
def test_any_split_gives_the_one_process_result(tmp_path: Path, data: list[bytes], keep_going: bool) -> None:
    path = tmp_path / "u.jsonl"
    path.write_bytes(b"".join(data))
    expected, outcomes = both_ways(path, *(["--keep-going"] if keep_going else []))
    assert outcomes == [expected] * len(outcomes)


# ----------------------------------------------------------------------- line by line


class LinesOnly(io.BytesIO):
    """A stdin that fails if read whole."""

    def read(self, size: int | None = -1) -> bytes:
        raise AssertionError("the stream input was read whole")


def test_stdin_is_read_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"\r\n  \n" + jsonl({"id": 1, "a": 1}, {"id": 2}) + b'{"id":1,"b":2}\r\n\n{"id":2,"c":3}'  # no final newline
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(LinesOnly(data)))
    assert run("delta", "merge", "--stream", "--key", "/id", "-") == (0, b'{"id":1,"a":1,"b":2}\n{"id":2,"c":3}\n', "")


def test_line_numbers_count_blank_and_crlf_lines(tmp_path: Path) -> None:
    path = tmp_path / "u.jsonl"
    path.write_bytes(b"\r\n\n" + b'{"id":1}\r\n' + b"   \n" + b'{"a":2}')
    code, out, err = run("delta", "merge", "--stream", "--key", "/id", "--keep-going", str(path))
    assert (code, out) == (1, b'{"id":1}\n')
    assert f"{path}:5: key field /id is missing" in err
    assert "1 of 2 messages skipped" in err
