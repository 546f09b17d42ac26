"""The ConfigModel's shared indexes give what a plain pass over the tree would.

Rules read SOW entries through indexes built in one pass (``_SowIndex``) and through values
grouped by text (``child_texts``); these tests pin them against the obvious computation on
configs with the awkward cases: synonyms, repeated children, comments, empty and missing
values, several SOW sections.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest
from lxml import etree

from ampsctl.config.loader import load_config
from ampsctl.config.model import DESCENDANT_TAGS, ENTRY_SYNONYMS, SOW_SYNONYMS, ConfigModel, Section

CONFIG = """<AMPSConfig>
  <Name>demo</Name>
  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key><Key>/region</Key>
      <FileName>./sow/%n.sow</FileName>
      <Durability>transient</Durability>
      <Durability>persistent</Durability>
    </Topic>
    <!-- a comment between entries -->
    <TopicDefinition>
      <Topic>quotes</Topic>
      <Name>quotes-new</Name>
      <MessageType>nvfix</MessageType>
      <FileName> sow//quotes.sow </FileName>
      <Duration>persistent</Duration>
    </TopicDefinition>
    <Topic>
      <Name></Name>
      <MessageType>json</MessageType>
      <FileName></FileName>
    </Topic>
    <Topic>
      <!-- before the name: children are fetched by position, comments and PIs count -->
      <Name>positions</Name><?pi x?>
      <MessageType>json</MessageType>
      <Key>/id</Key><!-- between keys --><Key>/acct</Key>
      <Expiration>1d</Expiration><Expiration>2d</Expiration>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
    <Queue><Name>orders</Name><MessageType>json</MessageType><UnderlyingTopic>orders</UnderlyingTopic></Queue>
    <View><Name>by-region</Name><MessageType>json</MessageType><Filter>/x &gt; 1</Filter></View>
  </SOW>
  <TopicMetaData>
    <Topic><Name>fills</Name><MessageType>json</MessageType><FileName>sow/%n.sow</FileName><!-- c --></Topic>
    <Topic><Name>Orders</Name><MessageType>json</MessageType><FileName>./sow/../sow/%n.sow</FileName></Topic>
  </TopicMetaData>
  <Actions><Action><On><Module>amps-action-on-schedule</Module></On></Action></Actions>
</AMPSConfig>
"""


@pytest.fixture()
def model(tmp_path: Path) -> ConfigModel:
    path = tmp_path / "amps.xml"
    path.write_text(CONFIG)
    return ConfigModel(load_config(str(path), {}))


def _elements(el: etree._Element) -> list[etree._Element]:
    return [child for child in el if isinstance(child.tag, str)]


def _canonical(el: etree._Element) -> str:
    return ENTRY_SYNONYMS.get(el.tag, el.tag)


def test_entries_and_their_sections(model: ConfigModel) -> None:
    expected = [el for sow in model.root.all("SOW") for el in _elements(sow)]
    assert [e.el for e in model.sow_entries] == expected
    assert [e.order for e in model.sow_entries] == list(range(len(expected)))
    for entry in model.sow_entries:
        assert entry.tag == entry.el.tag
        assert entry.kind == SOW_SYNONYMS.get(entry.el.tag, entry.el.tag)
        names = {_canonical(child) for child in _elements(entry.el)}
        assert set(entry.names()) == names
        for name in names:
            group = [child for child in _elements(entry.el) if _canonical(child) == name]
            assert entry.all(name) == group
            assert entry.first(name) is group[0]
            assert entry.text(name) == (group[0].text or "").strip()
        assert entry.all("Missing") == [] and entry.first("Missing") is None and entry.text("Missing") is None
        assert entry.name == entry.text("Name") and entry.message_type == entry.text("MessageType")
        assert entry.legacy_children == any(child.tag in ENTRY_SYNONYMS for child in _elements(entry.el))


def test_name_and_kind_indexes(model: ConfigModel) -> None:
    entries = model.sow_entries
    assert model.topics == [e for e in entries if e.kind == "Topic"]
    assert model.entries("Queue", "View") == [e for e in entries if e.kind in ("Queue", "View")]
    assert model.entries_except("Topic") == [e for e in entries if e.kind != "Topic"]
    assert model.unnamed_entries == [e for e in entries if not e.name]
    assert model.entries_by_name == {n: [e for e in entries if e.name == n] for n in {e.name for e in entries if e.name}}
    assert model.repeated_names == ["orders"]
    assert model.legacy_entries == [e for e in entries if e.tag != e.kind or e.legacy_children]
    by_type: dict[str | None, list] = {}
    for topic in model.topics:
        by_type.setdefault(topic.message_type, []).append(topic)
    assert model.topics_by_type == by_type


@pytest.mark.parametrize("name", ["Name", "Key", "FileName", "Durability", "Missing"])
def test_topics_with_and_without(model: ConfigModel, name: str) -> None:
    assert model.topics_with(name) == [t for t in model.topics if t.has(name)]
    assert model.topics_without(name) == [t for t in model.topics if not t.has(name)]
    assert model.entries_with(name) == [e for e in model.sow_entries if e.has(name)]


@pytest.mark.parametrize("name", ["Durability", "FileName", "Key", "Name", "Expiration", "UnderlyingTopic", "Filter", "Missing"])
@pytest.mark.parametrize("first_only", [False, True])
@pytest.mark.parametrize("kind", ["Topic", "Queue", "View"])
def test_child_texts(model: ConfigModel, name: str, first_only: bool, kind: str) -> None:
    expected: dict[str, list] = {}
    for entry in model.entries(kind):
        elements = [child for child in _elements(entry.el) if _canonical(child) == name]
        for el in elements[:1] if first_only else elements:
            expected.setdefault((el.text or "").strip(), []).append((entry, el))
    found = model.child_texts(name, kind, first_only=first_only)
    assert found == expected
    assert [list(group) for group in found.values()] == [list(group) for group in expected.values()]  # file order


def test_sow_files(model: ConfigModel) -> None:
    expected: dict[str, list] = {}
    for topic in model.topics:
        path = topic.text("FileName")
        if topic.text("Durability") == "transient" or not path or "${" in path:
            continue
        if "%n" in path:
            if not topic.name or not topic.message_type:
                continue
            path = path.replace("%n", f"{topic.name}.{topic.message_type}")
        expected.setdefault(posixpath.normpath(path), []).append(topic)
    assert model.sow_files == expected
    assert list(model.sow_files["sow/Orders.json.sow"]) == [model.entries_by_name["Orders"][0]]


@pytest.mark.parametrize("template", ["./sow/%n.sow", "sow//%n", "%n", "/a/./%n/../b/%n.x", "//%n", "a/../../%n", "%n/..", "..%n.."])
@pytest.mark.parametrize("value", ["a.json", "..json", "a.b.c", "x.%n", "...", "A..B", "a b.json"])
def test_percent_n_expands_inside_one_segment(template: str, value: str) -> None:
    """sow_files normalises a FileName template once: the same as normalising each path."""
    assert posixpath.normpath(template.replace("%n", value)) == posixpath.normpath(template).replace("%n", value)


def test_descendants(model: ConfigModel) -> None:
    for tag in [*DESCENDANT_TAGS, "Key", "Topic"]:
        assert model.descendants(tag) == list(model.config.root.iter(tag))


def test_section_resolves_synonyms_in_file_order() -> None:
    el = etree.fromstring("<T><Duration>a</Duration><x/><!-- c --><Durability>b</Durability><Duration>c</Duration></T>")
    section = Section(el, ENTRY_SYNONYMS)
    assert [d.text for d in section.all("Durability")] == ["a", "b", "c"]
    assert section.text("Durability") == "a" and section.first("x") is el[1]
    assert section.names() == ["Durability", "x"]
    plain = Section(el)
    assert [d.text for d in plain.all("Duration")] == ["a", "c"] and plain.text("Durability") == "b"


def test_a_regex_nested_too_deeply_is_reported_not_raised() -> None:
    from ampsctl.config.model import regex_error, topic_matches

    nested = "(" * 1000 + "a" + ")" * 1000  # the regex package recurses once per group
    assert regex_error(nested) == "groups nested too deeply to compile"
    assert topic_matches(nested, "a") is False
