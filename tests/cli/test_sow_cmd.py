"""``ampsctl sow query|dump|stats``: golden-file tests on SOW files made by the real commands.

The inputs are built once per module the way a user would: ``ampsctl journal import`` writes a
journal from ``sow_input.jsonl`` and ``ampsctl journal compact`` turns it into one SOW file per
topic of ``SOW_CONFIG``. Each case copies those files into its own working directory, runs
``python -m ampsctl sow ...`` and compares command line, exit code, stdout and stderr with
``tests/cli/golden/sow/<case>.txt``. File sizes (``N bytes``) are masked: they depend on the
SQLite library, not on ampsctl.

To accept new output after an intended change::

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/cli/test_sow_cmd.py

then review the diff of tests/cli/golden/sow/.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import GoldenCase, check_golden, orphan_goldens, run_golden

GOLDEN = Path(__file__).resolve().parent / "golden" / "sow"

SOW_CONFIG = b"""<AMPSConfig>
  <Name>sow-demo</Name>
  <SOW>
    <Topic>
      <Name>orders</Name><MessageType>json</MessageType><FileName>sow/%n.sow</FileName>
      <Key>/id</Key><Expiration>enabled</Expiration>
      <HashIndex><Key>/region</Key></HashIndex><Index>/qty</Index>
    </Topic>
    <Topic>
      <Name>trades</Name><MessageType>fix</MessageType><Durability>transient</Durability><Key>/55</Key>
    </Topic>
    <Topic>
      <Name>prices</Name><Pattern>^prices\\.</Pattern><MessageType>json</MessageType>
      <FileName>sow/%n.sow</FileName><Key>/sym</Key>
    </Topic>
    <Topic>
      <Name>catalog</Name><MessageType>json</MessageType><FileName>sow/%n.sow</FileName><Key>/sku</Key>
      <History><Window>1d</Window><Granularity>0s</Granularity></History>
    </Topic>
  </SOW>
</AMPSConfig>
"""

SOW_INPUT = b"""\
{"command":"publish","topic":"orders","data":{"id":1,"region":"EMEA","qty":100,"customer":"Patrick"}}
{"command":"publish","topic":"orders","data":{"id":2,"region":"APAC","qty":250},"expiration":86400}
{"command":"publish","topic":"orders","data":{"id":3,"region":"EMEA","qty":"75"}}
{"command":"publish","topic":"orders","data":{"id":4,"region":"AMER","qty":180,"tags":["rush","gift"]}}
{"command":"delta_publish","topic":"orders","data":{"id":1,"qty":150,"status":"open"}}
{"command":"publish","topic":"orders","data":{"id":5,"region":"EMEA","qty":5}}
{"command":"sow_delete","topic":"orders","filter":"/qty < 10"}
{"command":"publish","topic":"trades","message_type":"fix","payload":"55=IBM\\u000144=10.5\\u000138=100\\u0001"}
{"command":"publish","topic":"trades","message_type":"fix","payload":"55=MSFT\\u000144=300\\u000138=5\\u0001"}
{"command":"publish","topic":"prices.us","data":{"sym":"IBM","px":101.5}}
{"command":"publish","topic":"prices.eu","data":{"sym":"SAP","px":99}}
{"command":"publish","topic":"prices.us","data":{"sym":"MSFT","px":420}}
{"command":"publish","topic":"catalog","data":{"sku":"A1","price":10},"timestamp":"2026-01-01T10:00:00Z"}
{"command":"publish","topic":"catalog","data":{"sku":"B2","price":7},"timestamp":"2026-01-01T10:01:00Z"}
{"command":"publish","topic":"catalog","data":{"sku":"A1","price":12},"timestamp":"2026-01-01T10:05:00Z"}
{"command":"sow_delete","topic":"catalog","keys":["__B2__"],"timestamp":"2026-01-01T10:10:00Z"}
"""

ORDERS, TRADES, PRICES, CATALOG = "orders.json.sow", "trades.fix.sow", "prices.json.sow", "catalog.json.sow"
NOT_SOW = b"id,region\n1,EMEA\n"


def _ampsctl(*args: str, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=cwd, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SOW files from `journal import` + `journal compact`, plus damaged copies for the error cases."""
    from ampsctl.messages.keys import generate_key

    base = tmp_path_factory.mktemp("sow-inputs")
    (base / "sow-demo.xml").write_bytes(SOW_CONFIG)
    (base / "sow_input.jsonl").write_bytes(SOW_INPUT.replace(b"__B2__", generate_key("catalog", ("B2",)).encode()))
    _ampsctl("journal", "import", "sow_input.jsonl", "--out", "journal", cwd=base)
    _ampsctl("journal", "compact", "journal", "--config", "sow-demo.xml", "--out", "out", cwd=base)
    out = base / "out"
    damaged = bytearray((out / ORDERS).read_bytes())
    damaged[damaged.index(b'"customer":"Patrick"') + 14] ^= 0x01
    (out / "damaged.sow").write_bytes(bytes(damaged))
    (out / "truncated.sow").write_bytes((out / ORDERS).read_bytes()[:5000])
    shutil.copy(out / ORDERS, out / "future.sow")
    with sqlite3.connect(out / "future.sow") as connection:
        connection.execute("PRAGMA user_version = 3")
    (out / "orders.csv").write_bytes(NOT_SOW)
    return out


KEY_2 = "14970099939253199039"  # generate_key("orders", (2,))
BAD_PATTERN = "REGEXP_MATCH(/{0}, CONCAT('(', /{0})) = 'x'"  # '(EMEA': an invalid pattern, found per record

Case = GoldenCase
CASES = [
    # ---- query
    Case("query-table", ("query", ORDERS)),
    Case("query-hash-index-json", ("query", ORDERS, "--filter", "/region = 'EMEA'", "--format", "json")),
    Case("query-key-index-jsonl", ("query", ORDERS, "--filter", "/id IN (2, 4)", "--format", "jsonl")),
    Case("query-memo-prefilter-csv", ("query", ORDERS, "--filter", "/qty > 90", "--select", "/id,/qty,/tags", "--format", "csv")),
    Case("query-order-top", ("query", ORDERS, "--order-by", "/qty DESC", "--top-n", "2", "--select", "/id,/qty")),
    Case("query-order-text", ("query", ORDERS, "--order-by", "/qty TEXT", "--format", "csv", "--select", "/qty")),
    Case("query-scan-no-match", ("query", ORDERS, "--filter", "/customer = 'nobody'")),
    Case("query-sow-keys", ("query", ORDERS, "--key", KEY_2 + ",123", "--format", "jsonl")),
    Case("query-now-hides-expired", ("query", ORDERS, "--now", "2026-01-02T01:00:00Z", "--select", "/id")),
    Case("query-fix", ("query", TRADES, "--filter", "/44 > 100")),
    Case("query-fix-json", ("query", TRADES, "--format", "json", "--order-by", "/55")),
    Case("query-pattern-topic", ("query", PRICES, "--topic", "us$", "--order-by", "/px")),
    Case("query-pattern-all-csv", ("query", PRICES, "--format", "csv")),
    Case("query-as-of", ("query", CATALOG, "--as-of", "20260101T100200Z", "--format", "jsonl")),
    Case("query-as-of-after-delete", ("query", CATALOG, "--as-of", "2026-01-01T10:30:00Z")),
    Case("query-error-as-of-no-history", ("query", ORDERS, "--as-of", "2026-01-01T10:30:00Z")),
    Case("query-error-bad-filter", ("query", ORDERS, "--filter", "/qty >> 5")),
    Case("query-error-aggregate", ("query", ORDERS, "--filter", "/qty > 1 AND COUNT(/id) > 1")),  # with its column
    # An evaluation error in one record (a pattern computed from its fields) names that record.
    Case("query-error-evaluation-scan", ("query", ORDERS, "--filter", BAD_PATTERN.format("region"))),
    Case("query-error-evaluation-json-prefilter", ("query", ORDERS, "--filter", "/id > 1 AND " + BAD_PATTERN.format("region"))),
    Case("query-error-evaluation-hash-index", ("query", ORDERS, "--filter", "/region = 'APAC' AND " + BAD_PATTERN.format("region"))),
    Case("query-error-evaluation-pattern-topic", ("query", PRICES, "--filter", BAD_PATTERN.format("sym"))),
    Case("query-error-evaluation-as-of", ("query", CATALOG, "--as-of", "2026-01-01T10:30:00Z", "--filter", BAD_PATTERN.format("sku"))),
    Case("query-error-bad-order-by", ("query", ORDERS, "--order-by", "/qty SIDEWAYS")),
    Case("query-error-order-by-no-slash", ("query", ORDERS, "--order-by", "qty")),  # not "<filter>:1:1"
    Case("query-error-bad-select", ("query", ORDERS, "--select", "qty")),
    Case("query-error-empty-select", ("query", ORDERS, "--select", ",")),
    Case("query-error-bad-time", ("query", ORDERS, "--now", "tomorrow")),
    Case("query-error-not-a-sow-file", ("query", "orders.csv")),
    Case("query-error-missing-file", ("query", "nope.sow")),
    Case("query-error-damaged", ("query", "damaged.sow", "--filter", "/id = 1")),
    Case("query-error-future-version", ("query", "future.sow")),
    # ---- dump
    Case("dump-text", ("dump", ORDERS)),
    Case("dump-json", ("dump", PRICES, "--format", "json")),
    Case("dump-jsonl-fix", ("dump", TRADES, "--format", "jsonl")),
    Case("dump-history-topic", ("dump", CATALOG)),
    Case("dump-error-damaged", ("dump", "damaged.sow")),
    Case("dump-error-truncated", ("dump", "truncated.sow")),
    # ---- stats
    Case("stats-text", ("stats", ORDERS)),
    Case("stats-verify-json", ("stats", ORDERS, "--verify", "--format", "json")),
    Case("stats-pattern", ("stats", PRICES)),
    Case("stats-history", ("stats", CATALOG, "--verify")),
    Case("stats-transient-fix", ("stats", TRADES)),
    Case("stats-error-verify-damaged", ("stats", "damaged.sow", "--verify")),
    Case("stats-error-text-file", ("stats", "orders.csv")),
    Case("stats-error-future-version", ("stats", "future.sow")),
]

_SIZES = (re.compile(r"\(\d+ bytes\)"), re.compile(r'"bytes":\d+'))


def masked(text: str) -> str:
    return _SIZES[1].sub('"bytes":N', _SIZES[0].sub("(N bytes)", text))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Case, built: Path, tmp_path: Path) -> None:
    for file in built.iterdir():
        shutil.copy(file, tmp_path / file.name)
    check_golden(GOLDEN, case, masked(run_golden("sow", case, tmp_path)))


def test_case_names_are_unique() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_no_orphan_golden_files() -> None:
    orphans = orphan_goldens(GOLDEN, CASES)
    assert not orphans, f"golden files without a case (delete them): {orphans}"


def test_exit_codes_follow_the_contract() -> None:
    expected = {
        "query-table": 0, "query-scan-no-match": 0, "dump-text": 0, "stats-verify-json": 0,
        "query-error-bad-filter": 3, "query-error-bad-order-by": 3, "query-error-order-by-no-slash": 3, "query-error-bad-select": 3,
        "query-error-empty-select": 2, "query-error-bad-time": 2, "query-error-not-a-sow-file": 3,
        "query-error-missing-file": 3, "query-error-damaged": 3, "query-error-future-version": 3,
        "dump-error-damaged": 3, "dump-error-truncated": 3, "stats-error-verify-damaged": 3,
        "query-error-as-of-no-history": 3,
    }
    for name, code in expected.items():
        text = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
        assert f"\nexit: {code}\n" in text, name


def test_indexes_answer_the_exact_matches() -> None:
    """The hash index serves /region and /id equality; the memo index pre-filters /qty."""
    assert "3 records (hash index /region)" not in (GOLDEN / "query-hash-index-json.txt").read_text()  # json: no footer
    table = (GOLDEN / "query-table.txt").read_text()
    assert "4 records (scan)" in table
    text = (GOLDEN / "query-order-top.txt").read_text()
    assert "2 records (scan)" in text


def test_in_process_query_uses_the_indexes(cli, built: Path) -> None:
    for file in built.iterdir():
        shutil.copy(file, Path.cwd() / file.name)
    assert cli("sow", "query", ORDERS, "--filter", "/region = 'EMEA'").stdout.rstrip().endswith("2 records (hash index /region)")
    assert cli("sow", "query", ORDERS, "--filter", "/qty > 90").stdout.rstrip().endswith("3 records (memo pre-filter)")
    assert cli("sow", "query", ORDERS, "--key", KEY_2).stdout.rstrip().endswith("1 record (sow keys)")


def test_a_stored_message_that_is_not_a_json_object_is_named(built: Path, tmp_path: Path) -> None:
    from ampsctl.sow.sowfile import row_crc

    path = tmp_path / "odd.sow"
    shutil.copy(built / ORDERS, path)
    with sqlite3.connect(path) as connection:  # a row ampsctl would never write, with a matching CRC
        topic, key, sequence, timestamp, expiration, expires_at = connection.execute(
            "SELECT topic, sow_key, sequence, timestamp, expiration, expires_at FROM records WHERE sow_key = ?", (KEY_2,)).fetchone()
        connection.execute("UPDATE records SET payload = ?, crc = ? WHERE sow_key = ?",
                           (b"[2,600]", row_crc(topic, key, b"[2,600]", sequence, timestamp, expiration, expires_at), KEY_2))
    result = subprocess.run([sys.executable, "-m", "ampsctl", "sow", "dump", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3
    assert f"the message of record '{KEY_2}' (topic 'orders') is not a JSON object" in result.stderr
    assert "journal compact" in result.stderr


def test_the_table_escapes_control_characters_of_messages(built: Path, tmp_path: Path) -> None:
    (tmp_path / "sow-demo.xml").write_bytes(SOW_CONFIG)
    (tmp_path / "in.jsonl").write_text('{"command":"publish","topic":"trades","message_type":"fix",'
                                       '"payload":"55=IBM\\u000158=\\u001b[31mred\\u001b[0m\\u0001"}\n')
    _ampsctl("journal", "import", "in.jsonl", "--out", "journal", cwd=tmp_path)
    _ampsctl("journal", "compact", "journal", "--config", "sow-demo.xml", "--out", "out", cwd=tmp_path)
    result = subprocess.run([sys.executable, "-m", "ampsctl", "sow", "query", f"out/{TRADES}"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "\x1b" not in result.stdout  # a terminal would act on it
    assert "58=\\x1b[31mred\\x1b[0m|" in result.stdout.replace("\n", "").replace(" ", "")


def test_csv_cells_read_back_exactly(built: Path, tmp_path: Path) -> None:
    # A lone carriage return was written unquoted (the line terminator is \n), so a CSV reader
    # ended the row there. Spreadsheet formulas (=, +, -, @) are kept as they are: CSV is data.
    values = ["cr\ronly", "crlf\r\nx", "l1\nl2", "=HYPERLINK(\"http://x\",\"y\")", "+1", "-2", "@SUM(A1)", "a,b", 'say "hi"', "\x00\x1b", "Ä😀"]
    (tmp_path / "sow-demo.xml").write_bytes(SOW_CONFIG)
    lines = [json.dumps({"command": "publish", "topic": "orders", "data": {"id": n, "v": v}}) for n, v in enumerate(values)]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    _ampsctl("journal", "import", "in.jsonl", "--out", "journal", cwd=tmp_path)
    _ampsctl("journal", "compact", "journal", "--config", "sow-demo.xml", "--out", "out", cwd=tmp_path)
    result = subprocess.run([sys.executable, "-m", "ampsctl", "sow", "query", f"out/{ORDERS}", "--format", "csv",
                             "--select", "/id,/v", "--order-by", "/id"], cwd=tmp_path, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout.decode("utf-8"), newline="")))
    assert [row[4:] for row in rows] == [["/id", "/v"], *([str(n), v] for n, v in enumerate(values))]
    assert result.stdout.endswith(b"\n") and not result.stdout.endswith(b"\r\n")


def test_a_topic_with_control_characters_is_escaped_in_the_table_and_text_dump(built: Path, tmp_path: Path) -> None:
    (tmp_path / "sow-demo.xml").write_bytes(SOW_CONFIG)
    (tmp_path / "in.jsonl").write_text('{"command":"publish","topic":"prices.\\u001b[2J\\nx","data":{"sym":"IBM","px":1}}\n')
    _ampsctl("journal", "import", "in.jsonl", "--out", "journal", cwd=tmp_path)
    _ampsctl("journal", "compact", "journal", "--config", "sow-demo.xml", "--out", "out", cwd=tmp_path)
    for args in (("query", f"out/{PRICES}"), ("dump", f"out/{PRICES}")):
        result = subprocess.run([sys.executable, "-m", "ampsctl", "sow", *args], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0 and "\x1b" not in result.stdout, result.stdout
        assert "prices.\\x1b[2J\\nx" in result.stdout


def test_bidi_overrides_and_invisible_characters_are_escaped_in_every_text_view(built: Path, tmp_path: Path) -> None:
    # A right-to-left override makes "prices.\u202egnp.exe" read as "prices.exe.png"; a
    # zero-width space makes two topics look the same. The journal dump escaped them, the SOW
    # table and text dump did not.
    (tmp_path / "sow-demo.xml").write_bytes(SOW_CONFIG)
    (tmp_path / "in.jsonl").write_text('{"command":"publish","topic":"prices.\\u202egnp\\u200b","data":{"sym":"\\u2066IBM","px":1}}\n')
    _ampsctl("journal", "import", "in.jsonl", "--out", "journal", cwd=tmp_path)
    _ampsctl("journal", "compact", "journal", "--config", "sow-demo.xml", "--out", "out", cwd=tmp_path)
    runs = [("sow", "query", f"out/{PRICES}"), ("sow", "dump", f"out/{PRICES}"), ("journal", "dump", "journal")]
    for args in runs:
        result = subprocess.run([sys.executable, "-m", "ampsctl", *args], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert not {"\u202e", "\u200b", "\u2066"} & set(result.stdout), (args, result.stdout)
        assert "prices.\\u202egnp\\u200b" in result.stdout and "\\u2066IBM" in result.stdout, (args, result.stdout)


def test_integers_beyond_64_bits_of_a_stored_message_are_shown_exactly(built: Path, tmp_path: Path) -> None:
    # The file holds the message's bytes; every output read them with orjson, as floats.
    (tmp_path / "sow-demo.xml").write_bytes(SOW_CONFIG)
    (tmp_path / "in.jsonl").write_text('{"command":"publish","topic":"orders","data":{"id":1,"n":123456789012345678901234567890,"m":-9223372036854775809}}\n')
    _ampsctl("journal", "import", "in.jsonl", "--out", "journal", cwd=tmp_path)
    _ampsctl("journal", "compact", "journal", "--config", "sow-demo.xml", "--out", "out", cwd=tmp_path)
    runs = [("dump", "--format", "text"), ("dump", "--format", "json"), ("dump", "--format", "jsonl"),
            ("query", "--format", "table"), ("query", "--format", "json"), ("query", "--format", "csv"),
            ("query", "--format", "csv", "--select", "/n,/m"), ("query", "--format", "jsonl", "--select", "/n,/m"),
            ("query", "--format", "table", "--select", "/n,/m", "--filter", "/id = 1")]
    for command, *options in runs:
        result = subprocess.run([sys.executable, "-m", "ampsctl", "sow", command, f"out/{ORDERS}", *options],
                                cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, (options, result.stderr)
        shown = "".join(result.stdout.split())  # the table folds long cells
        assert "123456789012345678901234567890" in shown and "-9223372036854775809" in shown, (options, result.stdout)
        assert "e+" not in shown, options


def test_a_topic_regex_that_would_take_gigabytes_is_refused(built: Path) -> None:
    # The regex package unrolls counted repeats when compiling: this pattern asked for hundreds
    # of gigabytes (a MemoryError, exit 5, or the machine's memory) before it was refused.
    for pattern, problem in (("(?:(?:a{1000}){1000}){1000}", "unroll to more than 65535 copies"),
                             ("(?:(?R)|a)", "recurses forever")):
        result = subprocess.run([sys.executable, "-m", "ampsctl", "sow", "query", str(built / PRICES), "--topic", pattern],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 3 and problem in result.stderr, result.stderr
