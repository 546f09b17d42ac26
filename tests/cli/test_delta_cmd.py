"""``ampsctl delta merge|diff|conflate``: golden-file tests of the real CLI for every type.

Each case in ``CASES`` runs ``python -m ampsctl delta ...`` in a subprocess (working
directory: a temporary directory holding the case's input files; stdin as given) and compares
the command line, the exit code, stdout and stderr with ``tests/cli/golden/delta/<case>.txt``.
SOH bytes are shown as ``|`` so FIX output stays readable in the golden files.

To accept new output after an intended change::

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/cli/test_delta_cmd.py

then review the diff of tests/cli/golden/delta/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import GoldenCase, check_golden, orphan_goldens, run_golden

GOLDEN = Path(__file__).resolve().parent / "golden" / "delta"

# Seed 004 / spec §6.4 V4: two workers update one order.
ORDER = b'{"id":735,"customer":"Patrick","item":90123,"qty":1000,"state":"new"}\n'
INVENTORY = b'{"id":735,"inventory":"available"}\n'
CREDIT = b'{"id":735,"credit":"approved"}\n'
# Seed 004 / spec §7.6 D2: the conflation example, with another record interleaved.
UPDATES = (
    b'{"id":99,"status":"open","notes":"none","xref":82}\n'
    b'{"id":99,"status":"questioned","notes":"none","xref":82}\n'
    b'{"id":"7","a":1}\n'
    b'{"id":99,"status":"questioned","notes":"jcarlo hold","xref":82}\n'
    b"\n"
    b'{"id":99,"status":"cleared","notes":"none","xref":82}\n'
    b'{"id":7,"a":2}\n'
    b'{"id":99,"status":"open","notes":"none","xref":82}\n'
)
BAD_UPDATES = UPDATES.replace(b'{"id":7,"a":2}', b'{"id":7,"a":') + b'{"a":3}\n'
FIX_BASE = b"1=FOO\x015=TEST1\x01\n"  # spec §6.4 V5 (the editor's trailing newline is ignored)
FIX_DELTA = b"5=TEST1\x012=BAR"  # no trailing SOH: tolerated
NVFIX_OLD = b"Symbol=MSFT\x01Qty=1000\x01Px=90.5\x01"
NVFIX_NEW = b"Symbol=MSFT\x01Qty=1200\x01Px=90.5\x01"
XML_OLD = b'<Order id="1"><Symbol>IBM</Symbol><Qty>10</Qty><Legs><Leg>a</Leg><Leg>b</Leg></Legs></Order>'
XML_DELTA = b'<Order id="1"><Qty>20</Qty><Legs><Leg>c</Leg></Legs></Order>'
FIX_STREAM = b"55=IBM\x0144=1\x01\n55=MSFT\x0144=7\x01\n55=IBM\x0144=2\x0138=100\x01\n"


Case = GoldenCase


JSON_FILES = {"order.json": ORDER, "inventory.json": INVENTORY, "credit.json": CREDIT}

CASES = [
    # ---- merge: whole files, every type
    Case("merge-json-v4", ("merge", "order.json", "inventory.json", "credit.json"), files=JSON_FILES),
    Case("merge-json-stdin-base", ("merge", "-", "inventory.json"), stdin=ORDER, files=JSON_FILES),
    Case("merge-json-array-replaced", ("merge", "a.json", "b.json"), files={
        "a.json": b'{"id":42,"contents":{"packages":[{"box":"chocolates"},{"bowl":"noodles"}]},"keep":{"x":1,"y":2}}',
        "b.json": b'{"id":42,"contents":{"packages":[{"basket":"eggs"}]},"keep":{"x":null}}'}),
    Case("merge-fix-v5", ("merge", "base.fix", "delta.fix"), files={"base.fix": FIX_BASE, "delta.fix": FIX_DELTA}),
    Case("merge-nvfix", ("merge", "old.nvfix", "delta.nvfix"), files={"old.nvfix": NVFIX_OLD, "delta.nvfix": b"Qty=5\x01Side=Buy\x01"}),
    Case("merge-xml", ("merge", "old.xml", "delta.xml"), files={"old.xml": XML_OLD, "delta.xml": XML_DELTA}),
    Case("merge-type-by-content", ("merge", "old.msg", "delta.msg"), files={"old.msg": NVFIX_OLD, "delta.msg": b"Qty=5\x01"}),
    # ---- merge --stream
    Case("stream-json", ("merge", "--stream", "--key", "/id", "updates.jsonl"), files={"updates.jsonl": UPDATES}),
    Case("stream-json-all", ("merge", "--stream", "--key", "/id", "--all", "-"), stdin=UPDATES),
    Case("stream-fix", ("merge", "--stream", "--key", "/55", "--type", "fix", "trades.txt"), files={"trades.txt": FIX_STREAM}),
    # ---- diff
    Case("diff-json", ("diff", "old.json", "new.json", "--key", "/order"), files={
        "old.json": b'{"order":3,"customer":"Patrick","status":"new","qty":1000,"c":{"p":1,"q":2}}',
        "new.json": b'{"order":3,"customer":"Patrick","status":"pending","qty":1000,"c":{"p":1,"q":3}}'}),
    Case("diff-json-unchanged", ("diff", "a.json", "a.json", "--key", "/id"), files={"a.json": b'{"id":1,"a":1}'}),
    Case("diff-json-no-empties", ("diff", "a.json", "a.json", "--key", "/id", "--no-empties"), files={"a.json": b'{"id":1,"a":1}'}),
    Case("diff-nvfix", ("diff", "old.nvfix", "new.nvfix", "--key", "/Symbol"), files={"old.nvfix": NVFIX_OLD, "new.nvfix": NVFIX_NEW}),
    Case("diff-fix", ("diff", "old.fix", "new.fix", "--key", "/55"), files={"old.fix": b"55=IBM\x0144=1\x0138=5\x01", "new.fix": b"55=IBM\x0144=2\x0138=5\x01"}),
    Case("diff-xml", ("diff", "old.xml", "new.xml", "--key", "/Order/@id"), files={"old.xml": XML_OLD, "new.xml": XML_OLD.replace(b"10", b"11")}),
    # ---- conflate: seed 004's example comes out exactly
    Case("conflate-json-seed004", ("conflate", "--key", "/id", "updates.jsonl"), files={"updates.jsonl": UPDATES}),
    Case("conflate-nvfix", ("conflate", "--key", "/Symbol", "--type", "nvfix", "-"), stdin=NVFIX_OLD + b"\n" + NVFIX_NEW + b"\n" + NVFIX_OLD + b"\n"),
    # ---- bad input
    Case("error-bad-line", ("conflate", "--key", "/id", "bad.jsonl"), files={"bad.jsonl": BAD_UPDATES}),
    Case("error-bad-line-keep-going", ("merge", "--stream", "--key", "/id", "--keep-going", "bad.jsonl"), files={"bad.jsonl": BAD_UPDATES}),
    Case("error-mixed-types", ("merge", "order.json", "delta.xml"), files={**JSON_FILES, "delta.xml": XML_DELTA}),
    Case("error-forced-type", ("merge", "--type", "xml", "order.json", "inventory.json"), files=JSON_FILES),
    Case("error-unknown-type", ("merge", "--type", "bson", "order.json", "inventory.json"), files=JSON_FILES),
    Case("error-binary-garbage", ("merge", "junk.bin", "inventory.json"), files={**JSON_FILES, "junk.bin": bytes(range(0, 256, 7))}),
    Case("error-not-an-object", ("merge", "order.json", "list.json"), files={**JSON_FILES, "list.json": b"[1, 2]"}),
    Case("error-missing-file", ("merge", "order.json", "nope.json"), files=JSON_FILES),
    Case("error-missing-key", ("diff", "order.json", "inventory.json", "--key", "/orderId"), files=JSON_FILES),
    Case("error-array-key", ("merge", "--stream", "--key", "/id", "-"), stdin=b'{"id":[1,2]}\n'),
    Case("error-bad-xml", ("merge", "old.xml", "bad.xml"), files={"old.xml": XML_OLD, "bad.xml": b"<Order><Qty>1</Order>"}),
    Case("error-bad-fix", ("merge", "--type", "fix", "old.txt", "bad.txt"), files={"old.txt": b"55=IBM\x01", "bad.txt": b"55=IBM\x01garbage\x01"}),
    Case("error-stream-without-key", ("merge", "--stream", "updates.jsonl"), files={"updates.jsonl": UPDATES}),
    Case("error-key-without-stream", ("merge", "--key", "/id", "order.json", "inventory.json"), files=JSON_FILES),
    Case("error-base-only", ("merge", "order.json"), files=JSON_FILES),
    Case("error-two-stdins", ("merge", "-", "-"), stdin=ORDER),
]


def run_case(case: Case, cwd: Path) -> str:
    return run_golden("delta", case, cwd)


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
        "merge-json-v4": 0, "stream-json": 0, "conflate-json-seed004": 0, "diff-json-no-empties": 0,
        "error-bad-line": 3, "error-bad-line-keep-going": 1, "error-mixed-types": 2, "error-unknown-type": 2,
        "error-binary-garbage": 3, "error-missing-key": 3, "error-stream-without-key": 2,
    }
    for name, code in expected.items():
        text = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
        assert f"\nexit: {code}\n" in text, name


def test_seed004_conflation_is_exact() -> None:
    """Spec §7.6 D2: the one delta is {"id":99,"status":"open","notes":"none"} -- no xref."""
    text = (GOLDEN / "conflate-json-seed004.txt").read_text(encoding="utf-8")
    assert '{"id":99,"status":"open","notes":"none"}\n' in text


# ------------------------------------------------------------------------ in-process


def test_stream_merge_in_process(cli, write) -> None:
    write("u.jsonl", '{"id":1,"a":1}\n{"id":2,"a":1}\n{"id":"1","b":2}\n')
    result = cli("delta", "merge", "--stream", "--key", "/id", "u.jsonl")
    assert result.code == 0, result.output
    # "1" and 1 are one record (keys compare as text); the later value of /id replaces the first.
    assert result.stdout.splitlines() == ['{"id":"1","a":1,"b":2}', '{"id":2,"a":1}']


def test_delta_help_is_cheap(cli) -> None:
    result = cli("delta", "--help")
    assert result.code == 0 and "conflate" in result.stdout
