"""Tests for schemas/amps-config.xsd.

* the schema loads as XSD 1.0 in xmlschema and in lxml (libxml2);
* every file in valid/ validates (seed examples and fragments, wrapped in
  <AMPSConfig>, plus broad configs), every file in invalid/ is rejected and
  the first error names the element given by its ``expect-error:`` comment;
* lxml and xmlschema agree on every file and on a table of value probes;
* structural guarantees of the schema (unordered choices, <Include> everywhere);
* xmllint, when installed, agrees as well;
* when the seed documents are available, every XML fragment found in them is
  extracted automatically and validated (guards the hand extraction in valid/).

Run: .venv/bin/python -m pytest tests/schema -q
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import xmlschema
from lxml import etree

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
XSD = ROOT / "schemas" / "amps-config.xsd"
VALID = sorted((HERE / "valid").glob("*.xml"))
INVALID = sorted((HERE / "invalid").glob("*.xml"))
SEEDS_DIR = Path(os.environ.get("AMPSCTL_SEEDS_DIR", "/work/shared/seeds"))

XS = "{http://www.w3.org/2001/XMLSchema}"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lxml_schema() -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(XSD)))


@pytest.fixture(scope="module")
def xs_schema() -> xmlschema.XMLSchema10:
    return xmlschema.XMLSchema10(str(XSD))


def _lxml_check(schema: etree.XMLSchema, doc: etree._ElementTree) -> tuple[bool, str]:
    ok = schema.validate(doc)
    return ok, ("" if ok else schema.error_log[0].message)


def _xs_check(schema: xmlschema.XMLSchema10, doc: etree._ElementTree) -> tuple[bool, str]:
    # Validate the parsed tree; the schema is given explicitly, so any
    # xsi:noNamespaceSchemaLocation hint in the instance is not needed.
    errors = list(schema.iter_errors(doc))
    if not errors:
        return True, ""
    err = errors[0]
    return False, f"{err.path or ''} | {err.reason or ''}"


def _parse(path_or_text: Path | str) -> etree._ElementTree:
    if isinstance(path_or_text, Path):
        return etree.parse(str(path_or_text))
    return etree.ElementTree(etree.fromstring(path_or_text.encode("utf-8")))


def _expected_error(path: Path) -> str:
    m = re.search(r"expect-error:\s*(\S+)", path.read_text(encoding="utf-8"))
    assert m, f"{path.name} lacks an '<!-- expect-error: Element -->' comment"
    return m.group(1)


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


# --------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------


def test_xsd_loads_in_xmlschema_as_xsd10(xs_schema):
    assert isinstance(xs_schema, xmlschema.XMLSchema10)
    assert "AMPSConfig" in xs_schema.elements


def test_xsd_loads_in_lxml(lxml_schema):
    assert lxml_schema.validate(_parse("<AMPSConfig><Name>x</Name></AMPSConfig>"))


def test_test_corpus_is_not_empty():
    assert len(VALID) >= 15 and len(INVALID) >= 40
    assert any(p.name.startswith("seed000") for p in VALID)
    assert any(p.name.startswith("seed001") for p in VALID)
    assert any(p.name.startswith("seed002") for p in VALID)
    assert any(p.name.startswith("seed003") for p in VALID)


# --------------------------------------------------------------------------
# valid / invalid corpora
# --------------------------------------------------------------------------


@pytest.mark.parametrize("path", VALID, ids=_ids(VALID))
def test_valid_file(path, lxml_schema, xs_schema):
    doc = _parse(path)
    assert doc.getroot().tag == "AMPSConfig"
    ok1, msg1 = _lxml_check(lxml_schema, doc)
    ok2, msg2 = _xs_check(xs_schema, doc)
    assert ok1, f"lxml rejected {path.name}: {msg1}"
    assert ok2, f"xmlschema rejected {path.name}: {msg2}"


@pytest.mark.parametrize("path", INVALID, ids=_ids(INVALID))
def test_invalid_file(path, lxml_schema, xs_schema):
    expected = _expected_error(path)
    doc = _parse(path)  # must still be well-formed XML
    ok1, msg1 = _lxml_check(lxml_schema, doc)
    ok2, msg2 = _xs_check(xs_schema, doc)
    assert not ok1, f"lxml accepted {path.name}"
    assert not ok2, f"xmlschema accepted {path.name}"
    # the rejection must be for the intended reason
    assert expected in msg1, f"lxml error does not name {expected!r}: {msg1}"
    assert expected in msg2, f"xmlschema error does not name {expected!r}: {msg2}"


@pytest.mark.parametrize("path", VALID + INVALID, ids=_ids(VALID) + _ids(INVALID))
def test_lxml_and_xmlschema_agree_on_file(path, lxml_schema, xs_schema):
    doc = _parse(path)
    assert _lxml_check(lxml_schema, doc)[0] == _xs_check(xs_schema, doc)[0]


# --------------------------------------------------------------------------
# value probes: expected result, checked in both engines
# --------------------------------------------------------------------------

# (wrapper with {v} placeholder, value, expected validity)
TOPIC = "<SOW><Topic><Name>t</Name><{el}>{v}</{el}></Topic></SOW>"
QUEUE = "<SOW><Queue><Name>q</Name><{el}>{v}</{el}></Queue></SOW>"
TOP = "<{el}>{v}</{el}>"
OPTS = (
    "<Actions><Action><On><Module>m</Module><Options><{el}>{v}</{el}>"
    "</Options></On></Action></Actions>"
)

PROBES: list[tuple[str, str, str, bool]] = [
    # intervals (spec 3.1): documented grammar, any-case unit letters
    (TOP, "ClientMessageAgeLimit", "250us", True),
    (TOP, "ClientMessageAgeLimit", "100ms", True),
    (TOP, "ClientMessageAgeLimit", "0s", True),
    (TOP, "ClientMessageAgeLimit", "1.5h", True),
    (TOP, "ClientMessageAgeLimit", "5 s", True),
    (TOP, "ClientMessageAgeLimit", "  7d\n", True),
    (TOP, "ClientMessageAgeLimit", "2W", True),
    (TOP, "ClientMessageAgeLimit", "10NS", True),
    (TOP, "ClientMessageAgeLimit", "30", False),
    (TOP, "ClientMessageAgeLimit", "30sec", False),
    (TOP, "ClientMessageAgeLimit", "1h30m", False),
    (TOP, "ClientMessageAgeLimit", ".5s", False),
    (TOP, "ClientMessageAgeLimit", "-1s", False),
    (TOP, "ClientMessageAgeLimit", "", False),
    # byte sizes (spec 3.2)
    (TOP, "MessageMemoryLimit", "1000000", True),
    (TOP, "MessageMemoryLimit", "5MB", True),
    (TOP, "MessageMemoryLimit", "2G", True),
    (TOP, "MessageMemoryLimit", "10m", True),
    (TOP, "MessageMemoryLimit", "0.5T", True),
    (TOP, "MessageMemoryLimit", "1 kb", True),
    (TOP, "MessageMemoryLimit", "5MiB", False),
    (TOP, "MessageMemoryLimit", "5B", False),
    (TOP, "MessageMemoryLimit", "MB", False),
    # uint with exponent suffix (spec 3.3)
    (QUEUE, "MaxBacklog", "10", True),
    (QUEUE, "MaxBacklog", "10k", True),
    (QUEUE, "MaxBacklog", "2M", True),
    (QUEUE, "MaxBacklog", "1.5", False),
    (QUEUE, "MaxBacklog", "-3", False),
    (QUEUE, "MaxBacklog", "10G", False),
    # flags (spec 3.5)
    *[(TOP, "RegexTopicSupport", v, True)
      for v in ("true", "false", "True", "False", "TRUE", "FALSE", "enabled", "disabled", "1", "0")],
    (TOP, "RegexTopicSupport", "yes", False),
    (TOP, "RegexTopicSupport", "Enabled", False),
    (TOP, "RegexTopicSupport", "on", False),
    # SOW topic enums
    (TOPIC, "Durability", "persistent", True),
    (TOPIC, "Durability", "transient", True),
    (TOPIC, "Durability", "PERSISTENT", False),
    (TOPIC, "Duration", "transient", True),
    (TOPIC, "RecoveryPoint", "epoch", True),
    (TOPIC, "RecoveryPoint", "now", True),
    (TOPIC, "RecoveryPoint", "20240101T000000Z", True),
    (TOPIC, "RecoveryPoint", "creation", False),
    (TOPIC, "RecoveryPoint", "1|2|", False),
    (TOPIC, "Expiration", "enabled", True),
    (TOPIC, "Expiration", "disabled", True),
    (TOPIC, "Expiration", "30s", True),
    (TOPIC, "Expiration", "true", False),
    # queue enums and recovery points
    (QUEUE, "RecoveryPoint", "epoch", True),
    (QUEUE, "RecoveryPoint", "now", True),
    (QUEUE, "RecoveryPoint", "creation", True),
    (QUEUE, "RecoveryPoint", "13948331409633568391|1465596069899000013|", True),
    (QUEUE, "RecoveryPoint", "20240301T093000.123456Z", True),
    (QUEUE, "RecoveryPoint", "2024-03-01T09:30:00+01:00", True),
    (QUEUE, "RecoveryPoint", "recent", False),
    (QUEUE, "Semantics", "at-most-once", True),
    (QUEUE, "Semantics", "at_least_once", False),
    (QUEUE, "FairnessModel", "round-robin", True),
    (QUEUE, "FairnessModel", "roundrobin", False),
    (QUEUE, "Leasing", "sublet", True),
    (QUEUE, "ExpirationModel", "earliest", True),
    (QUEUE, "FileBackedMetadata", "enabled", True),
    # transports
    ("<Transports><Transport><{el}>{v}</{el}></Transport></Transports>", "Type", "amps-unix", True),
    ("<Transports><Transport><{el}>{v}</{el}></Transport></Transports>", "Type", "websocket", False),
    ("<Transports><Transport><{el}>{v}</{el}></Transport></Transports>", "InetAddr", "9007", True),
    ("<Transports><Transport><{el}>{v}</{el}></Transport></Transports>", "InetAddr", "host-1.example.com:9007", True),
    ("<Transports><Transport><{el}>{v}</{el}></Transport></Transports>", "InetAddr", "[::]:9007", True),
    ("<Transports><Transport><{el}>{v}</{el}></Transport></Transports>", "InetAddr", "[::1]:9007", True),
    ("<Transports><Transport><{el}>{v}</{el}></Transport></Transports>", "InetAddr", "localhost", False),
    ("<Transports><Transport><{el}>{v}</{el}></Transport></Transports>", "InetAddr", "tcp://localhost:9007", False),
    # logging
    ("<Logging><Target><{el}>{v}</{el}></Target></Logging>", "Level", "emergency", True),
    ("<Logging><Target><{el}>{v}</{el}></Target></Logging>", "Level", "INFO", False),
    ("<Logging><Target><{el}>{v}</{el}></Target></Logging>", "Levels", "info,warning, error", True),
    ("<Logging><Target><{el}>{v}</{el}></Target></Logging>", "Facility", "LOG_USER", True),
    # module options declared globally (validated lax inside any Options)
    (OPTS, "Announcements", "default", True),
    (OPTS, "Announcements", "all", True),
    (OPTS, "Announcements", "ALL", False),
    (OPTS, "Delta", "true", True),
    (OPTS, "Delta", "false", True),
    (OPTS, "Delta", "delta", False),
    (OPTS, "UpdateOnly", "False", True),
    (OPTS, "UpdateOnly", "", False),
    (OPTS, "MessageSource", "replicated", True),
    (OPTS, "MessageSource", "remote", False),
    (OPTS, "CoverageSubsetOption", "udo_coverage", True),
    # undeclared option names stay lax: anything goes
    (OPTS, "Topic", "", True),
    (OPTS, "Data", "<![CDATA[{\"a\": 1}]]>", True),
    (OPTS, "Age", "whenever", True),
    (OPTS, "SomethingCustom", "<Nested><Deep>1</Deep></Nested>", True),
]


def _probe_doc(wrapper: str, el: str, value: str) -> etree._ElementTree:
    body = wrapper.format(el=el, v=value)
    return _parse(f"<AMPSConfig><Name>x</Name>{body}</AMPSConfig>")


@pytest.mark.parametrize(
    "wrapper,el,value,expected",
    PROBES,
    ids=[f"{el}={value!r}" for _, el, value, _ in PROBES],
)
def test_value_probe(wrapper, el, value, expected, lxml_schema, xs_schema):
    doc = _probe_doc(wrapper, el, value)
    ok1, msg1 = _lxml_check(lxml_schema, doc)
    ok2, msg2 = _xs_check(xs_schema, doc)
    assert ok1 == ok2, f"engines disagree: lxml={ok1} ({msg1}) xmlschema={ok2} ({msg2})"
    assert ok1 == expected, f"expected valid={expected}, got lxml: {msg1} / xmlschema: {msg2}"


# --------------------------------------------------------------------------
# structural guarantees of the XSD itself
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def xsd_tree() -> etree._ElementTree:
    return etree.parse(str(XSD))


# complex types that intentionally do not carry the IncludeGroup
NO_INCLUDE = {"optionsType", "includeType"}


def test_every_content_model_is_an_unordered_repeatable_choice(xsd_tree):
    for ct in xsd_tree.getroot().iter(f"{XS}complexType"):
        name = ct.get("name")
        if name in NO_INCLUDE:
            continue
        model = [c for c in ct if c.tag in (f"{XS}choice", f"{XS}sequence", f"{XS}all")]
        assert len(model) == 1 and model[0].tag == f"{XS}choice", name
        assert model[0].get("minOccurs") == "0", name
        assert model[0].get("maxOccurs") == "unbounded", name


def test_no_child_element_is_required_by_the_xsd(xsd_tree):
    for el in xsd_tree.getroot().iter(f"{XS}element"):
        assert el.get("minOccurs") in (None, "0"), el.get("name")
        assert el.get("maxOccurs") in (None, "1", "unbounded"), el.get("name")


def test_include_is_allowed_in_every_complex_element(xsd_tree):
    for ct in xsd_tree.getroot().iter(f"{XS}complexType"):
        name = ct.get("name")
        if name in NO_INCLUDE:
            continue
        refs = [g.get("ref") for g in ct.iter(f"{XS}group")]
        assert "IncludeGroup" in refs, f"{name} lacks <Include>"


def test_global_elements_are_the_root_and_safe_option_names(xs_schema):
    assert set(xs_schema.elements) == {
        "AMPSConfig",
        "Announcements", "ControlTopic", "SubscriptionTopic", "CoverageSubsetOption",
        "Delta", "UpdateOnly", "MessageSource",
        "AllowSpoofing", "RequireLogon", "RequireUsername", "AllowUnverifiedPeer",
    }


def test_options_blocks_are_lax(xsd_tree):
    opts = xsd_tree.getroot().find(f"{XS}complexType[@name='optionsType']")
    assert opts.get("mixed") == "true"
    anys = list(opts.iter(f"{XS}any"))
    assert len(anys) == 1 and anys[0].get("processContents") == "lax"


SYNONYMS = [
    ("<TopicMetaData><Topic><Name>t</Name></Topic></TopicMetaData>", True),
    ("<SOW><TopicDefinition><Topic>t</Topic></TopicDefinition></SOW>", True),
    ("<SOW><QueueDefinition><Topic>q</Topic></QueueDefinition></SOW>", True),
    ("<SOW><LocalQueue><Topic>q</Topic></LocalQueue></SOW>", True),
    ("<SOW><GroupLocalQueue><Topic>q</Topic></GroupLocalQueue></SOW>", True),
    ("<SOW><ViewDefinition><Topic>v</Topic></ViewDefinition></SOW>", True),
    ("<SOW><ReplicaDefinition><Topic>c</Topic></ReplicaDefinition></SOW>", True),
    ("<SOW><Topic><Duration>transient</Duration></Topic></SOW>", True),
    ("<TransactionLog><MinJournalSize>10M</MinJournalSize></TransactionLog>", True),
    ("<SOW><Topic><RecordSize>512</RecordSize><InitialSize>2048</InitialSize>"
     "<IncrementSize>1000</IncrementSize></Topic></SOW>", True),
    # synonyms are only accepted where documented
    ("<SOW><ConflatedTopic><Duration>transient</Duration></ConflatedTopic></SOW>", False),
    ("<Transports><TransportDefinition/></Transports>", False),
    ("<TransactionLog><Topic><Topic>t</Topic></Topic></TransactionLog>", False),
]


@pytest.mark.parametrize("body,expected", SYNONYMS, ids=[b[:60] for b, _ in SYNONYMS])
def test_synonyms(body, expected, lxml_schema, xs_schema):
    doc = _parse(f"<AMPSConfig><Name>x</Name>{body}</AMPSConfig>")
    assert _lxml_check(lxml_schema, doc)[0] is expected
    assert _xs_check(xs_schema, doc)[0] is expected


# --------------------------------------------------------------------------
# xmllint (optional)
# --------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("xmllint") is None, reason="xmllint not on PATH")
@pytest.mark.parametrize("path", VALID + INVALID, ids=_ids(VALID) + _ids(INVALID))
def test_xmllint_agrees(path):
    proc = subprocess.run(
        ["xmllint", "--noout", "--schema", str(XSD), str(path)],
        capture_output=True, text=True, check=False,
    )
    assert (proc.returncode == 0) == (path in VALID), proc.stderr


# --------------------------------------------------------------------------
# automatic extraction from the seed documents (skipped when absent)
# --------------------------------------------------------------------------

# block elements found in the seeds and how to wrap them into a full config
_BLOCK_WRAP = {
    "AMPSConfig": "{x}",
    "SOW": "<AMPSConfig><Name>x</Name>{x}</AMPSConfig>",
    "Action": "<AMPSConfig><Name>x</Name><Actions>{x}</Actions></AMPSConfig>",
    "ConflatedTopic": "<AMPSConfig><Name>x</Name><SOW>{x}</SOW></AMPSConfig>",
}
# one-line fragments left after removing the blocks
_LINE_WRAP = {
    "Key": "<AMPSConfig><Name>x</Name><SOW><Topic><Name>t</Name>{x}</Topic></SOW></AMPSConfig>",
    "Priority": "<AMPSConfig><Name>x</Name><SOW><Queue><Name>q</Name>{x}</Queue></SOW></AMPSConfig>",
    "BarrierExpression": "<AMPSConfig><Name>x</Name><SOW><Queue><Name>q</Name>{x}</Queue></SOW></AMPSConfig>",
}


def _seed_fragments() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for seed in sorted(SEEDS_DIR.glob("*.txt")):
        text = seed.read_text(encoding="utf-8")
        tags = "|".join(_BLOCK_WRAP)
        blocks = list(re.finditer(rf"<({tags})>.*?</\1>", text, flags=re.S))
        for i, m in enumerate(blocks):
            frag = re.sub(r"^\s*\.\.\.\s*$", "", m.group(0), flags=re.M)  # "..." placeholders
            if m.group(1) == "AMPSConfig":
                frag = frag.replace("<AMPSConfig>", "<AMPSConfig><Name>x</Name>", 1)
            found.append((f"{seed.name}:block{i}:{m.group(1)}",
                          _BLOCK_WRAP[m.group(1)].format(x=frag)))
        rest = re.sub(rf"<({tags})>.*?</\1>", "", text, flags=re.S)
        for j, m in enumerate(re.finditer(r"^\s*<([A-Za-z]+)>[^<\n]*</\1>\s*$", rest, flags=re.M)):
            tag = m.group(1)
            assert tag in _LINE_WRAP, f"{seed.name}: no wrapper for fragment <{tag}>"
            found.append((f"{seed.name}:line{j}:{tag}", _LINE_WRAP[tag].format(x=m.group(0).strip())))
    return found


@pytest.mark.skipif(not SEEDS_DIR.is_dir(), reason=f"seed documents not found at {SEEDS_DIR}")
def test_every_xml_fragment_in_the_seeds_validates(lxml_schema, xs_schema):
    fragments = _seed_fragments()
    # 2 actions, 6 SOW blocks, 3 conflated topics, 1 AMPSConfig, 3 Keys, 3 queue lines
    assert len(fragments) >= 18, [name for name, _ in fragments]
    failures = []
    for name, xml in fragments:
        doc = _parse(xml)
        ok1, msg1 = _lxml_check(lxml_schema, doc)
        ok2, msg2 = _xs_check(xs_schema, doc)
        if not (ok1 and ok2):
            failures.append(f"{name}: lxml={msg1!r} xmlschema={msg2!r}")
    assert not failures, "\n".join(failures)
