"""Conformance of XML delta handling through ``ampsctl delta`` (spec/messages.md §2.2, §6, §7).

Runs the real command in this process (``ampsctl.cli.app.main``) on files in a temporary
directory.
"""

from __future__ import annotations

from pathlib import Path

from delta_cli import run_delta as run


def test_diff_of_messages_with_different_roots_is_a_clear_error(tmp_path: Path) -> None:
    # Every path starts at the root, so <A> and <B> share no field; the whole new message
    # used to come out as if it were a delta, which does not even merge onto the old state.
    files = {"old.xml": b"<A><x>1</x></A>", "new.xml": b"<B><x>1</x></B>"}
    code, out, err = run(tmp_path, files, "diff", "old.xml", "new.xml")
    assert (code, out) == (3, "")
    assert "new.xml: XML root <B> of the new message does not match the old message's <A>" in err
    assert "hint:" in err and "Traceback" not in err


def test_diff_roots_in_different_namespaces_are_named_with_their_namespace(tmp_path: Path) -> None:
    files = {"old.xml": b'<ns:a xmlns:ns="urn:x"><ns:b>1</ns:b></ns:a>', "new.xml": b'<ns:a xmlns:ns="urn:y"><ns:b>1</ns:b></ns:a>'}
    code, out, err = run(tmp_path, files, "diff", "old.xml", "new.xml")
    assert (code, out) == (3, "")
    assert "<ns:a> (namespace urn:y) of the new message does not match the old message's <ns:a> (namespace urn:x)" in err


def test_a_comment_inside_a_value_does_not_cut_the_value_in_a_merge(tmp_path: Path) -> None:
    # The text after the comment (a tail in the tree) was lost: the merge stored <b>1</b>.
    files = {"old.xml": b"<a><b>0</b><c>x</c></a>", "delta.xml": b"<a><b>1<!--why-->2</b></a>", "pi.xml": b"<a><c>3<?p?>4</c></a>"}
    code, out, err = run(tmp_path, files, "merge", "old.xml", "delta.xml", "pi.xml")
    assert (code, err) == (0, "")
    assert out == "<a><b>12</b><c>34</c></a>\n"


def test_a_comment_inside_a_value_is_not_a_change_in_a_diff(tmp_path: Path) -> None:
    # The value 12 did not change; only text before the comment was compared ("1" != "12").
    files = {"old.xml": b"<a><id>7</id><b>12</b></a>", "new.xml": b"<a><id>7</id><b>1<!--c-->2</b></a>"}
    code, out, err = run(tmp_path, files, "diff", "old.xml", "new.xml", "--key", "/a/id", "--no-empties")
    assert (code, out, err) == (0, "", "")


def test_diff_keeps_namespace_prefixes_as_written(tmp_path: Path) -> None:
    # The delta's elements were built without the namespace map, so lxml named the prefixes
    # itself: <ns0:a xmlns:ns0="urn:x"><ns0:b>, and a default namespace became ns0: too.
    files = {
        "old.xml": b'<ns:a xmlns:ns="urn:x"><ns:id>1</ns:id><ns:b>1</ns:b></ns:a>',
        "new.xml": b'<ns:a xmlns:ns="urn:x"><ns:id>1</ns:id><ns:b>2</ns:b></ns:a>',
        "old2.xml": b'<a xmlns="urn:d"><b>1</b><c>1</c></a>',
        "new2.xml": b'<a xmlns="urn:d"><b>2</b><c>1</c></a>',
    }
    code, out, err = run(tmp_path, files, "diff", "old.xml", "new.xml")
    assert (code, err) == (0, "")
    assert out == '<ns:a xmlns:ns="urn:x"><ns:b>2</ns:b></ns:a>\n'
    code, out, err = run(tmp_path, files, "diff", "old2.xml", "new2.xml")
    assert (code, out, err) == (0, '<a xmlns="urn:d"><b>2</b></a>\n', "")
    code, out, err = run(tmp_path, files, "diff", "old2.xml", "old2.xml")
    assert (code, out, err) == (0, '<a xmlns="urn:d"/>\n', "")


def test_namespaced_key_paths_use_the_prefix_as_written(tmp_path: Path) -> None:
    # Spec §2.2: the prefix is part of the step name (/ns:Order). lxml names elements
    # {uri}Order, so no path reached into a namespaced message: every key was "missing".
    files = {
        "old.xml": b'<ns:a xmlns:ns="urn:x" xmlns:q="urn:q" q:k="7"><ns:id>1</ns:id><ns:b>1</ns:b></ns:a>',
        "new.xml": b'<ns:a xmlns:ns="urn:x" xmlns:q="urn:q" q:k="7"><ns:id>1</ns:id><ns:b>2</ns:b></ns:a>',
    }
    code, out, err = run(tmp_path, files, "diff", "old.xml", "new.xml", "--key", "/ns:a/ns:id", "--key", "/ns:a/@q:k")
    assert (code, err) == (0, "")
    assert out == '<ns:a xmlns:ns="urn:x" xmlns:q="urn:q" q:k="7"><ns:id>1</ns:id><ns:b>2</ns:b></ns:a>\n'
    code, out, err = run(tmp_path, files, "diff", "old.xml", "old.xml", "--key", "/ns:a/ns:id", "--no-empties")
    assert (code, out, err) == (0, "", "")


def test_a_default_namespace_adds_nothing_to_the_path(tmp_path: Path) -> None:
    stream = b'<a xmlns="urn:d"><id>1</id><b>1</b></a>\n<a xmlns="urn:d"><id>2</id></a>\n<a xmlns="urn:d"><id>1</id><c>3</c></a>\n'
    code, out, err = run(tmp_path, {"s.xml": stream}, "merge", "--stream", "--key", "/a/id", "s.xml")
    assert (code, err) == (0, "")
    assert out.splitlines() == ['<a xmlns="urn:d"><id>1</id><b>1</b><c>3</c></a>', '<a xmlns="urn:d"><id>2</id></a>']


def test_xml_nested_too_deeply_is_a_clear_error(tmp_path: Path) -> None:
    # libxml2's own text was "Excessive depth in document: 256, use XML_PARSE_HUGE option".
    deep = b"<r>" + b"<b>" * 300 + b"1" + b"</b>" * 300 + b"</r>"
    code, out, err = run(tmp_path, {"d.xml": deep}, "merge", "d.xml", "d.xml")
    assert (code, out) == (3, "")
    assert "d.xml: XML message nested too deeply: more than 256 levels of elements (line 1, column 771)" in err
    assert "XML_PARSE_HUGE" not in err
    ok = b"<r>" + b"<b>" * 250 + b"1" + b"</b>" * 250 + b"</r>"
    code, out, err = run(tmp_path, {"ok.xml": ok}, "merge", "ok.xml", "ok.xml")
    assert (code, out, err) == (0, ok.decode() + "\n", "")


def test_an_empty_key_element_is_null_not_missing(tmp_path: Path) -> None:
    # Spec §2.2: <id/> is NULL. As a key it keys the record on NULL, as JSON null and FIX 55=
    # do; it was reported as a missing key field and the message refused.
    stream = b'<a><id/><b>1</b></a>\n<a><id/><c>1</c></a>\n<a><id>2</id></a>\n<a k=""><x/></a>\n<a k=""><y/></a>\n'
    code, out, err = run(tmp_path, {"s.xml": stream.replace(b'<a k=""><x/></a>\n<a k=""><y/></a>\n', b"")}, "merge", "--stream", "--key", "/a/id", "s.xml")
    assert (code, err) == (0, "")
    assert out.splitlines() == ["<a><id/><b>1</b><c>1</c></a>", "<a><id>2</id></a>"]
    attrs = b'<a k=""><x/></a>\n<a k=""><y/></a>\n'
    assert run(tmp_path, {"t.xml": attrs}, "merge", "--stream", "--key", "/a/@k", "t.xml") == (0, '<a k=""><x/><y/></a>\n', "")
    files = {"old.xml": b"<a><id/><b>1</b></a>", "new.xml": b"<a><id/><b>2</b></a>", "none.xml": b"<a><b>2</b></a>"}
    assert run(tmp_path, files, "diff", "old.xml", "new.xml", "--key", "/a/id") == (0, "<a><id/><b>2</b></a>\n", "")
    code, out, err = run(tmp_path, files, "diff", "old.xml", "none.xml", "--key", "/a/id")  # absent is still missing
    assert (code, out) == (3, "") and "key field /a/id is missing" in err


def test_replacing_a_long_array_takes_linear_time(tmp_path: Path) -> None:
    # Each new element was inserted at an index, a walk of the children: replacing an array
    # of 100,000 elements took a minute (60,000: about 20 s). Now well under a second.
    import time

    old = b"<r><id>1</id>" + b"<a>1</a>" * 60_000 + b"<z/></r>"
    delta = b"<r>" + b"<a>2</a>" * 60_000 + b"</r>"
    started = time.monotonic()
    code, out, err = run(tmp_path, {"old.xml": old, "delta.xml": delta}, "merge", "old.xml", "delta.xml")
    assert time.monotonic() - started < 8
    assert (code, err) == (0, "")
    assert out == "<r><id>1</id>" + "<a>2</a>" * 60_000 + "<z/></r>\n"


def test_a_value_over_the_parsers_size_limit_is_a_clear_error(tmp_path: Path) -> None:
    # libxml2 said "Resource limit exceeded: Text node too long, try XML_PARSE_HUGE".
    files = {"t.xml": b"<a><b>" + b"x" * 10_000_100 + b"</b></a>", "at.xml": b'<a b="' + b"x" * 10_000_100 + b'"/>'}
    for name in files:
        code, out, err = run(tmp_path, files, "merge", name, name)
        assert (code, out) == (3, "")
        assert f"{name}: XML message has a text or attribute value longer than 10,000,000 bytes (line 1, column" in err
        assert "XML_PARSE_HUGE" not in err


def test_a_republish_that_empties_an_object_reaches_a_delta_subscriber(tmp_path: Path) -> None:
    # An object emptied by a full republish while one of its attributes changed went out as
    # <a k="2"/>, which merge read as "update the attributes only": the subscriber kept <b>.
    # An empty element is now a full replacement (seed 004: an update to the root of a
    # subdocument replaces it), so that delta empties the object.
    files = {"old.xml": b'<O><id>1</id><a k="1" j="5"><b>1</b></a><c>x</c></O>', "new.xml": b'<O><id>1</id><a k="2" j="5"/><c>x</c></O>'}
    code, out, err = run(tmp_path, files, "diff", "old.xml", "new.xml", "--key", "/O/id")
    assert (code, out, err) == (0, '<O><id>1</id><a k="2"/></O>\n', "")
    (tmp_path / "delta.xml").write_text(out)
    code, out, err = run(tmp_path, {}, "merge", "old.xml", "delta.xml")
    assert (code, out, err) == (0, '<O><id>1</id><a k="2" j="5"/><c>x</c></O>\n', "")


def test_an_attribute_change_of_an_object_keeps_its_fields_at_the_subscriber(tmp_path: Path) -> None:
    # The other side of the rule above: an object whose attribute changed and whose fields did
    # not goes out with its fields, since an empty element now empties the object.
    files = {"old.xml": b'<O><id>1</id><a k="1"><b>1</b><d>2</d></a></O>', "new.xml": b'<O><id>1</id><a k="2"><b>1</b><d>2</d></a></O>'}
    code, out, err = run(tmp_path, files, "diff", "old.xml", "new.xml", "--key", "/O/id")
    assert (code, out, err) == (0, '<O><id>1</id><a k="2"><b>1</b><d>2</d></a></O>\n', "")
    (tmp_path / "delta.xml").write_text(out)
    code, out, err = run(tmp_path, {}, "merge", "old.xml", "delta.xml")
    assert (code, out, err) == (0, '<O><id>1</id><a k="2"><b>1</b><d>2</d></a></O>\n', "")


def test_a_namespaced_attribute_a_delta_adds_keeps_its_prefix(tmp_path: Path) -> None:
    # The stored message did not declare urn:q, so lxml made up a prefix for the new attribute:
    # <a xmlns:ns0="urn:q" ns0:k="2">, which /O/a/@q:k (a filter, a key) no longer reads.
    files = {"old.xml": b"<O><id>1</id><a>1</a></O>", "delta.xml": b'<O xmlns:q="urn:q" q:r="1"><id>1</id><a q:k="2">1</a></O>',
             "nested.xml": b'<O><id>1</id><a xmlns:z="urn:z" z:k="3">1</a></O>'}
    code, out, err = run(tmp_path, files, "merge", "old.xml", "delta.xml", "nested.xml")
    assert (code, err) == (0, "")
    assert out == '<O xmlns:q="urn:q" xmlns:z="urn:z" q:r="1"><id>1</id><a q:k="2" z:k="3">1</a></O>\n'


def test_entities_declared_in_a_utf16_message_are_refused_too(tmp_path: Path) -> None:
    # The check looked for the ASCII bytes "<!ENTITY", which UTF-16 does not contain: the message
    # was read with "x" for x&b;y and merged into a message that used &b; without declaring it.
    text = '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE a [<!ENTITY b "B">]><a><v>x&b;y</v></a>'
    files = {"old.xml": text.encode("utf-16"), "delta.xml": b"<a><w>1</w></a>"}
    code, out, err = run(tmp_path, files, "merge", "old.xml", "delta.xml")
    assert (code, out) == (3, "")
    assert "old.xml: XML message declares entities in its DOCTYPE (&b;), which are not expanded" in err
    # a UTF-16 message without entities is read as before
    files = {"plain.xml": '<?xml version="1.0" encoding="UTF-16"?><a><v>é</v></a>'.encode("utf-16")}
    assert run(tmp_path, files, "merge", "plain.xml", "delta.xml") == (0, "<a><v>é</v><w>1</w></a>\n", "")


def test_an_entity_of_an_external_dtd_is_refused(tmp_path: Path) -> None:
    # The external DTD is not read, so &b; stayed an unexpanded reference: the value read as
    # "xy", and the merged message used &b; without the DOCTYPE, which no parser then reads.
    files = {"old.xml": b'<!DOCTYPE a SYSTEM "a.dtd"><a><v>x&b;y</v></a>', "delta.xml": b"<a><w>1</w></a>"}
    code, out, err = run(tmp_path, files, "merge", "old.xml", "delta.xml")
    assert (code, out) == (3, "")
    assert "old.xml: XML message uses the entity &b;, which is not expanded (ampsctl does not read DTDs)" in err
    # predefined entities and character references are text as usual
    files = {"ok.xml": b'<!DOCTYPE a SYSTEM "a.dtd"><a><v>x&amp;&#233;y</v></a>'}
    assert run(tmp_path, files, "merge", "ok.xml", "delta.xml") == (0, "<a><v>x&amp;éy</v><w>1</w></a>\n", "")
