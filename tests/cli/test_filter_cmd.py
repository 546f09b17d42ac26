"""``ampsctl filter check|test|functions``: golden-file tests of the real CLI, plus bad input.

Each case in ``CASES`` runs ``python -m ampsctl filter ...`` in a subprocess (working
directory: a temporary directory holding the case's input files; stdin as given) and
compares the command line, the exit code, stdout and stderr with
``tests/cli/golden/filter/<case>.txt``.

To accept new output after an intended change, rerun with ``UPDATE_GOLDEN=1``::

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/cli/test_filter_cmd.py

then review the diff of tests/cli/golden/filter/ before committing it. Golden files that no
case produces any more make ``test_no_orphan_golden_files`` fail; delete them.

The other tests cover what a golden file cannot hold: a filter over 1 MB (longer than one
argv string may be, so it runs in-process), cheap start-up, and the function table of
docs/filter-language.md staying equal to the catalog.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import TIMEOUT, GoldenCase, check_golden, orphan_goldens, run_golden

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden" / "filter"

# Test message M of spec/expressions.md §12.1, on one line.
M = json.dumps(
    {
        "id": 42, "symbol": "MSFT", "side": "Buy", "state": "Tennessee", "price": 90.25, "qty": 1000,
        "ratio": "47", "code": "007", "notes": "", "nothing": None, "flag": True,
        "customer": {"name": "Patrick", "region": "EMEA", "tier": 2},
        "data": [1, 2, 3, "zebra", 5], "other": [14, 34, 23, 5], "empty": [], "Not Xpath Name": "spaced",
    }
)
IBM = '{"symbol": "IBM", "side": "Sell", "price": 120.5, "qty": 10}'
ORCL = '{"symbol": "ORCL", "side": "Buy", "price": 31.0, "qty": 5000}'
MESSAGES = f"{M}\n{IBM}\n\n{ORCL}\n".encode()  # line 3 is blank: skipped, numbering kept
BAD_LINE = f'{IBM}\n{{"symbol": "MSFT"\n{ORCL}\n'.encode()
HUGE_LINE = f'{IBM}\n{{"pad": "{"x" * (1536 * 1024)}"}}\n{ORCL}\n'.encode()  # line 2 is 1.5 MB


Case = GoldenCase


CASES = [
    # ---- check: canonical form
    Case("check-canonical", ("check", "/symbol == \"MSFT\" and /qty>100 or not /flag = 1")),
    Case("check-operators", ("check", "/qty mod 7 <> 6 AND /price not between 90 and 91 AND /symbol not in ('IBM','ORCL')")),
    Case("check-predicates", ("check", "/s begins with ('MS', 'IB') OR /s not ends with ('FT') OR /s like '(?i)^ms' OR /x is not null")),
    Case("check-functions", ("check", "upper(/side) = 'BUY' AND coalesce(/a, /b, 'x') = 'x' AND if(/q > 1, 1, 0) = 1")),
    Case("check-identifiers", ("check", "[/Not Xpath Name] = 'spaced' AND /data[3] = 'zebra' AND /Order/@update = 'full' AND /qty / 4 = 250")),
    Case("check-leading-minus", ("check", "--", "-5 % 3 = -2")),
    Case("check-json", ("check", "--format", "json", "/symbol == \"MSFT\" and /qty>100")),
    # ---- check: errors with a caret
    Case("check-error-trailing-and", ("check", "/a = 1 AND")),
    Case("check-error-unterminated-string", ("check", "/symbol = 'MSFT")),
    Case("check-error-unknown-function", ("check", "/a = 1 AND FOO(/b) = 2")),
    Case("check-error-arity", ("check", "SUBSTR(/symbol) = 'x'")),
    Case("check-error-negative-subscript", ("check", "/data[-1] = 1")),
    Case("check-error-multiline", ("check", "/a = 1\nAND /b = )")),
    Case("check-error-tab", ("check", "/a\t=\t1\tAND\t)")),
    Case("check-error-deep-nesting", ("check", "(" * 300 + "1" + ")" * 300)),
    Case("check-error-invalid-utf8", ("check", b"/name = 'caf\xe9'")),
    Case("check-error-regex", ("check", "/symbol LIKE '(MS'")),
    Case("check-error-aggregate", ("check", "SUM(/qty) > 1")),
    Case("check-error-aggregate-column", ("check", "/b = 1 AND COUNT(/a) > 1")),  # the caret at COUNT, not at no column
    Case("check-error-json", ("check", "--format", "json", "/a = = 1")),
    # ---- test: verdicts
    Case("test-inline-true", ("test", "/symbol = 'MSFT' AND /qty > 100", "--data", M)),
    Case("test-inline-false", ("test", "/symbol = 'IBM'", "--data", M)),
    Case("test-file", ("test", "/qty > 100", "--data", "@messages.jsonl"), files={"messages.jsonl": MESSAGES}),
    Case("test-file-all-match", ("test", "/symbol IS NOT NULL", "--data", "@messages.jsonl"), files={"messages.jsonl": MESSAGES}),
    Case("test-stdin", ("test", "/price BETWEEN 90 AND 130", "--data", "-"), stdin=MESSAGES),
    Case("test-json", ("test", "--format", "json", "/side = 'Buy'", "--data", "@messages.jsonl"), files={"messages.jsonl": MESSAGES}),
    Case("test-json-stdin", ("test", "-f", "json", "/data = 'zebra'", "-d", "-"), stdin=MESSAGES),
    # ---- test: --explain
    Case("test-explain", ("test", "--explain", "/price > 100 OR /qty > 500 AND /side = 'Buy'", "--data", M)),
    Case("test-explain-short-circuit", ("test", "--explain", "/symbol = 'IBM' AND UPPER(/side) = 'BUY'", "--data", M)),
    Case("test-explain-arrays", ("test", "--explain", "/data != 'zebra' AND NOT (/data = 'zebra')", "--data", M)),
    Case("test-explain-file", ("test", "--explain", "/qty * /price > 100000", "--data", "@messages.jsonl"), files={"messages.jsonl": MESSAGES}),
    Case("test-explain-json", ("test", "--explain", "--format", "json", "/data = 'zebra' AND NOT (/absent = 1)", "--data", M)),
    # ---- test: bad input
    Case("test-error-filter", ("test", "/a = ", "--data", M)),
    Case("test-error-filter-json", ("test", "-f", "json", "/a = ", "--data", M)),
    Case("test-error-bad-json-line", ("test", "/qty > 1", "--data", "@bad.jsonl"), files={"bad.jsonl": BAD_LINE}),
    Case("test-error-bad-json-line-json", ("test", "-f", "json", "/qty > 1", "--data", "@bad.jsonl"), files={"bad.jsonl": BAD_LINE}),
    Case("test-error-bad-json-inline", ("test", "/qty > 1", "--data", "{qty: 1}")),
    Case("test-error-empty-data", ("test", "/qty > 1", "--data", "")),
    Case("test-error-empty-file", ("test", "/qty > 1", "--data", "@empty.jsonl"), files={"empty.jsonl": b"\n\n"}),
    Case("test-error-empty-stdin", ("test", "/qty > 1", "--data", "-")),
    Case("test-error-missing-file", ("test", "/qty > 1", "--data", "@nope.jsonl")),
    Case("test-error-huge-line", ("test", "/qty > 1", "--max-message-size", "1", "--data", "@huge.jsonl"), files={"huge.jsonl": HUGE_LINE}),
    Case("test-error-invalid-utf8-line", ("test", "/name IS NOT NULL", "--data", "@latin1.jsonl"), files={"latin1.jsonl": b'{"name": "caf\xe9"}\n'}),
    Case("test-error-invalid-utf8-inline", ("test", "/name IS NOT NULL", "--data", b'{"name": "caf\xe9"}')),
    Case("test-error-aggregate", ("test", "SUM(/qty) > 1", "--data", M)),
]


def run_case(case: Case, cwd: Path) -> str:
    return run_golden("filter", case, cwd)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Case, tmp_path: Path) -> None:
    check_golden(GOLDEN, case, run_case(case, tmp_path))


def test_case_names_are_unique() -> None:
    assert len({c.name for c in CASES}) == len(CASES)


def test_no_orphan_golden_files() -> None:
    orphans = orphan_goldens(GOLDEN, CASES)
    assert not orphans, f"golden files without a case (delete them): {orphans}"


# ------------------------------------------------------------------------ exit-code contract


def test_exit_codes_follow_the_contract() -> None:
    """Golden files pin the codes; this states the contract in one place."""
    expected = {
        "check-canonical": 0, "check-error-trailing-and": 3, "check-error-json": 3,
        "test-inline-true": 0, "test-inline-false": 1, "test-file": 1, "test-file-all-match": 0,
        "test-error-bad-json-line": 3, "test-error-empty-data": 3, "test-error-huge-line": 3,
    }
    for name, code in expected.items():
        text = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
        assert f"\nexit: {code}\n" in text, name


def test_json_outputs_are_json_lines() -> None:
    for case in CASES:
        if "json" not in case.args and not any(a == "-f" for a in case.args):
            continue
        text = (GOLDEN / f"{case.name}.txt").read_text(encoding="utf-8")
        stdout = text.split("--- stdout\n", 1)[1].split("--- stderr\n", 1)[0]
        for line in stdout.splitlines():
            assert isinstance(json.loads(line), dict), (case.name, line)


# ------------------------------------------------------------------------ bad input in-process


def test_filter_over_one_megabyte_is_refused(cli) -> None:
    """Longer than one argv string may be, so this runs in-process; the output stays short."""
    huge = "/a = 1 OR " * 110_000 + "/a = 2"
    assert len(huge.encode()) > 1024 * 1024
    for args in (("filter", "check", huge), ("filter", "test", huge, "--data", "{}")):
        result = cli(*args)
        assert result.code == 3, result.output[:500]
        assert "Traceback" not in result.output
        assert len(result.output) < 2000
        assert "invalid filter" in result.output


def test_filter_over_one_megabyte_json(cli) -> None:
    result = cli("filter", "check", "--format", "json", "x" * (1024 * 1024 + 1))
    assert result.code == 3
    data = json.loads(result.stdout)
    assert data["valid"] is False and data["error"]
    assert set(data) == {"valid", "error", "position", "hint"}


def test_check_json_shapes(cli) -> None:
    ok = json.loads(cli("filter", "check", "-f", "json", "/a = 1").stdout)
    assert ok == {"valid": True, "canonical": "/a = 1"}
    bad = json.loads(cli("filter", "check", "-f", "json", "/a = ").stdout)
    assert bad["valid"] is False and isinstance(bad["position"], int) and bad["hint"]


def test_ten_thousand_parentheses(cli) -> None:
    result = cli("filter", "check", "(" * 10_000 + "1" + ")" * 10_000)
    assert result.code == 3 and "Traceback" not in result.output
    assert max(len(line) for line in result.stdout.splitlines()) < 200


def test_explain_a_long_arithmetic_chain(cli) -> None:
    """Every node of a left-deep chain gets a row, parents first (the walk is iterative)."""
    terms = 150
    chain = " + ".join(["1"] * terms) + f" = {terms}"
    result = cli("filter", "test", "--explain", chain, "--data", "{}")
    assert result.code == 0, result.output[-500:]
    lines = result.stdout.splitlines()
    assert lines[0] == "true"
    assert len(lines) == 1 + 2 + (terms - 1) + terms  # verdict, =, its right side, the +'s, the 1's
    assert lines[1].endswith(" -> true") and lines[2].startswith("    1 + 1 + ")


# ------------------------------------------------------------------------ rendering helpers


def test_caret_keeps_tabs_and_windows_long_lines() -> None:
    from ampsctl.cli.filter_cmd import WINDOW, _caret

    assert _caret("/a\t= )", 5) == ["/a\t= )", "  \t  ^"]
    line, caret = _caret("x" * 1000 + ")" + "y" * 1000, 1000)
    assert line.startswith("...") and line.endswith("...") and len(line) == 2 * WINDOW + 6
    assert line[caret.index("^")] == ")"
    assert _caret("/a = 1\n/b = )", 12) == ["/b = )", "     ^"]
    assert _caret("/a =", 4) == ["/a =", "    ^"]  # end of input
    assert _caret("", 0) == [] and _caret("/a", None) == []


def test_values_are_shown_in_filter_syntax() -> None:
    from ampsctl.cli.filter_cmd import _jsonable, _show

    assert _show(None) == "NULL" and _show(True) == "true" and _show(24.0) == "24.0"
    assert _show("it's\x01") == "'it\\'s\\x01'"
    assert _show([1, "a", None, {"k": 2.5}]) == "[1, 'a', NULL, {'k': 2.5}]"
    assert _show(float("nan")) == "NaN"
    assert _jsonable([float("inf"), 1]) == ["Infinity", 1]
    deep: list = []
    for _ in range(100):
        deep = [deep]
    assert "..." in _show(deep) and "..." in json.dumps(_jsonable(deep))


# ------------------------------------------------------------------------ start-up


def test_filter_help_loads_no_filter_code() -> None:
    """`ampsctl filter ... --help` must not import the filter library (nor lxml, pyspark...)."""
    probe = (
        "import sys\nfrom ampsctl.cli.app import main\n"
        "for argv in (['--help'], ['filter', '--help'], ['filter', 'test', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('MODULES', ' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT)
    modules = done.stdout.rpartition("MODULES ")[2].split()
    assert "ampsctl.cli.filter_cmd" in modules, done.stderr
    heavy = [m for m in modules if m.split(".")[0] in ("lxml", "xmlschema", "pyspark", "regex", "orjson") or m.startswith("ampsctl.filter")]
    assert heavy == []


# ------------------------------------------------------------------------ docs


def test_docs_function_table_is_current() -> None:
    """docs/filter-language.md holds `ampsctl filter functions --format markdown` verbatim."""
    from ampsctl.cli.filter_cmd import functions_markdown

    text = (ROOT / "docs" / "filter-language.md").read_text(encoding="utf-8")
    begin, end = "<!-- functions:begin -->\n", "<!-- functions:end -->"
    assert begin in text and end in text
    table = text.split(begin, 1)[1].split(end, 1)[0]
    assert table.strip() == functions_markdown().strip(), (
        "the function table of docs/filter-language.md is stale: replace it with the output of "
        "`ampsctl filter functions --format markdown`"
    )


def test_functions_command(cli) -> None:
    from ampsctl.filter.catalog import FUNCTIONS

    text = cli("filter", "functions")
    assert text.code == 0
    assert {line.split()[0] for line in text.stdout.splitlines()} == set(FUNCTIONS)
    rows = json.loads(cli("filter", "functions", "-f", "json").stdout)
    assert {r["name"] for r in rows} == set(FUNCTIONS)
