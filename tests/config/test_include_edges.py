"""<Include> edge cases found by the bad-input round: nested includes at the top level of a
fragment, text-only fragments, and messages that point at an element in another file."""

from __future__ import annotations

import os
from pathlib import Path

from lxml import etree

from ampsctl.config.lint import LintOptions, lint_paths
from ampsctl.config.loader import LoadedConfig, load_config


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def load(tmp_path: Path, files: dict[str, str]) -> LoadedConfig:
    write(tmp_path, files)
    return load_config(str(tmp_path / "amps.xml"), {})


def pos(config: LoadedConfig, node: etree._Element) -> str:
    location = config.locate(node)
    return f"{Path(os.path.relpath(location.path, tmp_dir(config))).as_posix()}:{location.line}:{location.col}"


def tmp_dir(config: LoadedConfig) -> str:
    return os.path.dirname(config.path)


def findings(tmp_path: Path, files: dict[str, str], main: str | None = None) -> list[str]:
    write(tmp_path, files)
    report = lint_paths([main or str(tmp_path / "amps.xml")], LintOptions(env={}, jobs=1))
    return [f"{Path(os.path.relpath(f.location.path, tmp_path)).as_posix()}:{f.location.line}:{f.location.col} {f.code} {f.message}" for f in report.findings]


def test_an_include_at_the_top_level_of_an_included_file_is_expanded(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": "<AMPSConfig>\n  <Name>demo</Name>\n  <Include>sub/a.xml</Include>\n</AMPSConfig>\n",
            "sub/a.xml": "<Admin><InetAddr>8085</InetAddr></Admin>\n<Include>deeper/b.xml</Include>\n",
            "sub/deeper/b.xml": "<Logging>\n  <Target><Protocol>stdout</Protocol><Level>info</Level></Target>\n</Logging>\n",
        },
    )
    assert [el.tag for el in config.root if isinstance(el.tag, str)] == ["Name", "Admin", "Logging"]
    assert config.root.find(".//Include") is None
    assert pos(config, config.root.find("Logging/Target")) == "sub/deeper/b.xml:2:3"
    assert pos(config, config.root.find("Admin")) == "sub/a.xml:1:1"


def test_findings_inside_a_nested_top_level_include_are_reported(tmp_path):
    found = findings(
        tmp_path,
        {
            "amps.xml": "<AMPSConfig>\n  <Name>demo</Name>\n  <Include>sub/a.xml</Include>\n</AMPSConfig>\n",
            "sub/a.xml": "<Include>deeper/b.xml</Include>\n",
            "sub/deeper/b.xml": "\n<Bogus/>\n",
        },
    )
    assert found == ["sub/deeper/b.xml:2:1 GEN-006 unknown element <Bogus> in <AMPSConfig>"]


def test_an_included_file_may_hold_just_a_value(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": "<AMPSConfig>\n  <Name><Include>name.txt</Include></Name>\n  <Admin><InetAddr>a<Include>port.txt</Include>b</InetAddr></Admin>\n</AMPSConfig>\n",
            "name.txt": "amps-ny-1\n",
            "port.txt": ":8085<!-- c -->:",
        },
    )
    assert config.root.findtext("Name") == "amps-ny-1\n"
    assert etree.tostring(config.root.find("Admin/InetAddr"), encoding="unicode") == "<InetAddr>a:8085<!-- c -->:b</InetAddr>"


def test_text_before_the_first_element_of_an_included_file_is_kept(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": '<AMPSConfig><Name>a</Name><Admin><Include>x.xml</Include><Include comment="true">x.xml</Include></Admin></AMPSConfig>',
            "x.xml": "text<Interval>1s</Interval>",
        },
    )
    admin = etree.tostring(config.root.find("Admin"), encoding="unicode")
    assert admin == (
        "<Admin>text<Interval>1s</Interval><!-- Start <Include>x.xml</Include> -->text<Interval>1s</Interval>"
        "<!-- End <Include>x.xml</Include> --></Admin>"
    )


def test_a_name_from_an_included_file_is_not_reported_empty(tmp_path):
    found = findings(tmp_path, {"amps.xml": "<AMPSConfig>\n  <Name><Include>name.txt</Include></Name>\n</AMPSConfig>\n", "name.txt": "amps-ny-1"})
    assert found == []


def test_stray_text_is_named_and_located(tmp_path):
    found = findings(
        tmp_path,
        {
            "amps.xml": "<AMPSConfig>\n  <Name>x</Name>\n  <Include>notes.txt</Include>\n  <SOW>\n    oops <Topic><Name>a</Name><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName></Topic>\n  </SOW>\n</AMPSConfig>\n",
            "notes.txt": "hello world\n",
        },
    )
    assert found == [
        "amps.xml:2:3 XSD-001 text 'hello world' after <Name> in <AMPSConfig>; only elements are allowed here",
        "amps.xml:5:5 XSD-001 <SOW> holds text 'oops'; only elements are allowed here",
    ]


def test_an_earlier_definition_in_another_file_is_named_with_its_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # paths in messages are as given: relative here
    topic = "<Topic><Name>orders</Name><MessageType>json</MessageType><FileName>./sow/%n.sow</FileName></Topic>"
    found = findings(
        tmp_path,
        {
            "amps.xml": f"<AMPSConfig>\n  <Name>x</Name>\n  <SOW>\n    {topic}\n    <Include>conf/t.xml</Include>\n    {topic}\n  </SOW>\n</AMPSConfig>\n",
            "conf/t.xml": f"\n{topic}\n",
        },
        "amps.xml",
    )
    duplicates = [f for f in found if "SOWT-028" in f]
    assert duplicates == [
        "amps.xml:6:5 SOWT-028 Topic 'orders' (json) is already defined on line 4",
        "conf/t.xml:2:1 SOWT-028 Topic 'orders' (json) is already defined on line 4 of amps.xml",
    ]


def test_an_include_of_a_device_is_refused_without_reading_it(tmp_path):
    found = findings(tmp_path, {"amps.xml": "<AMPSConfig>\n  <Name>x</Name>\n  <Include>/dev/zero</Include>\n</AMPSConfig>\n"})
    assert found == ["amps.xml:3:3 GEN-008 '/dev/zero' is a device, not a config file"]


def test_an_include_of_a_fifo_without_a_writer_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    found = findings(tmp_path, {"amps.xml": "<AMPSConfig>\n  <Name>x</Name>\n  <Include>pipe</Include>\n</AMPSConfig>\n"})
    assert found == []  # an empty fragment, as an empty file


def test_an_include_that_holds_elements_is_reported(tmp_path):
    found = findings(
        tmp_path,
        {"amps.xml": "<AMPSConfig>\n  <Name>x</Name>\n  <Admin><Include>x.xml<InetAddr>8085</InetAddr></Include></Admin>\n</AMPSConfig>\n", "x.xml": "<Interval>1s</Interval>"},
    )
    assert found == ["amps.xml:3:10 GEN-008 <Include> holds an element <InetAddr>; it may only hold a file path"]


_TOPIC = "<Topic><Name>{}</Name><MessageType>json</MessageType></Topic>"  # SOWT-004: no FileName


def _sow(tmp_path: Path, body: str, files: dict[str, str]) -> list[str]:
    main = f"<AMPSConfig>\n<Name>x</Name>\n<SOW>\n{body}\n</SOW>\n</AMPSConfig>\n"
    return [f.split(" SOWT-004 ")[1] for f in findings(tmp_path, {"amps.xml": main, **files}) if " SOWT-004 " in f]


def test_a_suppression_before_an_include_covers_all_it_includes(tmp_path):
    two = _TOPIC.format("a") + "\n" + _TOPIC.format("b") + "\n"
    body = "<!-- ampsctl: disable=SOWT-004 scratch topics -->\n<Include>two.xml</Include>\n" + _TOPIC.format("c")
    assert _sow(tmp_path, body, {"two.xml": two}) == ["Topic 'c' is persistent but has no FileName"]


def test_a_suppression_at_the_end_of_an_included_file_stays_in_it(tmp_path):
    last = _TOPIC.format("a") + "\n<!-- ampsctl: disable=SOWT-004 scratch topics -->\n"
    body = "<Include>last.xml</Include>\n<Include>other.xml</Include>\n" + _TOPIC.format("c")
    found = _sow(tmp_path, body, {"last.xml": last, "other.xml": _TOPIC.format("b")})
    assert found == ["Topic 'c' is persistent but has no FileName", "Topic 'b' is persistent but has no FileName"]  # by path


def test_a_suppression_before_a_nested_include_covers_only_that_include(tmp_path):
    outer = _TOPIC.format("a") + "\n<!-- ampsctl: disable=SOWT-004 scratch -->\n<Include>inner.xml</Include>\n" + _TOPIC.format("b")
    inner = _TOPIC.format("i1") + _TOPIC.format("i2")
    found = _sow(tmp_path, "<Include>outer.xml</Include>", {"outer.xml": outer, "inner.xml": inner})
    assert found == ["Topic 'a' is persistent but has no FileName", "Topic 'b' is persistent but has no FileName"]


def test_include_attributes_are_checked_as_the_xsd_would(tmp_path):
    found = findings(
        tmp_path,
        {
            "amps.xml": '<AMPSConfig>\n  <Name>x</Name>\n  <Include comment="maybe" x="1">a.xml</Include>\n  <Include comment="false">a.xml</Include>\n</AMPSConfig>\n',
            "a.xml": "",
        },
    )
    assert found == [
        "amps.xml:3:3 XSD-001 <Include> attribute 'x' is not allowed",
        "amps.xml:3:3 XSD-002 'maybe' is not a valid value for <Include> attribute 'comment'",
    ]
