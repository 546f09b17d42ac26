"""Documents that are well-formed but odd: XML namespaces (AMPS configs use none)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.config.lint import LintOptions, lint_paths
from ampsctl.config.loader import load_config
from ampsctl.errors import InputError


def lint(tmp_path: Path, text: str) -> list[tuple[str, int, int, str, str | None]]:
    path = tmp_path / "amps.xml"
    path.write_text(text, encoding="utf-8")
    report = lint_paths([str(path)], LintOptions(env={}, jobs=1))
    return [(f.code, f.location.line, f.location.col, f.message, f.hint) for f in report.findings]


def test_a_prefixed_element_is_reported_not_a_crash(tmp_path):
    found = lint(tmp_path, '<AMPSConfig xmlns:x="urn:x">\n  <Name>n</Name>\n  <x:Foo/>\n  <Admin><InetAddr>8085</InetAddr></Admin>\n</AMPSConfig>\n')
    assert [(code, line, col, message) for code, line, col, message, _ in found] == [("GEN-006", 3, 3, "unknown element <x:Foo> in <AMPSConfig>")]
    assert "no XML namespace; this one is in 'urn:x'" in (found[0][4] or "")


def test_positions_after_a_prefixed_element_stay_exact(tmp_path):
    path = tmp_path / "amps.xml"
    path.write_text('<AMPSConfig xmlns:x="urn:x">\n  <Name>n</Name>\n  <x:Foo/>\n  <Admin/>\n</AMPSConfig>\n', encoding="utf-8")
    config = load_config(str(path), {})
    [foo] = [el for el in config.root if isinstance(el.tag, str) and el.tag.endswith("Foo")]
    admin = config.root.find("Admin")
    assert (config.locate(foo).line, config.locate(foo).col) == (3, 3)
    assert (config.locate(admin).line, config.locate(admin).col) == (4, 3)


def test_an_element_in_a_default_namespace_names_it(tmp_path):
    found = lint(tmp_path, '<AMPSConfig>\n  <Name>n</Name>\n  <SOW xmlns="urn:y"/>\n</AMPSConfig>\n')
    assert [(code, line, col) for code, line, col, _, _ in found] == [("XSD-001", 3, 3)]
    assert "this one is in 'urn:y'" in (found[0][4] or "")


def test_a_root_element_in_a_namespace(tmp_path):
    path = tmp_path / "amps.xml"
    path.write_text('<AMPSConfig xmlns="urn:x">\n  <Name>n</Name>\n</AMPSConfig>\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_config(str(path), {})
    assert caught.value.message == "the root element is <AMPSConfig> in the XML namespace 'urn:x', not <AMPSConfig>"
    assert (caught.value.location.line, caught.value.location.col) == (1, 1)
    assert "remove the xmlns declaration" in (caught.value.hint or "")


def test_a_config_on_one_line_with_many_findings_is_not_quadratic(tmp_path):
    import time

    topic = "<Topic><Name>t{}</Name><MessageType>json</MessageType></Topic>"  # SOWT-004 each
    body = "".join(topic.format(i) for i in range(8000))
    path = tmp_path / "amps.xml"
    prefix = "<AMPSConfig><Name>n</Name><SOW>"
    path.write_text(f"{prefix}{body}</SOW></AMPSConfig>", encoding="utf-8")
    started = time.monotonic()
    report = lint_paths([str(path)], LintOptions(env={}, jobs=1))
    elapsed = time.monotonic() - started
    found = [f for f in report.findings if f.code == "SOWT-004"]
    assert len(found) == 8000
    assert (found[1].location.line, found[1].location.col) == (1, len(prefix) + len(topic.format(0)) + 1)
    assert elapsed < 10, f"{elapsed:.1f} s: each position lookup searched the whole line again"


_PATTERN_TOPIC = "<Topic><Name>p{0}</Name><Pattern>{1}</Pattern><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName></Topic>"
_PLAIN_TOPIC = "<Topic><Name>{0}</Name><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName></Topic>"


def _sow(tmp_path: Path, entries: list[str]) -> list[tuple[str, int, int, str, str | None]]:
    return lint(tmp_path, "<AMPSConfig><Name>n</Name><SOW>\n" + "\n".join(entries) + "\n</SOW></AMPSConfig>")


def test_many_pattern_topics_are_checked_quickly(tmp_path):
    import time

    entries = [_PATTERN_TOPIC.format(i, f"^pat{i}/.*") for i in range(1000)] + [_PLAIN_TOPIC.format(f"t{i}") for i in range(1000)]
    entries.append(_PLAIN_TOPIC.format("pat999/x"))
    started = time.monotonic()
    found = _sow(tmp_path, entries)
    elapsed = time.monotonic() - started
    assert [(code, line) for code, line, _, _, _ in found] == [("SOWT-027", 2002)]
    assert elapsed < 15, f"{elapsed:.1f} s: every search compiled its pattern again"


def test_a_pattern_nested_too_deeply_to_search_is_not_a_crash(tmp_path):
    deep = "(" * 1200 + "a" + ")" * 1200
    found = _sow(tmp_path, [_PATTERN_TOPIC.format(0, deep), _PLAIN_TOPIC.format("a")])
    assert all(code != "SOWT-027" for code, *_ in found)


@pytest.mark.parametrize(
    ("pattern", "topic", "captured"),
    [("^orders/.*", "orders/x", True), ("^orders/.*", "other/orders/x", False), ("^ab*c", "ac", True), ("^a|b", "b", True),
     ("^(?i)ORD", "orders", True), ("^a\\.b", "a.b", True), ("ord", "orders", True), ("^ab+", "abbb", True)],
)
def test_pattern_capture_with_and_without_a_literal_prefix(tmp_path, pattern, topic, captured):
    found = _sow(tmp_path, [_PATTERN_TOPIC.format(0, pattern), _PLAIN_TOPIC.format(topic)])
    assert any(code == "SOWT-027" for code, *_ in found) is captured


def test_many_queues_over_many_recorded_patterns_are_checked_quickly(tmp_path):
    import time

    txlog = "".join(f"<Topic><Name>^t{i}.*</Name><MessageType>json</MessageType></Topic>" for i in range(700))
    queues = "".join(f"<Queue><Name>q{i}</Name><UnderlyingTopic>^t{i}.*</UnderlyingTopic><MessageType>json</MessageType></Queue>" for i in range(700))
    started = time.monotonic()
    found = lint(tmp_path, f"<AMPSConfig><Name>n</Name><TransactionLog><JournalDirectory>./j</JournalDirectory>{txlog}</TransactionLog><SOW>{queues}</SOW></AMPSConfig>")
    elapsed = time.monotonic() - started
    assert not [f for f in found if f[0] in ("Q-003", "Q-004")]
    assert elapsed < 15, f"{elapsed:.1f} s: every pair compiled its patterns again (22 s before)"


def test_every_unknown_element_of_a_parent_is_reported(tmp_path):
    # libxml2 stops at the first unexpected child of a parent; the unknown names after it count too
    found = lint(
        tmp_path,
        "<AMPSConfig>\n<Name>x</Name>\n<Admin><InetAddr>8085</InetAddr><Intervl>1s</Intervl><FileNme>x</FileNme></Admin>\n<Bogus1/>\n<Bogus2/>\n</AMPSConfig>\n",
    )
    assert [(code, line, col, message) for code, line, col, message, _ in found] == [
        ("GEN-006", 3, 33, "unknown element <Intervl> in <Admin>"),
        ("GEN-006", 3, 54, "unknown element <FileNme> in <Admin>"),
        ("GEN-006", 4, 1, "unknown element <Bogus1> in <AMPSConfig>"),
        ("GEN-006", 5, 1, "unknown element <Bogus2> in <AMPSConfig>"),
    ]
    assert found[0][4] == "did you mean <Interval>?"


def test_attribute_names_are_shown_as_written(tmp_path):
    found = lint(tmp_path, '<AMPSConfig xml:lang="en" xmlns:a="urn:a"><Name a:x="1">n</Name></AMPSConfig>')
    assert [message for _, _, _, message, _ in found] == [
        "<AMPSConfig> attribute 'xml:lang': The attribute 'xml:lang' is not allowed",
        "<Name> attribute 'a:x': The attribute 'a:x' is not allowed",
    ]
