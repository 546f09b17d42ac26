"""Bad option values of the offline and client commands: a usage error (exit 2), never a crash or a hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import run_ampsctl

URI = "tcp://127.0.0.1:1/amps/json"  # nothing listens: a value that passed the checks would fail to connect (exit 4)


@pytest.mark.parametrize(
    "args",
    [
        ("client", "publish", URI, "-t", "x", "--data", "{}", "--connect-timeout", "nan"),
        ("client", "ping", URI, "--connect-timeout", "NaN"),
        ("client", "subscribe", URI, "-t", "x", "--timeout", "nan"),
        ("journal", "replay", "j", "--to", URI, "--connect-timeout", "nan"),
    ],
)
def test_nan_seconds_are_a_usage_error(tmp_path: Path, args: tuple[str, ...]) -> None:
    # nan passed click's range check (no comparison with nan is true): "no answer within nan s".
    result = run_ampsctl(*args, cwd=tmp_path, timeout=30)
    assert result.code == 2, result.output
    assert "nan is not a number of seconds" in result.stderr and "Traceback" not in result.stderr



def test_a_huge_max_message_size_is_no_limit_not_an_overflow(tmp_path: Path) -> None:
    (tmp_path / "m.jsonl").write_text('{"a":1}\n')
    for size in ("99999999999999999999", "8796093022208"):  # beyond what readline() takes, in bytes
        result = run_ampsctl("filter", "test", "/a = 1", "--data", "@m.jsonl", "--max-message-size", size, cwd=tmp_path)
        assert (result.code, result.stdout, result.stderr) == (0, "1: true\n", "")


def test_an_expiration_beyond_64_bits_is_a_usage_error(tmp_path: Path) -> None:
    # It reached the frame encoder: internal error (TypeError: Integer exceeds 64-bit range).
    result = run_ampsctl("client", "publish", URI, "-t", "x", "--data", "{}", "--expiration", "18446744073709551616", cwd=tmp_path)
    assert result.code == 2 and "--expiration" in result.stderr and "Traceback" not in result.stderr
    result = run_ampsctl("client", "publish", URI, "-t", "x", "--data", "{}", "--expiration", "18446744073709551615", cwd=tmp_path)
    assert result.code == 4  # in range: the broker decides (nothing listens here)


def test_a_delta_that_cannot_be_applied_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "base.xml").write_text("<O><a>1</a></O>")
    (tmp_path / "d1.xml").write_text("<O><a>2</a></O>")
    (tmp_path / "d2.xml").write_text("<P><a>3</a></P>")
    result = run_ampsctl("delta", "merge", "base.xml", "d1.xml", "d2.xml", cwd=tmp_path)
    assert result.code == 3 and result.stdout == ""
    assert result.stderr.startswith("ampsctl: error: d2.xml: XML delta root <P> does not match"), result.stderr


def test_sow_query_key_without_a_key_is_a_usage_error(tmp_path: Path) -> None:
    # --key "," queried for no keys at all: "0 records (sow keys)", exit 0, as if none matched.
    for value in (",", " ", ", ,"):
        result = run_ampsctl("sow", "query", "any.sow", "--key", value, cwd=tmp_path)
        assert result.code == 2 and "--key needs at least one SOW key" in result.stderr, result.output


def test_client_sow_delete_keys_without_a_key_says_so(tmp_path: Path) -> None:
    for value in ("", " , "):  # was "give exactly one of --filter, --keys and --data": but --keys was given
        result = run_ampsctl("client", "sow-delete", URI, "-t", "x", "--keys", value, cwd=tmp_path)
        assert result.code == 2 and "--keys needs at least one SowKey" in result.stderr, result.output


def test_a_byte_order_mark_before_json_lines_is_skipped(tmp_path: Path) -> None:
    # Windows tools start UTF-8 files with a BOM; orjson refuses one, so every JSONL reader
    # said "not valid JSON: UTF-8 byte order mark (BOM) is not supported" (exit 3).
    bom = b"\xef\xbb\xbf"
    (tmp_path / "in.jsonl").write_bytes(bom + b'{"command":"publish","topic":"orders","data":{"id":1}}\n')
    (tmp_path / "events.jsonl").write_bytes(bom + b'{"event":"subscribe","connection":"p1","client":"a","topic":"ctl","sub_id":"1"}\n'
                                            b'{"event":"subscribe","connection":"s1","client":"b","topic":"/t/A","sub_id":"1"}\n')
    (tmp_path / "messages.jsonl").write_bytes(bom + b'{"id":1}\n')
    imported = run_ampsctl("journal", "import", "in.jsonl", "--out", "journal", cwd=tmp_path)
    assert imported.code == 0, imported.stderr
    simulated = run_ampsctl("affinity", "simulate", "--control-topic", "ctl", "--subscription-topic", "^/t/",
                            "--events", "events.jsonl", "-f", "jsonl", "--no-summary", cwd=tmp_path)
    assert simulated.code == 0 and '"AMPS_AFFINITY_ACTION":"assign"' in simulated.stdout, simulated.stderr
    tested = run_ampsctl("filter", "test", "/id = 1", "--data", "@messages.jsonl", cwd=tmp_path)
    assert (tested.code, tested.stdout) == (0, "1: true\n"), tested.stderr


def test_an_error_quoting_user_input_escapes_what_would_drive_the_terminal(tmp_path: Path) -> None:
    # Error messages quote paths, topics and config values as given: a raw ESC (or a bidi
    # override) in one reached the terminal from stderr.
    result = run_ampsctl("journal", "dump", "x\x1b[31m\u202e", cwd=tmp_path)
    assert result.code == 3
    assert "\x1b" not in result.stderr and "\u202e" not in result.stderr
    assert "journal 'x\\x1b[31m\\u202e' does not exist" in result.stderr
    assert "\n  hint: " in result.stderr  # the message's own line breaks stay


@pytest.mark.parametrize("args", [
    ("journal", "import", "-", "--out", "journal"),
    ("affinity", "simulate", "--control-topic", "c", "--subscription-topic", "^/t/", "--events", "-"),
    ("delta", "merge", "-", "delta.json"),
    ("client", "publish", "tcp://127.0.0.1:9/amps/json", "-t", "orders", "--file", "-"),
])
def test_a_closed_standard_input_is_an_input_error(tmp_path: Path, args: tuple[str, ...]) -> None:
    # Started with standard input closed (<&-), Python leaves sys.stdin None: reading "-" was
    # an internal error ('NoneType' object has no attribute 'buffer'), exit 5.
    import os
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, stdin=None, preexec_fn=lambda: os.close(0))
    assert result.returncode == 3, result.stderr
    assert "standard input is closed" in result.stderr and "internal error" not in result.stderr


def test_a_sow_pattern_and_a_topic_filter_read_a_regex_the_same_way(tmp_path: Path) -> None:
    # SOW Patterns were compiled with the regex package's defaults (Unicode \w) and topic
    # filters and subscriptions with LIKE's PCRE-like ASCII mode: ^\w+$ stored "prix_é" in the
    # Pattern topic while `journal dump --topic` (and a broker subscription) did not match it.
    import json

    (tmp_path / "amps.xml").write_text(
        "<AMPSConfig><Name>x</Name><SOW><Topic><Name>words</Name><Pattern>^\\w+$</Pattern><MessageType>json</MessageType>"
        "<Key>/id</Key><FileName>%n.sow</FileName></Topic></SOW></AMPSConfig>")
    (tmp_path / "in.jsonl").write_text('{"topic":"prix","data":{"id":1}}\n{"topic":"prix_\\u00e9","data":{"id":2}}\n')
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "journal", cwd=tmp_path).code == 0
    dumped = run_ampsctl("journal", "dump", "journal", "--topic", "^\\w+$", "--format", "jsonl", cwd=tmp_path)
    assert [json.loads(line)["topic"] for line in dumped.stdout.splitlines()] == ["prix"]
    assert run_ampsctl("journal", "compact", "journal", "--config", "amps.xml", "--out", "out", cwd=tmp_path).code == 0
    stored = run_ampsctl("sow", "query", "out/words.json.sow", "--format", "jsonl", cwd=tmp_path)
    assert [json.loads(line)["topic"] for line in stored.stdout.splitlines()] == ["prix"]
