"""``ampsctl journal import|dump|verify``: golden-file tests of the real CLI.

Each case in ``CASES`` runs ``python -m ampsctl journal ...`` in a subprocess, in a temporary
directory holding the case's files (journals are built here with the library, then damaged on
purpose where the case says so), and compares the command line, exit code, stdout and stderr
with ``tests/cli/golden/journal/<case>.txt``. Journals are deterministic (no clock), so the
bookmarks and offsets in the golden files are stable.

To accept new output after an intended change::

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/cli/test_journal_cmd.py

then review the diff of tests/cli/golden/journal/.
"""

from __future__ import annotations

import struct
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest
from clitools import GoldenCase, check_golden, orphan_goldens, run_golden

from ampsctl.journal.bookmarks import format_bookmark
from ampsctl.journal.jsonl import Clock, parse_lines
from ampsctl.journal.writer import FsyncPolicy, JournalWriter

GOLDEN = Path(__file__).resolve().parent / "golden" / "journal"

DEMO = b"""\
{"command":"publish","topic":"orders","data":{"id":1,"sym":"IBM","qty":5},"sow_key":"1","client_name":"pub-1","correlation_id":"c-1"}
{"command":"publish","topic":"orders","data":{"id":2,"sym":"MSFT","qty":50},"sow_key":"2","client_name":"pub-1","expiration":30}
{"command":"delta_publish","topic":"orders","data":{"id":1,"qty":7},"sow_key":"1","client_name":"pub-2","timestamp":"2026-01-01T00:00:10Z"}
{"command":"publish","topic":"fix-orders","message_type":"fix","payload":"35=D\\u000155=IBM\\u000138=100\\u0001","publisher_sequence":41}

{"command":"publish","topic":"xml-orders","message_type":"xml","payload":"<Order><Id>9</Id><Qty>900</Qty></Order>","sow_key":"9"}
{"command":"publish","topic":"blobs","message_type":"bflat","payload_base64":"AAECAw=="}
{"command":"sow_delete","topic":"orders","filter":"/qty > 40"}
{"command":"sow_delete","topic":"orders","keys":["1","2"]}
{"command":"sow_delete","topic":"orders","data":{"id":1}}
{"command":"expire","topic":"orders","sow_key":"2","timestamp":1767225700000000}
"""
# 60 publishes over a few 1 KiB segments, for segment-level cases.
MANY = b"".join(b'{"topic":"t%d","data":{"id":%d,"n":"%s"},"sow_key":"%d","client_name":"c%d"}\n' % (i % 3, i, b"x" * 40, i, i % 2)
                for i in range(60))
DEMO_BYTES = 1 << 20


@lru_cache(maxsize=None)
def journal(source: bytes, segment_bytes: int = DEMO_BYTES) -> tuple[tuple[str, bytes], ...]:
    """The files of the journal ``source`` (JSONL) imports into, as (name, bytes)."""
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch) / "j"
        with JournalWriter.open(directory, segment_bytes=segment_bytes, fsync=FsyncPolicy.NEVER) as writer:
            writer.append_many(parse_lines(source.splitlines(), "source", Clock()))
        return tuple((p.name, p.read_bytes()) for p in sorted(directory.iterdir()) if p.name != "journal.lock")


def files(source: bytes = DEMO, segment_bytes: int = DEMO_BYTES, *, into: str = "j", edit=None) -> dict[str, bytes]:  # noqa: ANN001
    """A journal as case files under ``into/``; ``edit(name, data) -> data | None`` damages or drops files."""
    out = {}
    for name, data in journal(source, segment_bytes):
        changed = data if edit is None else edit(name, data)
        if changed is not None:
            out[f"{into}/{name}"] = changed
    return out


def flipped(segment: str, offset: int):  # noqa: ANN201
    def edit(name: str, data: bytes) -> bytes:
        if name != segment:
            return data
        out = bytearray(data)
        out[offset] ^= 0x20
        return bytes(out)
    return edit


def record_offset(source: bytes, segment: str, index: int, segment_bytes: int = DEMO_BYTES) -> int:
    data = dict(journal(source, segment_bytes))[segment]
    pos = 36
    for _ in range(index):
        pos += int.from_bytes(data[pos:pos + 4], "little")
    return pos


def torn(name: str, data: bytes) -> bytes | None:
    if name.endswith(".index"):
        return None  # a crash leaves the last segment without its index
    return data[:-7]


def version_7(name: str, data: bytes) -> bytes:
    return data[:8] + struct.pack("<H", 7) + data[10:] if name.endswith(".journal") else data


def truncated_first_header(name: str, data: bytes) -> bytes | None:
    return data[:20] if name == "00000001.journal" else data


def without_segment_2(name: str, data: bytes) -> bytes | None:
    return None if name.startswith("00000002.") else data


def bad_index_3(name: str, data: bytes) -> bytes:
    return b"not an index" if name == "00000003.index" else data


def two_problems(name: str, data: bytes) -> bytes | None:
    if name in ("00000001.journal", "00000003.journal"):
        return flipped(name, record_offset(MANY, name, 1, 1024) + 60)(name, data)
    return bad_index_3(name, data)


Case = GoldenCase
BM3 = format_bookmark("pub-2", 3)  # the delta_publish
BM8 = format_bookmark("", 8)
TEXT = b"This is a text file, not a journal.\n"

CASES = [
    # ---- import
    Case("import-demo", ("import", "demo.jsonl", "--out", "j"), files={"demo.jsonl": DEMO}),
    Case("import-json-summary", ("import", "demo.jsonl", "--out", "j", "--format", "json"), files={"demo.jsonl": DEMO}),
    Case("import-stdin", ("import", "-", "--out", "j", "--start", "2026-11-22T09:30:00Z", "--step-us", "1"), stdin=DEMO),
    Case("import-segments", ("import", "many.jsonl", "--out", "j", "--segment-size", "1KB"), files={"many.jsonl": MANY}),
    Case("import-error-unknown-field", ("import", "bad.jsonl", "--out", "j"),
         files={"bad.jsonl": DEMO + b'{"topic":"orders","dat":{"id":3}}\n'}),
    Case("import-error-not-json", ("import", "bad.jsonl", "--out", "j"), files={"bad.jsonl": b'{"topic":"orders","data":{}}\n{"topic":\n'}),
    Case("import-error-bad-message", ("import", "bad.jsonl", "--out", "j"),
         files={"bad.jsonl": b'{"topic":"orders","message_type":"fix","payload":"35=D\\u0001IBM\\u0001"}\n'}),
    Case("import-error-bad-filter", ("import", "bad.jsonl", "--out", "j"),
         files={"bad.jsonl": b'{"command":"sow_delete","topic":"orders","filter":"/qty >"}\n'}),
    Case("import-error-out-not-empty", ("import", "demo.jsonl", "--out", "j"), files={"demo.jsonl": DEMO, "j/keep.txt": b"x"}),
    Case("import-error-missing-file", ("import", "nope.jsonl", "--out", "j")),
    Case("import-error-empty-input", ("import", "empty.jsonl", "--out", "j"), files={"empty.jsonl": b"\n\n"}),
    Case("import-error-bad-start", ("import", "demo.jsonl", "--out", "j", "--start", "yesterday"), files={"demo.jsonl": DEMO}),
    Case("import-error-bad-segment-size", ("import", "demo.jsonl", "--out", "j", "--segment-size", "12"), files={"demo.jsonl": DEMO}),
    # ---- dump
    Case("dump-text", ("dump", "j"), files=files()),
    Case("dump-jsonl", ("dump", "j", "--format", "jsonl"), files=files()),
    Case("dump-json", ("dump", "j", "--format", "json", "--to", BM3), files=files()),
    Case("dump-from-bookmark", ("dump", "j", "--from", BM3), files=files()),
    Case("dump-from-timestamp", ("dump", "j", "--from", "2026-01-01T00:00:10Z", "--format", "jsonl"), files=files()),
    Case("dump-to-bookmark", ("dump", "j", "--from", "0", "--to", BM3, "--format", "jsonl"), files=files()),
    Case("dump-to-timestamp", ("dump", "j", "--to", "20260101T000000.001Z", "--format", "jsonl"), files=files()),
    Case("dump-from-now", ("dump", "j", "--from", "0|1|"), files=files()),
    Case("dump-topic", ("dump", "j", "--topic", "^(fix|xml)-"), files=files()),
    Case("dump-filter-json", ("dump", "j", "--filter", "/qty > 6"), files=files()),
    Case("dump-filter-fix-xml", ("dump", "j", "--filter", "/55 = 'IBM' OR /Order/Qty > 100", "--format", "jsonl"), files=files()),
    Case("dump-segment-file", ("dump", "j/00000002.journal", "--format", "jsonl"), files=files(MANY, 1024)),
    Case("dump-torn-tail", ("dump", "j", "--from", BM8), files=files(edit=torn)),
    Case("dump-error-damaged", ("dump", "j"), files=files(edit=flipped("00000001.journal", record_offset(DEMO, "00000001.journal", 4) + 40))),
    Case("dump-error-text-file", ("dump", "notes.txt"), files={"notes.txt": TEXT}),
    Case("dump-error-missing", ("dump", "nowhere")),
    Case("dump-error-no-segments", ("dump", "e"), files={"e/readme.txt": b"not a segment name"}),
    Case("dump-error-unknown-version", ("dump", "j"), files=files(edit=version_7)),
    Case("dump-error-bad-bookmark", ("dump", "j", "--from", "12|x|"), files=files()),
    Case("dump-error-unknown-bookmark", ("dump", "j", "--from", format_bookmark("pub-1", 99)), files=files()),
    Case("dump-error-foreign-bookmark", ("dump", "j", "--from", format_bookmark("somebody", 3)), files=files()),
    Case("dump-error-bad-regex", ("dump", "j", "--topic", "orders("), files=files()),
    Case("dump-error-bad-filter", ("dump", "j", "--filter", "/qty >>> 1"), files=files()),
    # ---- verify
    Case("verify-clean", ("verify", "j"), files=files(MANY, 1024)),
    Case("verify-json", ("verify", "j", "--format", "json"), files=files()),
    Case("verify-flipped-byte", ("verify", "j"), files=files(edit=flipped("00000001.journal", record_offset(DEMO, "00000001.journal", 2) + 70))),
    Case("verify-two-problems", ("verify", "j"), files=files(MANY, 1024, edit=two_problems)),
    Case("verify-two-problems-json", ("verify", "j", "--format", "json"), files=files(MANY, 1024, edit=two_problems)),
    Case("verify-truncated-header", ("verify", "j"), files=files(MANY, 1024, edit=truncated_first_header)),
    Case("verify-missing-segment", ("verify", "j"), files=files(MANY, 1024, edit=without_segment_2)),
    Case("verify-torn-tail", ("verify", "j"), files=files(edit=torn)),
    Case("verify-error-text-file", ("verify", "notes.txt"), files={"notes.txt": TEXT}),
    Case("verify-error-text-in-journal", ("verify", "j"), files={**files(), "j/00000002.journal": TEXT}),
    Case("verify-error-unknown-version", ("verify", "j"), files=files(edit=version_7)),
]


def run_case(case: Case, cwd: Path) -> str:
    for name in case.files:
        (cwd / name).parent.mkdir(parents=True, exist_ok=True)
    return run_golden("journal", case, cwd)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Case, tmp_path: Path) -> None:
    check_golden(GOLDEN, case, run_case(case, tmp_path))


def test_case_names_are_unique() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_no_orphan_golden_files() -> None:
    orphans = orphan_goldens(GOLDEN, CASES)
    assert not orphans, f"golden files without a case (delete them): {orphans}"


def test_exit_codes_follow_the_contract() -> None:
    expected = {
        "import-demo": 0, "import-error-unknown-field": 3, "import-error-out-not-empty": 2, "import-error-bad-start": 2,
        "dump-text": 0, "dump-torn-tail": 0, "dump-error-damaged": 3, "dump-error-text-file": 3, "dump-error-bad-bookmark": 2,
        "dump-error-unknown-bookmark": 3, "verify-clean": 0, "verify-torn-tail": 0, "verify-flipped-byte": 1,
        "verify-two-problems": 1, "verify-error-text-file": 3, "verify-error-unknown-version": 3,
    }
    for name, code in expected.items():
        text = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
        assert f"\nexit: {code}\n" in text, name


def test_damaged_dump_prints_the_records_before_the_damage() -> None:
    text = (GOLDEN / "dump-error-damaged.txt").read_text(encoding="utf-8")
    stdout = text.split("--- stdout\n")[1].split("--- stderr\n")[0]
    assert [line.split()[0] for line in stdout.splitlines() if not line.startswith(" ")] == ["1", "2", "3", "4"]
    assert "00000001.journal: journal segment damaged at offset" in text


# ------------------------------------------------------------------------ in-process


def test_import_failure_leaves_nothing_behind(cli, write, tmp_path: Path) -> None:
    write("bad.jsonl", DEMO.decode() + '{"topic":"orders"}\n')
    result = cli("journal", "import", "bad.jsonl", "--out", "new")
    assert result.code == 3 and "bad.jsonl:12:" in result.stderr
    assert not (tmp_path / "new").exists()
    (tmp_path / "empty").mkdir()
    assert cli("journal", "import", "bad.jsonl", "--out", "empty").code == 3
    assert (tmp_path / "empty").exists() and not any((tmp_path / "empty").iterdir())


def test_dump_imports_back_into_the_same_journal(cli, write, tmp_path: Path) -> None:
    write("demo.jsonl", DEMO.decode())
    assert cli("journal", "import", "demo.jsonl", "--out", "a", "--segment-size", "600").code == 0
    dumped = cli("journal", "dump", "a", "--format", "jsonl")
    assert dumped.code == 0
    write("dumped.jsonl", dumped.stdout)
    assert cli("journal", "import", "dumped.jsonl", "--out", "b", "--segment-size", "600").code == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert len([n for n in names if n.endswith(".journal")]) > 1
    for name in names:
        if name != "journal.lock":
            assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert cli("journal", "verify", "b").stdout.startswith("ok: 10 records in")


def test_journal_help_is_cheap(cli) -> None:
    result = cli("journal", "--help")
    assert result.code == 0 and "verify" in result.stdout and "import" in result.stdout


def test_dump_text_escapes_control_characters_of_every_field(cli, write) -> None:
    # The topic and message type went out raw: a newline split the record's first line and an
    # ESC reached the terminal. A record's first line stays one line; the lines after it are indented.
    write("odd.jsonl", '{"topic":"t\\nx\\u001b[31m\\u009b","message_type":"my\\ttype","payload_base64":"AA==",'
                       '"sow_key":"k\\nz","client_name":"a b"}\n'
                       '{"topic":"fx","message_type":"fix","payload":"35=D\\u000158=\\u001b[2J\\u0001"}\n'
                       '{"topic":"x","command":"sow_delete","filter":"/a = 1\\nOR /b = 2"}\n'
                       '{"topic":"x","command":"sow_delete","keys":["k\\n1","k2"]}\n')
    assert cli("journal", "import", "odd.jsonl", "--out", "j").code == 0
    result = cli("journal", "dump", "j")
    assert result.code == 0
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout and "\t" not in result.stdout
    lines = result.stdout.splitlines()
    assert lines[0].split(" ")[3:6] == ["t\\nx\\x1b[31m\\x9b", "my\\ttype", "sow_key=k\\nz"]
    assert lines[1] == "    \\x00" and lines[3] == "    35=D|58=\\x1b[2J|"
    assert lines[5:] == ["    filter /a = 1", "    OR /b = 2", lines[7], "    keys k\\n1, k2"]


def test_a_blank_dump_filter_is_no_filter(cli, write) -> None:
    """As `sow query -F ''` and an AMPS subscription without a filter: every record."""
    write("demo.jsonl", DEMO.decode())
    assert cli("journal", "import", "demo.jsonl", "--out", "a").code == 0
    everything = cli("journal", "dump", "a", "--format", "jsonl")
    for blank in ("", "  "):
        result = cli("journal", "dump", "a", "--format", "jsonl", "--filter", blank)
        assert (result.code, result.stdout) == (0, everything.stdout), result.stderr
