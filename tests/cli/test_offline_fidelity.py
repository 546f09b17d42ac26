"""Fidelity of the offline commands on unusual but valid input: nothing is silently altered.

Each test runs the installed console script (``run_ampsctl``) on input that once came out
changed or lost (integers beyond 64 bits, XML entities, ...) and checks the exact output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import run_ampsctl

LONG = ["123456789012345678901234567890", "18446744073709551616", "-9223372036854775809", "-98765432109876543210"]


def _write(tmp_path: Path, name: str, data: bytes) -> str:
    (tmp_path / name).write_bytes(data)
    return name


@pytest.mark.parametrize("number", LONG)
def test_delta_merge_keeps_integers_beyond_64_bits(tmp_path: Path, number: str) -> None:
    base = _write(tmp_path, "base.json", b'{"id":1,"n":%s,"f":1.5}' % number.encode())
    delta = _write(tmp_path, "delta.json", b'{"x":%s}' % number.encode())
    result = run_ampsctl("delta", "merge", base, delta, cwd=tmp_path)
    assert (result.code, result.stderr) == (0, "")
    assert result.stdout == '{"id":1,"n":%s,"f":1.5,"x":%s}\n' % (number, number)


def test_delta_diff_compares_integers_beyond_64_bits_exactly(tmp_path: Path) -> None:
    # As floats both are 1.2345678901234568e+29: the change was lost and the value altered.
    old = _write(tmp_path, "old.json", b'{"id":1,"n":123456789012345678901234567890}')
    new = _write(tmp_path, "new.json", b'{"id":1,"n":123456789012345678901234567891}')
    result = run_ampsctl("delta", "diff", old, new, "--key", "/id", cwd=tmp_path)
    assert (result.code, result.stdout, result.stderr) == (0, '{"id":1,"n":123456789012345678901234567891}\n', "")


def test_delta_stream_and_conflate_keep_integers_beyond_64_bits(tmp_path: Path) -> None:
    lines = b'{"id":1,"n":1}\n{"id":1,"n":123456789012345678901234567891}\n{"id":99999999999999999999,"n":2}\n'
    stream = _write(tmp_path, "s.jsonl", lines)
    merged = run_ampsctl("delta", "merge", "--stream", "--key", "/id", stream, cwd=tmp_path)
    assert (merged.code, merged.stderr) == (0, "")
    assert merged.stdout == '{"id":1,"n":123456789012345678901234567891}\n{"id":99999999999999999999,"n":2}\n'
    conflated = run_ampsctl("delta", "conflate", "--key", "/id", stream, cwd=tmp_path)
    assert (conflated.code, conflated.stdout) == (0, '{"id":1,"n":123456789012345678901234567891}\n')


def test_delta_merge_of_a_deep_document_with_a_long_integer(tmp_path: Path) -> None:
    deep = b'{"a":' * 1000 + b"123456789012345678901234567890" + b"}" * 1000
    base = _write(tmp_path, "base.json", deep)
    result = run_ampsctl("delta", "merge", base, _write(tmp_path, "d.json", b"{}"), cwd=tmp_path)
    assert (result.code, result.stderr) == (0, "")  # orjson writes at most 255 levels: exit 3 once
    assert result.stdout.encode() == deep + b"\n"


@pytest.mark.parametrize(
    "delta",
    [
        b'<!DOCTYPE Order [<!ENTITY b "BB">]><Order><a>x&b;y</a></Order>',
        b'<!DOCTYPE Order [<!ENTITY b "BB">]><Order a="&b;"/>',
        b'<!DOCTYPE Order [<!ENTITY % p "x">]><Order><a>1</a></Order>',
    ],
)
def test_xml_entity_declarations_are_refused_not_dropped(tmp_path: Path, delta: bytes) -> None:
    # Entities are not expanded (no DTD processing): <a>x&b;y</a> was merged as <a>x</a>.
    base = _write(tmp_path, "base.xml", b"<Order><id>1</id><a>old</a></Order>")
    result = run_ampsctl("delta", "merge", base, _write(tmp_path, "delta.xml", delta), cwd=tmp_path)
    assert (result.code, result.stdout) == (3, "")
    assert result.stderr.startswith("ampsctl: error: delta.xml: XML message declares entities")


def test_xml_doctype_without_entities_and_character_references_still_work(tmp_path: Path) -> None:
    base = _write(tmp_path, "base.xml", b"<!DOCTYPE Order><Order><id>1</id><a>&#65;&amp;</a></Order>")
    result = run_ampsctl("delta", "merge", base, _write(tmp_path, "delta.xml", b"<Order><b>2</b></Order>"), cwd=tmp_path)
    assert (result.code, result.stdout, result.stderr) == (0, "<Order><id>1</id><a>A&amp;</a><b>2</b></Order>\n", "")


@pytest.mark.parametrize("number", LONG)
def test_client_json_output_keeps_integers_beyond_64_bits(number: str) -> None:
    # `client subscribe|sow --format json` parse each message's data to nest it in the line:
    # orjson made 123456789012345678901234567890 a float (the text format prints the bytes).
    from ampsctl.cli.client_cmd import _data, _json

    line = _json({"c": "publish", "t": "orders", "data": _data(b'{"id":%s,"f":1.5}' % number.encode())})
    assert line == '{"c":"publish","t":"orders","data":{"id":%s,"f":1.5}}' % number
    assert _json({"data": _data(b"not json \xff")}) == '{"data":"not json \\ufffd"}'.encode().decode("unicode_escape")
