"""Syntax the ``regex`` package accepts but PCRE refuses or reads otherwise is refused, with
its offset and a hint (regexdialect.py), through filter check/test and validate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from inprocess import run_inprocess as ampsctl


def check_json(expr: str) -> tuple[int, dict]:
    code, out, _ = ampsctl("filter", "check", "--format", "json", "--", expr)
    return code, json.loads(out)


@pytest.mark.parametrize(("pattern", "what", "offset", "hint"), [
    ("abc{e<=1}", "fuzzy-matching constraint {e<=1}", 3, "PCRE reads {e<=1} as literal text: escape the brace \\{"),
    ("a{e<=0}", "fuzzy-matching constraint {e<=0}", 1, "escape the brace"),  # dropped by the package, literal in PCRE
    ("(?:ab){i<=1,d<=1}", "fuzzy-matching constraint", 6, "escape the brace"),
    ("a{,3}", "the count {,3}", 1, "write {0,3}"),
    ("x(?r)y", "inline flag (?r)", 1, "remove (?r)"),
    ("(?p)x", "inline flag (?p)", 0, "remove (?p)"),
    ("(?b)x", "inline flag (?b)", 0, "remove (?b)"),
    ("(?e)x", "inline flag (?e)", 0, "remove (?e)"),
    ("(?w)x", "inline flag (?w)", 0, "remove (?w)"),
    ("(?f)x", "inline flag (?f)", 0, "remove (?f)"),
    ("(?i-w:x)", "inline flag (?w)", 0, "remove (?w)"),
    ("(?a)x", "inline flag (?a)", 0, "ASCII mode"),
    ("(?V0)x", "inline flag (?V0)", 0, "remove (?V0)"),
    ("a\\mb", "word-start escape \\m", 1, "\\b(?=\\w)"),
    ("a\\M", "word-end escape \\M", 1, "\\b(?<=\\w)"),
    ("(a)\\g<1>", "\\g, which PCRE reads differently", 3, "(?P=name)"),
    ("(a)\\g1", "\\g, which PCRE reads differently", 3, "\\1"),
    ("a\\N", "\\N, which PCRE reads as any character but a newline", 1, "[^\\n]"),
    ("\\u0041", "the escape \\u", 0, "\\x41"),
    ("a\\v", "\\v, which PCRE reads as any vertical space", 1, "\\x0b"),
    ("[a\\v]", "\\v", 2, "\\x0b"),
    ("a\\Z", "\\Z", 1, "write $"),
    ("(?x) a # comment \n b{e<=1}", "fuzzy-matching constraint", 20, "escape the brace"),
    # PCRE 8: every top-level alternative of a lookbehind has a fixed length
    ("(?<=a+)b", "lookbehind that can match strings of different lengths", 0, "(?<=ab|cde)"),
    ("x(?<!\\d{2,3})y", "lookbehind", 1, "\\K"),
    ("(?<=a(b|cd))e", "lookbehind", 0, "fixed length"),
    ("(?<=(a)\\1)b", "lookbehind", 0, "fixed length"),
    ("(?(?<=a*)b|c)", "lookbehind", 2, "fixed length"),
])
def test_a_regex_package_only_construct_is_refused_with_offset_and_hint(pattern: str, what: str, offset: int, hint: str) -> None:
    code, result = check_json(f"/a LIKE '{pattern}'")
    assert code == 3, result
    assert result["position"] == 8
    assert what in result["error"] and f"(offset {offset} of the pattern)" in result["error"], result
    assert hint in result["hint"], result


def test_a_fuzzy_pattern_no_longer_matches_a_near_miss() -> None:
    # Before: true ("abd" is one substitution from "abc"); PCRE looks for the text abc{e<=1}.
    code, out, err = ampsctl("filter", "test", "--data", '{"a": "abd"}', "--", "/a LIKE 'abc{e<=1}'")
    assert code == 3 and "fuzzy-matching constraint" in err and "Traceback" not in err


def test_a_pattern_read_from_a_field_is_refused_when_used() -> None:
    code, out, err = ampsctl("filter", "test", "--data", json.dumps({"a": "abd", "p": "ab(?e)c"}), "--",
                             "REGEXP_MATCH(/a, /p) = 'abd'")
    assert code == 3 and "inline flag (?e)" in out + err


@pytest.mark.parametrize(("pattern", "text", "expected"), [
    ("abc\\{e<=1}", "abc{e<=1}", "true"),  # escaped: the literal text, as PCRE reads it
    ("(?|(a)|(b))\\1", "bb", "true"),  # branch reset is PCRE
    ("[[a]--[b]]", "a--b]", "true"),  # no set operations outside V1: literal, as in PCRE
    ("a{2,3}", "aa", "true"),
    ("a{x}", "a{x}", "true"),
    ("(?i)ABC", "abc", "true"),
    ("(?x) a \\  b # \\m is only a comment\n", "a b", "true"),
    ("(?#\\m)a", "a", "true"),
    ("\\\\\\\\m", "\\m", "true"),  # \\ in the filter is one backslash: the pattern is \\m
    ("a\\z", "a", "true"),
    ("(?s-i:a.b)", "a\nb", "true"),
    ("(?<=ab|cde)f", "cdef", "true"),  # alternatives of different fixed lengths are PCRE
    ("(?<=a(?:b|c)){1}d", "acd", "true"),
    ("(?<!\\d{3})x", "12x", "true"),
    ("(?<=^|,)x", ",x", "true"),
])
def test_pcre_patterns_still_work(pattern: str, text: str, expected: str) -> None:
    code, out, err = ampsctl("filter", "test", "--data", json.dumps({"a": text}), "--", f"/a LIKE '{pattern}'")
    assert (code, out.strip()) == (0, expected), err


def test_validate_refuses_a_topic_pattern_with_a_regex_package_flag(tmp_path: Path) -> None:
    config = tmp_path / "c.xml"
    config.write_text("<AMPSConfig><Name>t</Name><SOW><Topic><Name>x</Name><Pattern>^orders(?r)/.*</Pattern>"
                      "<MessageType>json</MessageType><FileName>./sow/%n.sow</FileName><Key>/id</Key></Topic>"
                      "</SOW></AMPSConfig>")
    done = subprocess.run([sys.executable, "-m", "ampsctl", "validate", str(config)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "SOWT-031" in done.stdout and "inline flag (?r), which PCRE does not have (offset 7" in done.stdout
