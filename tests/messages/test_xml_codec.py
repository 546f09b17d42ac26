"""The XML codec: parse/serialize, delta merge element by element (spec §6) and diff (§7)."""

from __future__ import annotations

from functools import reduce

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from ampsctl.errors import InputError
from ampsctl.messages.codec import Codec
from ampsctl.messages.xml import XML, XmlDocument


def doc(text: str) -> XmlDocument:
    return XML.parse(text.encode())


def text(d: XmlDocument | None) -> str | None:
    return None if d is None else XML.serialize(d).decode()


def test_codec_implements_the_protocol() -> None:
    assert isinstance(XML, Codec) and XML.name == "xml"


def test_round_trip_and_content_equality() -> None:
    raw = b'<Order update="full"><Symbol>IBM</Symbol><Leg>1</Leg><Leg>2.5</Leg><Empty/></Order>'
    assert XML.serialize(XML.parse(raw)) == raw
    assert doc("<a>\n  <b>1</b>\n</a>") == doc("<a><b>1</b></a>")  # layout whitespace is not content
    assert doc("<a><b>1</b></a>") != doc("<a><b>2</b></a>")
    assert doc('<a x="1"/>') != doc('<a x="2"/>')


def test_record_reads_a_document() -> None:
    from ampsctl.filter.evaluate import matches
    from ampsctl.filter.parser import parse

    assert matches(parse("/Order/Qty > 10 AND /Order/@id = 7"), XML.record(doc('<Order id="7"><Qty>11</Qty></Order>')))


@pytest.mark.parametrize("raw", [b"", b"   ", b"<a><b></a>", b"\x00\xff\x89PNG\r\n", b"{\"id\": 1}"])
def test_garbage_is_an_input_error(raw: bytes) -> None:
    with pytest.raises(InputError, match="malformed XML") as info:
        XML.parse(raw)
    assert info.value.code == "XML"


# --- delta publish -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "delta", "merged"),
    [
        # V1: repeated (anonymous) elements are replaced whole
        ("<m><id>42</id><contents><packages><box>chocolates</box></packages><packages><bowl>noodles</bowl></packages></contents></m>",
         "<m><id>42</id><contents><packages><basket>eggs</basket></packages></contents></m>",
         "<m><id>42</id><contents><packages><basket>eggs</basket></packages></contents></m>"),
        # V2: absent is unchanged, a delta cannot remove a field
        ("<m><id>42</id><flowers>roses</flowers></m>", "<m><id>42</id></m>", "<m><id>42</id><flowers>roses</flowers></m>"),
        # V7: objects merge element by element
        ("<m><id>1</id><c><x>1</x><y>2</y></c></m>", "<m><id>1</id><c><x>9</x></c></m>", "<m><id>1</id><c><x>9</x><y>2</y></c></m>"),
        # V9: a type change replaces (leaf -> object and object -> leaf)
        ("<m><a>x</a></m>", "<m><a><b>1</b></a></m>", "<m><a><b>1</b></a></m>"),
        ("<m><a><b>1</b></a></m>", "<m><a>x</a></m>", "<m><a>x</a></m>"),
        # a present empty element is NULL and replaces; the element itself stays
        ("<m><a>x</a><b>y</b></m>", "<m><a/></m>", "<m><a/><b>y</b></m>"),
        # attributes merge; an empty element replaces an object's content whatever its
        # attributes (seed 004: the root of a subdocument is replaced); the delta root does not
        ('<m v="1"><a k="1" j="2">x</a></m>', '<m w="2"><a k="9">y</a></m>', '<m v="1" w="2"><a k="9" j="2">y</a></m>'),
        ('<m><a k="1" j="2"><b>1</b></a></m>', '<m><a k="2"/></m>', '<m><a k="2" j="2"/></m>'),
        ('<m k="1"><b>1</b></m>', '<m k="2"/>', '<m k="2"><b>1</b></m>'),
        # new elements are appended; a single element replaced by an array and back
        ("<m><a>1</a></m>", "<m><z>2</z><a>3</a></m>", "<m><a>3</a><z>2</z></m>"),
        ("<m><a>1</a><b/></m>", "<m><a>2</a><a>3</a></m>", "<m><a>2</a><a>3</a><b/></m>"),
        # an empty delta root changes nothing
        ("<m><a>1</a></m>", "<m/>", "<m><a>1</a></m>"),
    ],
)
def test_merge_element_by_element(base: str, delta: str, merged: str) -> None:
    b, d = doc(base), doc(delta)
    assert text(XML.merge(b, d)) == merged
    assert (text(b), text(d)) == (base, delta)  # pure: inputs unchanged


def test_merge_v4_two_workers() -> None:
    stored = doc("<o><id>735</id><customer>Patrick</customer><item>90123</item><qty>1000</qty><state>new</state></o>")
    merged = reduce(XML.merge, [doc("<o><id>735</id><inventory>available</inventory></o>"),
                                doc("<o><id>735</id><credit>approved</credit></o>")], stored)
    assert merged == doc("<o><id>735</id><customer>Patrick</customer><item>90123</item><qty>1000</qty>"
                         "<state>new</state><inventory>available</inventory><credit>approved</credit></o>")


def test_merge_into_nothing_is_an_insert_and_roots_must_match() -> None:
    assert XML.merge(None, doc("<a><b>1</b></a>")) == doc("<a><b>1</b></a>")
    with pytest.raises(InputError, match="does not match"):
        XML.merge(doc("<a/>"), doc("<b/>"))


# --- delta subscribe ---------------------------------------------------------------------------


def test_diff_d1_key_and_changed_fields() -> None:
    old = doc("<o><order>3</order><customer>Patrick</customer><status>new</status><qty>1000</qty></o>")
    new = doc("<o><order>3</order><customer>Patrick</customer><status>pending</status><qty>1000</qty></o>")
    assert text(XML.diff(old, new, ["/o/order"])) == "<o><order>3</order><status>pending</status></o>"
    assert text(XML.diff(old, new, ["/o/order"], send_keys=False)) == "<o><status>pending</status></o>"


def test_diff_d3_unchanged_and_d4_insert() -> None:
    same = doc("<o><id>1</id><a>1</a></o>")
    assert text(XML.diff(same, same, ["/o/id"])) == "<o><id>1</id></o>"
    assert XML.diff(same, same, ["/o/id"], no_empties=True) is None
    assert XML.diff(None, same, ["/o/id"]) == same


def test_diff_d5_select_list() -> None:
    old, new = doc("<o><id>1</id><a>1</a><b>1</b></o>"), doc("<o><id>1</id><a>1</a><b>2</b></o>")
    assert XML.diff(old, new, ["/o/id"], select=["/o/id", "/o/a"], no_empties=True) is None
    assert text(XML.diff(old, new, ["/o/id"], select=["/o/b"])) == "<o><id>1</id><b>2</b></o>"


def test_diff_d7_nested_leaves_attributes_and_arrays() -> None:
    old = doc('<o id="1" s="a"><c><p>1</p><q>2</q></c><l>1</l><l>2</l></o>')
    new = doc('<o id="1" s="b"><c><p>1</p><q>3</q></c><l>1</l><l>2</l><l>3</l></o>')
    assert text(XML.diff(old, new, ["/o/@id"])) == '<o id="1" s="b"><c><q>3</q></c><l>1</l><l>2</l><l>3</l></o>'
    # an object whose attribute changed and whose fields did not goes out with its fields (an
    # empty element would empty it at merge)
    old, new = doc('<o><c k="1"><p>1</p></c></o>'), doc('<o><c k="2"><p>1</p></c></o>')
    assert text(XML.diff(old, new, [])) == '<o><c k="2"><p>1</p></c></o>'
    assert XML.merge(old, XML.diff(old, new, [])) == new


def test_diff_of_a_leaf_root() -> None:
    assert text(XML.diff(doc("<v>1</v>"), doc("<v>2</v>"), [])) == "<v>2</v>"
    assert XML.diff(doc("<v>1</v>"), doc("<v>1</v>"), [], no_empties=True) is None


def test_conflation_as_the_seed_shows() -> None:  # D2
    states = [f"<r><id>99</id><status>{s}</status><notes>{n}</notes><xref>82</xref></r>" for s, n in
              [("open", "none"), ("questioned", "none"), ("questioned", "jcarlo hold"), ("cleared", "none"), ("open", "none")]]
    deltas = [XML.diff(doc(a), doc(b), ["/r/id"]) for a, b in zip(states, states[1:])]
    assert text(reduce(XML.merge, deltas)) == "<r><id>99</id><status>open</status><notes>none</notes></r>"


# --- properties --------------------------------------------------------------------------------

_texts = st.one_of(st.none(), st.text(alphabet="ab1 .<&", max_size=4))
_attrs = st.dictionaries(st.sampled_from(["x", "y"]), st.text(alphabet="ab1 <&\"", max_size=3), max_size=2)
_trees = st.recursive(
    st.tuples(st.sampled_from(["a", "b", "c"]), _attrs, _texts, st.just(())),
    lambda kids: st.tuples(st.sampled_from(["a", "b", "c"]), _attrs, _texts, st.lists(kids, max_size=3).map(tuple)),
    max_leaves=8,
)


def _build(tree: tuple, tag: str | None = None) -> etree._Element:
    name, attrs, value, children = tree
    element = etree.Element(tag or name, attrs)
    element.text = value if not children else None
    for child in children:
        element.append(_build(child))
    return element


_docs = _trees.map(lambda tree: XmlDocument(_build(tree, "r")))


@given(_docs)
def test_round_trip(d: XmlDocument) -> None:
    raw = XML.serialize(d)
    assert XML.parse(raw) == d
    canonical = XML.serialize(XML.parse(raw))  # a fixed point ("<r></r>" reads back as "<r/>")
    assert XML.serialize(XML.parse(canonical)) == canonical


@given(_docs)
def test_merging_an_empty_delta_changes_nothing(d: XmlDocument) -> None:
    assert XML.merge(d, doc("<r/>")) == d


@given(_docs, _docs)
def test_merging_a_delta_twice_equals_once(d: XmlDocument, delta: XmlDocument) -> None:
    before = text(delta)
    once = XML.merge(d, delta)
    assert XML.merge(once, delta) == once and text(delta) == before


@given(_docs, _docs, st.booleans(), st.booleans())
def test_merging_the_diff_rebuilds_the_new_state(old: XmlDocument, delta: XmlDocument, send_keys: bool, no_empties: bool) -> None:
    new = XML.merge(old, delta)  # an additive change: new has every field of old
    # A key field identifies the record, so it never changes between old and new.
    keys = ["/r/@x"] if old.root.get("x") is not None and old.root.get("x") == new.root.get("x") else []
    diffed = XML.diff(old, new, keys, send_keys=send_keys, no_empties=no_empties)
    assert XML.merge(old, diffed) == new if diffed is not None else old == new


def test_diff_sends_nested_key_fields_outside_the_select_list() -> None:
    # As with JSON: a nested key was dropped with its unselected parent element.
    old, new = doc("<o><a><b>1</b><z>1</z></a><c>1</c></o>"), doc("<o><a><b>1</b><z>2</z></a><c>2</c></o>")
    assert text(XML.diff(old, new, ["/o/a/b"], select=["/o/c"])) == "<o><a><b>1</b></a><c>2</c></o>"
    assert text(XML.diff(old, new, ["/o/a/b"], select=["/o/c"], send_keys=False)) == "<o><c>2</c></o>"
    assert text(XML.diff(old, new, ["/o/a/@k"], select=["/o/c"])) == "<o><c>2</c></o>"  # absent key: nothing to send
    keyed = doc('<o><a k="7"><z>1</z></a><c>2</c></o>')
    assert text(XML.diff(keyed, keyed, ["/o/a/@k"], select=["/o/c"])) == '<o><a k="7"/></o>'
