"""Bad option and input values found by fuzzing, through the real entry point (a subprocess).

* A timestamp whose UTC offset moves it outside the years 1 to 9999, or whose offset is not
  within ±23:59, is "invalid timestamp" (exit 2 on an option, 3 with FILE:LINE in an import),
  never an internal error (exit 5) -- on every option and field that takes a timestamp.
* ``journal import``: a record without a timestamp whose computed one (previous + --step-us)
  leaves the 64-bit range names its file and line, with a hint about the input.
* ``journal compact --as-of garbage`` is a usage error (exit 2) naming --as-of, like --now.
* ``journal dump|replay --topic`` with an invalid regex names --topic (not LIKE).
* ``filter test`` refuses a message that is not a JSON object (exit 3), like delta merge.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import run_ampsctl

SAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "samples" / "amps.xml"
EARLY = "0001-01-01T00:00:00+01:00"  # 0000-12-31T23:00:00Z
LATE = "9999-12-31T23:30:00-01:00"  # 10000-01-01T00:30:00Z


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-record journal (journal/) and its SOW files (sow/), made with the CLI."""
    base = tmp_path_factory.mktemp("timestamps")
    (base / "in.jsonl").write_text('{"topic":"orders","data":{"id":1}}\n', encoding="utf-8")
    assert run_ampsctl("journal", "import", "in.jsonl", "-o", "journal", cwd=base).code == 0
    assert run_ampsctl("journal", "compact", "journal", "-c", SAMPLE_CONFIG, "-o", "sow", cwd=base).code == 0
    return base


def _assert_usage(result, option: str, what: str) -> None:  # noqa: ANN001
    assert result.code == 2, result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert f"ampsctl: error: {option}: invalid timestamp" in result.stderr, result.stderr
    assert what in result.stderr, result.stderr


@pytest.mark.parametrize(("option", "value"), [("--from", EARLY), ("--to", EARLY), ("--from", LATE), ("--to", LATE)])
def test_dump_refuses_a_timestamp_out_of_range(built: Path, option: str, value: str) -> None:
    _assert_usage(run_ampsctl("journal", "dump", "journal", option, value, cwd=built), option, "out of range")


@pytest.mark.parametrize("value", ["2026-01-01T00:00:00+99:99", "2026-01-01T00:00:00+25:00", "2026-01-01T00:00:00-24:00",
                                   "2026-01-01T00:00:00+00:60", "2026-01-01T00:00:00+0160"])
def test_dump_refuses_an_offset_beyond_23_59(built: Path, value: str) -> None:
    _assert_usage(run_ampsctl("journal", "dump", "journal", "--from", value, cwd=built), "--from", "UTC offset")


def test_an_offset_of_23_59_is_accepted(built: Path) -> None:
    # 2026-01-01T23:59:00+23:59 is 2026-01-01T00:00:00Z, the record's time: the record is in.
    result = run_ampsctl("journal", "dump", "journal", "-f", "jsonl", "--from", "2026-01-01T23:59:00+23:59",
                         "--to", "2025-12-31T00:01:00-23:59", cwd=built)
    assert result.code == 0, result.output
    assert '"sequence":1' in result.stdout


def test_sow_query_now_refuses_a_timestamp_out_of_range(built: Path) -> None:
    result = run_ampsctl("sow", "query", "sow/orders.json.sow", "--now", EARLY, cwd=built)
    _assert_usage(result, "--now", "out of range")


@pytest.mark.parametrize("option", ["--as-of", "--now"])
def test_compact_refuses_a_timestamp_out_of_range(built: Path, option: str) -> None:
    result = run_ampsctl("journal", "compact", "journal", "-c", SAMPLE_CONFIG, "-o", f"out{option}", option, LATE, cwd=built)
    _assert_usage(result, option, "out of range")


def test_import_start_refuses_a_timestamp_out_of_range(built: Path) -> None:
    result = run_ampsctl("journal", "import", "in.jsonl", "-o", "start-out", "--start", EARLY, cwd=built)
    _assert_usage(result, "--start", "out of range")
    assert not (built / "start-out").exists()


@pytest.mark.parametrize("value", [EARLY, LATE, "2026-01-01T00:00:00+99:99"])
def test_import_names_the_line_of_a_timestamp_out_of_range(tmp_path: Path, value: str) -> None:
    (tmp_path / "ts.jsonl").write_text('{"topic":"orders","data":{"id":1}}\n'
                                       f'{{"topic":"orders","data":{{"id":2}},"timestamp":"{value}"}}\n', encoding="utf-8")
    result = run_ampsctl("journal", "import", "ts.jsonl", "-o", "j", cwd=tmp_path)
    assert result.code == 3, result.output
    assert "internal error" not in result.output
    assert f"ampsctl: error: ts.jsonl:2: invalid timestamp '{value}'" in result.stderr, result.stderr
    assert not (tmp_path / "j").exists()


def test_import_names_the_line_whose_computed_timestamp_overflows(tmp_path: Path) -> None:
    (tmp_path / "big.jsonl").write_text('{"topic":"orders","data":{"id":1},"timestamp":9223372036854775807}\n'
                                        '\n{"topic":"orders","data":{"id":2}}\n', encoding="utf-8")
    result = run_ampsctl("journal", "import", "big.jsonl", "-o", "j", cwd=tmp_path)
    assert result.code == 3, result.output
    assert "ampsctl: error: big.jsonl:3: this record has no timestamp" in result.stderr, result.stderr
    assert "JournalWriter" not in result.output
    assert "hint: give this record a 'timestamp'" in result.stderr and "--step-us" in result.stderr
    assert not (tmp_path / "j").exists()


def test_import_with_step_zero_stays_in_range(tmp_path: Path) -> None:
    (tmp_path / "max.jsonl").write_text('{"topic":"orders","data":{"id":1},"timestamp":9223372036854775807}\n'
                                        '{"topic":"orders","data":{"id":2}}\n', encoding="utf-8")
    result = run_ampsctl("journal", "import", "max.jsonl", "-o", "j", "--step-us", "0", cwd=tmp_path)
    assert result.code == 0, result.output


def test_compact_as_of_garbage_is_a_usage_error_naming_the_option(built: Path) -> None:
    result = run_ampsctl("journal", "compact", "journal", "-c", SAMPLE_CONFIG, "-o", "garbage-out", "--as-of", "garbage", cwd=built)
    assert result.code == 2, result.output
    assert "ampsctl: error: --as-of: 'garbage' is neither a bookmark nor a timestamp" in result.stderr, result.stderr
    assert not (built / "garbage-out").exists()


def test_compact_as_of_unknown_bookmark_is_still_invalid_input(built: Path) -> None:
    result = run_ampsctl("journal", "compact", "journal", "-c", SAMPLE_CONFIG, "-o", "bm-out", "--as-of", "123|99|", cwd=built)
    assert result.code == 3, result.output
    assert "not found" in result.stderr


@pytest.mark.parametrize("command", [("dump",), ("replay", "--to", "tcp://127.0.0.1:9/amps/json")])
def test_an_invalid_topic_regex_names_topic(built: Path, command: tuple[str, ...]) -> None:
    result = run_ampsctl("journal", command[0], "journal", *command[1:], "--topic", "[", cwd=built)
    assert result.code == 3, result.output
    assert "ampsctl: error: --topic: invalid regular expression '['" in result.stderr, result.stderr
    assert "LIKE" not in result.output


@pytest.mark.parametrize(("message", "kind"), [("[1]", "list"), ('"text"', "str"), ("42", "int"), ("null", "null")])
def test_filter_test_refuses_a_message_that_is_not_an_object(tmp_path: Path, message: str, kind: str) -> None:
    result = run_ampsctl("filter", "test", "-d", message, "1 = 1", cwd=tmp_path)
    assert result.code == 3, result.output
    assert result.stdout == ""
    assert f"ampsctl: error: --data: JSON message is {kind}, not an object" in result.stderr, result.stderr


def test_filter_test_names_the_line_of_a_message_that_is_not_an_object(tmp_path: Path) -> None:
    (tmp_path / "m.jsonl").write_text('{"a": 1}\n[1]\n{"a": 2}\n', encoding="utf-8")
    result = run_ampsctl("filter", "test", "-d", "@m.jsonl", "/a > 0", cwd=tmp_path)
    assert result.code == 3, result.output
    assert result.stdout == "1: true\n3: true\n"
    assert "ampsctl: error: m.jsonl:2: JSON message is list, not an object" in result.stderr, result.stderr
