"""The loader maps every node of the expanded tree back to its original file:line:col.

``locate`` gives the '<' of an element's start tag, ``locate_text`` the first non-blank
character of its text. Positions must be exact through multi-line start tags, several
elements on one line, included files (resolved from the including file's directory) and
``${VAR}`` expansion (values longer or shorter than the reference, or holding newlines).
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest
from lxml import etree

from ampsctl.cli.app import main
from ampsctl.config.loader import LoadedConfig, load_config
from ampsctl.errors import InputError


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def load(tmp_path: Path, files: dict[str, str], env: dict[str, str] | None = None, main_file: str = "amps.xml") -> LoadedConfig:
    write(tmp_path, files)
    return load_config(str(tmp_path / main_file), env or {})


def pos(config: LoadedConfig, node: etree._Element, text: bool = False) -> str:
    """'relative/path:line:col' of a node (or of its text value)."""
    location = config.locate_text(node) if text else config.locate(node)
    prefix = os.path.dirname(config.path)
    path = os.path.relpath(location.path, prefix) if os.path.isabs(location.path) else location.path
    return f"{Path(path).as_posix()}:{location.line}:{location.col}"


def one(config: LoadedConfig, xpath: str) -> etree._Element:
    [node] = config.root.xpath(xpath)
    return node


# --------------------------------------------------------------------------- plain documents


def test_elements_and_text_values(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": """<?xml version="1.0" encoding="UTF-8"?>
<AMPSConfig>
  <Name>demo</Name>
  <Admin>
    <InetAddr>
        8085
    </InetAddr>
  </Admin>
</AMPSConfig>
"""
        },
    )
    assert pos(config, config.root) == "amps.xml:2:1"
    assert pos(config, one(config, "Name")) == "amps.xml:3:3"
    assert pos(config, one(config, "Name"), text=True) == "amps.xml:3:9"
    assert pos(config, one(config, "Admin")) == "amps.xml:4:3"
    assert pos(config, one(config, "Admin/InetAddr")) == "amps.xml:5:5"
    assert pos(config, one(config, "Admin/InetAddr"), text=True) == "amps.xml:6:9"  # first non-blank


def test_multi_line_start_tags(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": """<AMPSConfig
    note="a > b"
    other='x > y'>
  <Name>demo</Name>
  <Admin
      a="1"
      b="2"
  ><InetAddr>8085</InetAddr></Admin>
  <Include
    comment="false"
  >part.xml</Include>
</AMPSConfig>
""",
            "part.xml": "<Modules/>\n",
        },
    )
    assert pos(config, config.root) == "amps.xml:1:1"
    assert pos(config, one(config, "Name")) == "amps.xml:4:3"
    assert pos(config, one(config, "Admin")) == "amps.xml:5:3"
    assert pos(config, one(config, "Admin/InetAddr")) == "amps.xml:8:4"
    assert pos(config, one(config, "Admin/InetAddr"), text=True) == "amps.xml:8:14"
    assert pos(config, one(config, "Modules")) == "part.xml:1:1"


def test_elements_on_one_line(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": "<AMPSConfig><Name>demo</Name><SOW><Topic><Name>orders</Name><MessageType>json</MessageType>"
            "<Durability>transient</Durability></Topic></SOW></AMPSConfig>\n"
        },
    )
    assert pos(config, config.root) == "amps.xml:1:1"
    assert pos(config, one(config, "Name")) == "amps.xml:1:13"
    assert pos(config, one(config, "Name"), text=True) == "amps.xml:1:19"
    assert pos(config, one(config, "SOW")) == "amps.xml:1:30"
    assert pos(config, one(config, "SOW/Topic")) == "amps.xml:1:35"
    assert pos(config, one(config, "SOW/Topic/Name")) == "amps.xml:1:42"
    assert pos(config, one(config, "SOW/Topic/MessageType")) == "amps.xml:1:61"
    assert pos(config, one(config, "SOW/Topic/MessageType"), text=True) == "amps.xml:1:74"
    assert pos(config, one(config, "SOW/Topic/Durability")) == "amps.xml:1:92"


def test_comments_pis_and_cdata_do_not_shift_positions(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": """<!-- <AMPSConfig> in a comment -->
<?editor hint="<Name>"?>
<AMPSConfig><!-- <Admin> --><Name><![CDATA[<demo>]]></Name>
  <?pi <x>?><Admin><InetAddr>8085</InetAddr></Admin>
</AMPSConfig>
"""
        },
    )
    assert pos(config, config.root) == "amps.xml:3:1"
    assert pos(config, one(config, "Name")) == "amps.xml:3:29"
    assert one(config, "Name").text == "<demo>"
    assert pos(config, one(config, "Admin")) == "amps.xml:4:13"
    assert pos(config, one(config, "Admin/InetAddr")) == "amps.xml:4:20"
    [comment] = config.root.xpath("comment()")
    assert pos(config, comment) == "amps.xml:3:13"


def test_columns_count_characters_not_bytes(tmp_path):
    config = load(tmp_path, {"amps.xml": "<AMPSConfig><Name>café✓</Name><Admin/></AMPSConfig>\n"})
    assert pos(config, one(config, "Admin")) == "amps.xml:1:31"


def test_tabs_and_crlf(tmp_path):
    (tmp_path / "amps.xml").write_bytes(b"<AMPSConfig>\r\n\t<Name>demo</Name>\r\n\t\t<Admin/>\r\n</AMPSConfig>\r\n")
    config = load_config(str(tmp_path / "amps.xml"), {})
    assert pos(config, one(config, "Name")) == "amps.xml:2:2"
    assert pos(config, one(config, "Admin")) == "amps.xml:3:3"


def test_lone_cr_line_endings(tmp_path):
    (tmp_path / "amps.xml").write_bytes(b"<AMPSConfig>\r\t<Name>demo</Name>\r\r\t\t<Admin/>\r\n<SOW/>\n</AMPSConfig>\r")
    config = load_config(str(tmp_path / "amps.xml"), {})
    assert pos(config, one(config, "Name")) == "amps.xml:2:2"
    assert pos(config, one(config, "Admin")) == "amps.xml:4:3"
    assert pos(config, one(config, "SOW")) == "amps.xml:5:1"
    assert config.source_line(config.locate(one(config, "Admin"))) == "\t\t<Admin/>"


def test_parse_error_with_lone_cr_line_endings(tmp_path):
    (tmp_path / "amps.xml").write_bytes(b"<AMPSConfig>\r  <Name>x</Nam>\r</AMPSConfig>\r")
    with pytest.raises(InputError) as caught:
        load_config(str(tmp_path / "amps.xml"), {})
    assert (caught.value.location.line, caught.value.location.col) == (2, 16)


@pytest.mark.parametrize(
    ("data", "line", "col"),
    [
        (b"<AMPSConfig>\n<Name>\xc3\xa9\xc3\xa9\xff</Name></AMPSConfig>", 2, 9),  # two 2-byte characters before
        (b"<AMPSConfig>\r<Name>\xf0\x9f\x98\x80\xff</Name></AMPSConfig>", 2, 8),
    ],
)
def test_undecodable_byte_is_located_in_characters(tmp_path, data, line, col):
    (tmp_path / "amps.xml").write_bytes(data)
    with pytest.raises(InputError) as caught:
        load_config(str(tmp_path / "amps.xml"), {})
    assert (caught.value.location.line, caught.value.location.col) == (line, col)


def test_source_line_for_snippets(tmp_path):
    config = load(tmp_path, {"amps.xml": "<AMPSConfig>\n  <Name>demo</Name>\n</AMPSConfig>\n"})
    assert config.source_line(config.locate(one(config, "Name"))) == "  <Name>demo</Name>"


# ------------------------------------------------------------------------------------ includes


def test_locations_inside_included_files(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": """<AMPSConfig>
  <Name>demo</Name>
  <Logging>
    <Include>conf/logging.xml</Include>
  </Logging>
  <Admin><InetAddr>8085</InetAddr></Admin>
</AMPSConfig>
""",
            # paths inside conf/logging.xml are relative to conf/, not to the main file
            "conf/logging.xml": """<?xml version="1.0"?>
<!-- targets -->
<Target>
    <Protocol>stdout</Protocol>
</Target>
<Target><Protocol>file</Protocol><Include>parts/level.xml</Include></Target>
""",
            "conf/parts/level.xml": "\n\n   <Level>  info</Level>\n",
        },
    )
    first, second = config.root.findall("Logging/Target")
    assert pos(config, first) == "conf/logging.xml:3:1"
    assert pos(config, first.find("Protocol"), text=True) == "conf/logging.xml:4:15"
    assert pos(config, second) == "conf/logging.xml:6:1"
    assert pos(config, second.find("Protocol")) == "conf/logging.xml:6:9"
    assert pos(config, second.find("Level")) == "conf/parts/level.xml:3:4"
    assert pos(config, second.find("Level"), text=True) == "conf/parts/level.xml:3:13"
    # the main file after the include is unaffected
    assert pos(config, one(config, "Admin/InetAddr")) == "amps.xml:6:10"
    assert config.files == [str(tmp_path / "amps.xml"), str(tmp_path / "conf/logging.xml"), str(tmp_path / "conf/parts/level.xml")]


def test_same_fragment_included_twice(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": "<AMPSConfig>\n  <Name>a</Name>\n  <SOW>\n    <Include>topic.xml</Include>\n    <Include>topic.xml</Include>\n  </SOW>\n</AMPSConfig>\n",
            "topic.xml": "<Topic><Name>t</Name></Topic>\n",
        },
    )
    topics = config.root.findall("SOW/Topic")
    assert len(topics) == 2
    assert [pos(config, t.find("Name"), text=True) for t in topics] == ["topic.xml:1:14", "topic.xml:1:14"]


def test_include_keeps_surrounding_text(tmp_path):
    config = load(
        tmp_path,
        {"amps.xml": "<AMPSConfig><Name>a</Name><Include>empty.xml</Include><Admin/></AMPSConfig>\n", "empty.xml": "<!-- nothing -->\n"},
    )
    assert pos(config, one(config, "Admin")) == "amps.xml:1:55"


def test_include_problems_are_located_at_the_include(tmp_path):
    config = load(tmp_path, {"amps.xml": "<AMPSConfig>\n  <Name>a</Name>\n    <Include>nope.xml</Include>\n</AMPSConfig>\n"})
    [finding] = config.findings
    assert (finding.code, finding.location.line, finding.location.col) == ("GEN-008", 3, 5)
    assert finding.message == f"no such file: '{tmp_path / 'nope.xml'}'"


def test_include_comment_true_adds_start_and_end_comments(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": '<AMPSConfig>\n  <Name>a</Name>\n  <Include comment="true">admin.xml</Include>\n</AMPSConfig>\n',
            "admin.xml": "<Admin/>\n",
        },
    )
    comments = [c.text for c in config.root.iter(etree.Comment)]
    assert comments == [" Start <Include>admin.xml</Include> ", " End <Include>admin.xml</Include> "]
    for comment in config.root.iter(etree.Comment):
        assert pos(config, comment) == "amps.xml:3:3"  # synthetic nodes point at the <Include>


def test_include_comment_true_in_config_dump(tmp_path, monkeypatch):
    write(
        tmp_path,
        {
            "amps.xml": '<AMPSConfig>\n  <Name>a</Name>\n  <Include comment="true">parts/admin.xml</Include>\n</AMPSConfig>\n',
            "parts/admin.xml": "<Admin><InetAddr>8085</InetAddr></Admin>\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main(["config", "dump", "amps.xml"])
    assert exited.value.code in (0, None)
    dumped = out.getvalue()
    start = dumped.index("<!-- Start <Include>parts/admin.xml</Include> -->")
    body = dumped.index("<Admin><InetAddr>8085</InetAddr></Admin>")
    end = dumped.index("<!-- End <Include>parts/admin.xml</Include> -->")
    assert start < body < end
    assert "<Include" not in dumped.replace("<Include>parts/admin.xml</Include> -->", "")


# --------------------------------------------------------------------------------- ${VAR}


@pytest.mark.parametrize(
    "value", ["x", "a-much-longer-value-than-the-reference", ""], ids=["shorter", "longer", "empty"]
)
def test_positions_inside_and_after_an_expanded_variable(tmp_path, value):
    config = load(
        tmp_path,
        {"amps.xml": "<AMPSConfig>\n  <Name>${NAME}</Name><Admin><InetAddr>8085</InetAddr></Admin>\n  <Modules/>\n</AMPSConfig>\n"},
        env={"NAME": value},
    )
    name = one(config, "Name")
    assert (name.text or "") == value
    assert pos(config, name) == "amps.xml:2:3"
    if value:
        assert pos(config, name, text=True) == "amps.xml:2:9"  # inside the value: the '$'
    assert pos(config, one(config, "Admin")) == "amps.xml:2:23"
    assert pos(config, one(config, "Admin/InetAddr")) == "amps.xml:2:30"
    assert pos(config, one(config, "Admin/InetAddr"), text=True) == "amps.xml:2:40"
    assert pos(config, one(config, "Modules")) == "amps.xml:3:3"


def test_text_after_an_empty_expansion(tmp_path):
    config = load(tmp_path, {"amps.xml": "<AMPSConfig><Name>${EMPTY}demo</Name></AMPSConfig>\n"}, env={"EMPTY": ""})
    assert pos(config, one(config, "Name"), text=True) == "amps.xml:1:27"


def test_value_with_newlines(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": "<AMPSConfig>\n  <Name>${MULTI}</Name><Description>${MULTI}</Description>\n"
            "  <Admin>\n    <InetAddr>8085</InetAddr>\n  </Admin>\n</AMPSConfig>\n"
        },
        env={"MULTI": "line one\nline two\nline three"},
    )
    assert one(config, "Name").text == "line one\nline two\nline three"
    assert pos(config, one(config, "Name"), text=True) == "amps.xml:2:9"
    assert pos(config, one(config, "Description")) == "amps.xml:2:24"
    assert pos(config, one(config, "Description"), text=True) == "amps.xml:2:37"
    assert pos(config, one(config, "Admin")) == "amps.xml:3:3"
    assert pos(config, one(config, "Admin/InetAddr")) == "amps.xml:4:5"


def test_markup_inside_a_value_maps_to_the_reference(tmp_path):
    config = load(
        tmp_path,
        {"amps.xml": "<AMPSConfig>\n  <Name>a</Name>\n  <Admin>${FRAGMENT}</Admin>\n  <Modules/>\n</AMPSConfig>\n"},
        env={"FRAGMENT": "\n<InetAddr>8085</InetAddr>\n<FileName>stats.db</FileName>\n"},
    )
    assert pos(config, one(config, "Admin/InetAddr")) == "amps.xml:3:10"
    assert pos(config, one(config, "Admin/FileName")) == "amps.xml:3:10"
    assert pos(config, one(config, "Modules")) == "amps.xml:4:3"


def test_several_references_on_one_line(tmp_path):
    config = load(
        tmp_path,
        {"amps.xml": "<AMPSConfig><Name>${A}${B}-${A}</Name><Admin/></AMPSConfig>\n"},
        env={"A": "alpha", "B": ""},
    )
    assert one(config, "Name").text == "alpha-alpha"
    assert pos(config, one(config, "Admin")) == "amps.xml:1:39"


def test_variable_in_included_file(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": "<AMPSConfig>\n  <Name>${SITE}</Name>\n  <Include>admin.xml</Include>\n</AMPSConfig>\n",
            "admin.xml": "<Admin>\n  <InetAddr>${PORT}</InetAddr><FileName>x</FileName>\n</Admin>\n",
        },
        env={"SITE": "new-york-1", "PORT": "8085"},
    )
    assert one(config, "Admin/InetAddr").text == "8085"
    assert pos(config, one(config, "Admin/FileName")) == "admin.xml:2:31"


def test_comments_are_not_expanded(tmp_path):
    config = load(
        tmp_path,
        {"amps.xml": "<AMPSConfig>\n  <!-- ${UNDEFINED_HERE} ${NAME} -->\n  <Name>${NAME}</Name><!-- ${NAME} -->\n</AMPSConfig>\n"},
        env={"NAME": "expanded"},
    )
    assert [c.text for c in config.root.iter(etree.Comment)] == [" ${UNDEFINED_HERE} ${NAME} ", " ${NAME} "]
    assert one(config, "Name").text == "expanded"
    assert config.findings == []  # an undefined reference inside a comment is not reported


def test_undefined_variables_are_reported_where_written(tmp_path):
    config = load(
        tmp_path,
        {
            "amps.xml": "<AMPSConfig>\n  <Name>${MISSING_ONE}</Name>\n  <Include>admin.xml</Include>\n</AMPSConfig>\n",
            "admin.xml": "<Admin>\n    <InetAddr>${MISSING_TWO}</InetAddr>\n</Admin>\n",
        },
    )
    where = sorted((Path(f.location.path).name, f.location.line, f.location.col, f.code) for f in config.findings)
    assert where == [("admin.xml", 2, 15, "GEN-007"), ("amps.xml", 2, 9, "GEN-007")]
    assert one(config, "Name").text == "${MISSING_ONE}"  # left as written


def test_amps_builtin_variables(tmp_path):
    config = load(tmp_path, {"amps.xml": "<AMPSConfig><Name>${AMPS_CONFIG_DIRECTORY}|${AMPS_VERSION}</Name></AMPSConfig>\n"})
    directory, version = one(config, "Name").text.split("|")
    assert directory == os.path.realpath(tmp_path)
    assert version.count(".") == 3


def test_env_mapping_replaces_the_process_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("AMPSCTL_LOADER_TEST", "from-process")
    write(tmp_path, {"amps.xml": "<AMPSConfig><Name>${AMPSCTL_LOADER_TEST}</Name></AMPSConfig>\n"})
    assert one(load_config(str(tmp_path / "amps.xml")), "Name").text == "from-process"
    assert one(load_config(str(tmp_path / "amps.xml"), {"AMPSCTL_LOADER_TEST": "given"}), "Name").text == "given"


# ---------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "line", "col", "message"),
    [
        ("<AMPSConfig>\n  <Name>a</Name>\n  <SOW>\n</AMPSConfig>\n", 4, 14, "Opening and ending tag mismatch"),
        ("<AMPSConfig>\n  <Name>a & b</Name>\n</AMPSConfig>\n", 2, 12, "xmlParseEntityRef"),
        ("<Config/>\n", 1, 1, "the root element is <Config>, not <AMPSConfig>"),
        ("<!DOCTYPE AMPSConfig SYSTEM 'x.dtd'>\n<AMPSConfig/>\n", 1, 22, "external DTD"),
    ],
)
def test_parse_errors_are_located(tmp_path, text, line, col, message):
    write(tmp_path, {"amps.xml": text})
    with pytest.raises(InputError) as caught:
        load_config(str(tmp_path / "amps.xml"), {})
    error = caught.value
    assert error.code == "GEN-001"
    assert (error.location.line, error.location.col) == (line, col)
    assert message in error.message
    assert error.message == error.message.strip()


def test_parse_error_after_an_expansion_maps_to_the_original(tmp_path):
    write(tmp_path, {"amps.xml": "<AMPSConfig>\n  <Name>${LONG}</Name>\n  <Admin>\n</AMPSConfig>\n"})
    with pytest.raises(InputError) as caught:
        load_config(str(tmp_path / "amps.xml"), {"LONG": "x" * 100})
    assert (caught.value.location.line, caught.value.location.col) == (4, 14)


# ------------------------------------------------------------------------------- encodings

_BOGUS = '<?xml version="1.0" encoding="UTF-16"?>\n<AMPSConfig>\n  <Name>caf\u00e9</Name>\n  <Admin/>\n</AMPSConfig>\n'


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark(tmp_path, codec):
    (tmp_path / "amps.xml").write_bytes(_BOGUS.encode(codec))
    config = load_config(str(tmp_path / "amps.xml"), {})
    assert config.root.findtext("Name") == "caf\u00e9"
    assert pos(config, one(config, "Admin")) == "amps.xml:4:3"


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_utf16_declaration_on_single_byte_text_is_refused(tmp_path, bom):
    (tmp_path / "amps.xml").write_bytes(bom + _BOGUS.encode("utf-8"))
    with pytest.raises(InputError) as caught:
        load_config(str(tmp_path / "amps.xml"), {})
    assert caught.value.code == "GEN-001"
    assert caught.value.message == 'the XML declaration says encoding="UTF-16", but the file is not UTF-16 (its declaration is one byte per character)'
    assert (caught.value.location.line, caught.value.location.col) == (1, 31)


@pytest.mark.parametrize("codec", ["utf-32", "utf-32-be"])
def test_utf32_is_refused_with_a_hint(tmp_path, codec):
    data = _BOGUS.replace("UTF-16", "UTF-32").encode(codec)
    if codec.endswith("be"):
        data = b"\x00\x00\xfe\xff" + data
    (tmp_path / "amps.xml").write_bytes(data)
    with pytest.raises(InputError) as caught:
        load_config(str(tmp_path / "amps.xml"), {})
    assert "the file is UTF-32" in caught.value.message
    assert caught.value.hint == "save the file as UTF-8"
