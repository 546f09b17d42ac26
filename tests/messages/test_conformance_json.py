"""Conformance of JSON delta handling through ``ampsctl delta`` (spec/messages.md §2.1, §6, §7).

Runs the real command in this process (``ampsctl.cli.app.main``) on files in a temporary
directory.
"""

from __future__ import annotations

from pathlib import Path

from delta_cli import run_delta as run


def test_a_zero_that_changes_sign_is_a_change(tmp_path: Path) -> None:
    # 0.0 == -0.0 in Python, so the change was not sent and a delta subscriber kept 0.0
    # while a full subscriber saw -0.0 (other text, and another SOW key when it is a key).
    files = {"old.json": b'{"id":1,"a":0.0,"b":[0.0],"c":-0.0}', "new.json": b'{"id":1,"a":-0.0,"b":[-0.0],"c":-0.0}'}
    code, out, err = run(tmp_path, files, "diff", "old.json", "new.json", "--key", "/id")
    assert (code, out, err) == (0, '{"id":1,"a":-0.0,"b":[-0.0]}\n', "")


def test_identical_deeply_nested_arrays_are_compared_without_a_depth_error(tmp_path: Path) -> None:
    # 900 levels parse (orjson allows 1024); comparing them recursively ran out of stack.
    deep = b'{"id":1,"a":' + b"[" * 900 + b"1" + b"]" * 900 + b"}"
    code, out, err = run(tmp_path, {"a.json": deep}, "diff", "a.json", "a.json", "--key", "/id")
    assert (code, out, err) == (0, '{"id":1}\n', "")


def test_a_utf8_bom_at_the_start_of_an_input_file_is_not_content(tmp_path: Path) -> None:
    # The type was detected past the BOM, then the parser refused it ("BOM is not supported")
    # or, for FIX, read it as part of the first tag ("malformed FIX field '\ufeff35=D'").
    bom = b"\xef\xbb\xbf"
    files = {"a.json": bom + b'{"id":1,"a":1}\r\n', "b.json": b'{"id":1,"b":2}', "s.jsonl": bom + b'{"id":1,"a":1}\n{"id":1,"b":2}\n',
             "a.fix": bom + b"35=D\x0155=X\x01", "b.fix": b"35=E\x01"}
    assert run(tmp_path, files, "merge", "a.json", "b.json") == (0, '{"id":1,"a":1,"b":2}\n', "")
    assert run(tmp_path, files, "merge", "--stream", "--key", "/id", "s.jsonl") == (0, '{"id":1,"a":1,"b":2}\n', "")
    assert run(tmp_path, files, "conflate", "--key", "/id", "s.jsonl") == (0, '{"id":1,"b":2}\n', "")
    assert run(tmp_path, files, "merge", "a.fix", "b.fix") == (0, "35=E\x0155=X\x01\n", "")


def test_bytes_that_are_not_utf8_are_named_with_their_offset(tmp_path: Path) -> None:
    # orjson said "str is not valid UTF-8: surrogates not allowed: line 1 column 1 (char 0)".
    files = {"a.json": b'{"id":1,"a":"caf\xe9"}', "b.json": b'{"id":1}', "s.jsonl": b'{"id":1}\n{"id":"\xc3"}\n'}
    code, out, err = run(tmp_path, files, "merge", "a.json", "b.json")
    assert (code, out) == (3, "")
    assert "a.json: invalid JSON message: not UTF-8 text: byte 0xe9 at byte offset 16" in err and "iconv" in err
    code, out, err = run(tmp_path, files, "merge", "--stream", "--key", "/id", "s.jsonl")
    assert (code, out) == (3, "")
    assert "s.jsonl:2: invalid JSON message: not UTF-8 text: byte 0xc3 at byte offset 7" in err
    utf16 = '{"id":1}'.encode("utf-16")  # with its byte order mark
    code, out, err = run(tmp_path, {"w.json": utf16}, "merge", "w.json", "w.json")
    assert (code, out) == (3, "")
    assert "not UTF-8 text: byte 0xff at byte offset 0 (the text is UTF-16)" in err and "iconv -f utf-16 -t utf-8" in err


def test_a_lone_surrogate_escape_gets_a_hint_about_surrogate_pairs(tmp_path: Path) -> None:
    code, out, err = run(tmp_path, {"a.json": rb'{"id":1,"a":"\ud800"}'}, "merge", "a.json", "a.json")
    assert (code, out) == (3, "")
    assert "no low surrogate" in err and "surrogate pair, such as \\ud83d\\ude00" in err


def test_the_brokers_codec_writes_a_merge_of_a_document_deeper_than_orjson_writes() -> None:
    # orjson reads 1024 levels but writes 255: a delta publish onto a stored record 300
    # levels deep failed with "cannot write JSON message: Recursion limit reached".
    from ampsctl.messages.json_codec import JSON

    def nested(levels: int) -> bytes:
        return b'{"b":[1.5,' * levels + b'"x"' + b"]}" * levels

    stored = b'{"id":1,"a":' + nested(150) + b"}"
    merged = JSON.merge(JSON.parse(stored), JSON.parse(b'{"id":1,"c":-0.0,"d":[[],{}]}'))
    assert JSON.serialize(merged) == stored[:-1] + b',"c":-0.0,"d":[[],{}]}'


def test_objects_nested_as_deep_as_json_is_read_are_merged_and_diffed(tmp_path: Path) -> None:
    # 1000 levels parse (orjson reads 1024); merge and diff recursed and gave up with
    # "JSON document nested too deeply to merge or diff".
    def deep(leaf: bytes) -> bytes:
        return b'{"id":1,"a":' + b'{"b":' * 1000 + leaf + b"}" * 1000 + b"}"

    files = {"old.json": deep(b"1"), "new.json": deep(b"2")}
    code, out, err = run(tmp_path, files, "merge", "old.json", "new.json")
    assert (code, out, err) == (0, deep(b"2").decode() + "\n", "")
    code, out, err = run(tmp_path, files, "diff", "old.json", "new.json", "--key", "/id")
    assert (code, out, err) == (0, deep(b"2").decode() + "\n", "")
    code, out, err = run(tmp_path, files, "diff", "old.json", "old.json", "--key", "/id")
    assert (code, out, err) == (0, '{"id":1}\n', "")


def test_nan_infinity_and_overflowing_numbers_get_hints_that_fit(tmp_path: Path) -> None:
    # All three said "each message must be one complete JSON object", which they were.
    cases = {
        "nan.json": ('{"id":"é","a":NaN}', "NaN and Infinity are not JSON numbers"),
        "inf.json": ('{"id":1,"a":-Infinity}', "NaN and Infinity are not JSON numbers"),
        "big.json": ('{"id":1,"a":1e400}', "a JSON number must fit a double"),
    }
    for name, (text, hint) in cases.items():
        code, out, err = run(tmp_path, {name: text.encode()}, "merge", name, name)
        assert (code, out) == (3, ""), name
        assert f"{name}: invalid JSON message:" in err and f"hint: {hint}" in err, err
