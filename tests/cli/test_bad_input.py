"""Bad-input battery: every hostile or broken input gives a clear diagnostic, a defined exit
code, no Python traceback and no hang.

Each case runs the installed console script in a subprocess with a timeout (a hang fails the
test with ``TimeoutExpired``), checks the exit code, the ``file:line:col`` of the diagnostic
where the input has a meaningful position, and that stderr holds no traceback.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from clitools import CLEAN, run_ampsctl

SECRET = "TOP-SECRET-4f1c9e-never-print-me"


def validate(tmp_path: Path, *args: str, timeout: float = 60):
    result = run_ampsctl("validate", *args, cwd=tmp_path, timeout=timeout)
    assert "Traceback" not in result.stderr, result.stderr
    assert "internal error" not in result.stderr, result.stderr
    return result


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------ unreadable or unparsable


def test_malformed_xml(tmp_path):
    write(tmp_path, "amps.xml", "<AMPSConfig>\n  <Name>a</Name>\n  <SOW>\n</AMPSConfig>\n")
    result = validate(tmp_path, "amps.xml")
    assert result.code == 3
    assert "amps.xml:4:" in result.stdout
    assert "GEN-001" in result.stdout
    assert "malformed XML: Opening and ending tag mismatch: SOW line 3 and AMPSConfig" in result.stdout


def test_a_control_character_in_cdata_is_named_not_an_unregistered_error(tmp_path):
    # libxml2 has no text for the CDATA section it could not finish: "malformed XML:
    # Unregistered error message" said nothing of the character that stopped it.
    write(tmp_path, "amps.xml", "<AMPSConfig>\n  <Name>a<![CDATA[x\x01]]></Name>\n</AMPSConfig>\n")
    result = validate(tmp_path, "amps.xml")
    assert result.code == 3
    assert "amps.xml:2:20: error GEN-001 [well-formed-config] malformed XML: PCDATA invalid Char value 1" in result.stdout
    assert "Unregistered" not in result.stdout


def test_malformed_xml_in_every_format(tmp_path):
    write(tmp_path, "amps.xml", "<AMPSConfig>\n  <Name>a</Name\n</AMPSConfig>\n")
    for fmt in ("json", "sarif", "github", "junit"):
        result = validate(tmp_path, "amps.xml", "-f", fmt)
        assert result.code == 3, fmt
        assert "GEN-001" in result.stdout, fmt
    data = json.loads(validate(tmp_path, "amps.xml", "-f", "json").stdout)
    [finding] = data["files"][0]["findings"]
    assert finding["fatal"] is True
    assert (finding["line"], finding["column"]) == (3, 1)


def test_non_utf8_bytes(tmp_path):
    (tmp_path / "amps.xml").write_bytes(b"<AMPSConfig>\n  <Name>caf\xe9</Name>\n</AMPSConfig>\n")
    result = validate(tmp_path, "amps.xml")
    assert result.code == 3
    assert "amps.xml:2:12: error GEN-001" in result.stdout
    assert "not valid UTF-8: byte 0xe9" in result.stdout


@pytest.mark.parametrize("content", ["", "   \n\n\t"], ids=["empty", "blank"])
def test_empty_file(tmp_path, content):
    write(tmp_path, "amps.xml", content)
    result = validate(tmp_path, "amps.xml")
    assert result.code == 3
    assert "amps.xml:1:1: error GEN-001" in result.stdout
    assert "the file is empty" in result.stdout


def test_missing_file(tmp_path):
    result = validate(tmp_path, "nope.xml")
    assert result.code == 3
    assert "nope.xml: error GEN-001" in result.stdout
    assert "no such file: 'nope.xml'" in result.stdout


def test_directory(tmp_path):
    (tmp_path / "conf").mkdir()
    result = validate(tmp_path, "conf")
    assert result.code == 3
    assert "'conf' is a directory, not a config file" in result.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_fifo_without_writer_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "pipe.xml")
    result = validate(tmp_path, "pipe.xml", timeout=30)
    assert result.code == 3
    assert "GEN-001" in result.stdout


def test_100_mb_file_is_refused_before_reading(tmp_path):
    with open(tmp_path / "huge.xml", "wb") as handle:
        handle.truncate(100 * 1024 * 1024)  # sparse: instant, takes no disk space
    result = validate(tmp_path, "huge.xml", timeout=30)
    assert result.code == 3
    assert "'huge.xml' is 100.0 MB, larger than the 64 MB limit" in result.stdout
    assert "--max-file-size" in result.stdout


def test_max_file_size_option(tmp_path):
    with open(tmp_path / "big.xml", "wb") as handle:
        handle.truncate(3 * 1024 * 1024)
    result = validate(tmp_path, "big.xml", "--max-file-size", "2")
    assert result.code == 3
    assert "larger than the 2 MB limit" in result.stdout


# ------------------------------------------------------------------------- entity attacks


def test_xxe_external_entity_is_refused_and_never_read(tmp_path):
    secret = write(tmp_path, "secret.txt", SECRET)
    config = (
        '<?xml version="1.0"?>\n'
        "<!DOCTYPE AMPSConfig [\n"
        f'  <!ENTITY xxe SYSTEM "{secret.as_uri()}">\n'
        "]>\n"
        "<AMPSConfig>\n  <Name>&xxe;</Name>\n</AMPSConfig>\n"
    )
    write(tmp_path, "amps.xml", config)
    for fmt in ("text", "json", "sarif", "github", "junit"):
        result = validate(tmp_path, "amps.xml", "-f", fmt)
        assert result.code == 3
        assert SECRET not in result.output
    text = validate(tmp_path, "amps.xml")
    assert "amps.xml:3:3: error GEN-001" in text.stdout
    assert "declares XML entities" in text.stdout
    dump = run_ampsctl("config", "dump", "amps.xml", cwd=tmp_path)
    assert dump.code == 3
    assert SECRET not in dump.output and "Traceback" not in dump.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize(
    "doctype",
    [
        '<!DOCTYPE AMPSConfig [\n  <!ENTITY xxe SYSTEM "{uri}">\n]>',
        '<!DOCTYPE AMPSConfig [\n  <!ENTITY % xxe SYSTEM "{uri}">\n  %xxe;\n]>',
        '<!DOCTYPE AMPSConfig SYSTEM "{uri}">',
        '<!DOCTYPE AMPSConfig PUBLIC "-//x//y" "{uri}">',
    ],
    ids=["general-entity", "parameter-entity", "external-dtd", "public-dtd"],
)
def test_external_targets_are_never_opened(tmp_path, doctype):
    # A FIFO with no writer blocks whoever opens it for reading: if the parser tried to read
    # the target, the run would hang and hit the timeout.
    target = tmp_path / "target.fifo"
    os.mkfifo(target)
    header = doctype.format(uri=target.as_uri())
    write(tmp_path, "amps.xml", f'<?xml version="1.0"?>\n{header}\n<AMPSConfig>\n  <Name>x</Name>\n</AMPSConfig>\n')
    result = validate(tmp_path, "amps.xml", timeout=30)
    assert result.code == 3
    assert "amps.xml:" in result.stdout and "GEN-001" in result.stdout


def test_billion_laughs(tmp_path):
    lines = ['<?xml version="1.0"?>', "<!DOCTYPE AMPSConfig [", ' <!ENTITY lol0 "lol">']
    lines += [f' <!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    lines += ["]>", "<AMPSConfig><Name>&lol9;</Name></AMPSConfig>"]
    write(tmp_path, "amps.xml", "\n".join(lines) + "\n")
    result = validate(tmp_path, "amps.xml", timeout=30)
    assert result.code == 3
    assert "amps.xml:3:2: error GEN-001" in result.stdout
    assert "never expands" in result.stdout


def test_undeclared_entity_behind_a_parameter_entity_reference(tmp_path):
    write(tmp_path, "amps.xml", "<!DOCTYPE AMPSConfig [\n  %x;\n]>\n<AMPSConfig>\n  <Name>&foo;</Name>\n</AMPSConfig>\n")
    result = validate(tmp_path, "amps.xml")
    assert result.code == 3
    assert "amps.xml:5:9: error GEN-001" in result.stdout
    assert "&foo; is not defined" in result.stdout


def test_deeply_nested_document(tmp_path):
    depth = 5000
    write(tmp_path, "amps.xml", "<AMPSConfig><Name>x</Name>" + "<Admin>" * depth + "</Admin>" * depth + "</AMPSConfig>\n")
    result = validate(tmp_path, "amps.xml", timeout=30)
    assert result.code == 3
    assert "GEN-001" in result.stdout


# ------------------------------------------------------------------------------- includes


def test_include_cycle_two_files(tmp_path):
    write(tmp_path, "a.xml", "<AMPSConfig>\n  <Name>a</Name>\n  <Include>b.xml</Include>\n</AMPSConfig>\n")
    write(tmp_path, "b.xml", "<!-- b -->\n<Include>a.xml</Include>\n")
    result = validate(tmp_path, "a.xml", timeout=30)
    assert result.code == 1
    assert "b.xml:2:1: error GEN-008" in result.stdout
    assert "include cycle: a.xml -> b.xml -> a.xml" in result.stdout


def test_include_cycle_self(tmp_path):
    write(tmp_path, "a.xml", "<AMPSConfig>\n  <Name>a</Name>\n  <Include>a.xml</Include>\n</AMPSConfig>\n")
    result = validate(tmp_path, "a.xml", timeout=30)
    assert result.code == 1
    assert "a.xml:3:3: error GEN-008" in result.stdout
    assert "include cycle: a.xml -> a.xml" in result.stdout


def test_include_fan_out_is_capped(tmp_path):
    # Not a cycle, but 10 levels of 10 includes each would expand to 10^10 copies.
    write(tmp_path, "amps.xml", "<AMPSConfig>\n  <Name>a</Name>\n  <Admin><Include>l1.xml</Include></Admin>\n</AMPSConfig>\n")
    for level in range(1, 10):
        write(tmp_path, f"l{level}.xml", f"<Include>l{level + 1}.xml</Include>\n" * 10)
    write(tmp_path, "l10.xml", "<!--" + "x" * 10_000 + "-->\n")
    result = validate(tmp_path, "amps.xml", timeout=60)
    assert result.code == 1
    assert "exceeds ConfigCycleDetectionThreshold" in result.stdout


def test_include_of_a_missing_file(tmp_path):
    write(tmp_path, "amps.xml", "<AMPSConfig>\n  <Name>a</Name>\n  <Logging>\n    <Include>logging.xml</Include>\n  </Logging>\n</AMPSConfig>\n")
    result = validate(tmp_path, "amps.xml")
    assert result.code == 1
    assert "amps.xml:4:5: error GEN-008" in result.stdout
    assert "no such file: 'logging.xml'" in result.stdout


def test_include_of_a_malformed_fragment(tmp_path):
    write(tmp_path, "amps.xml", "<AMPSConfig>\n  <Name>a</Name>\n  <Include>parts/admin.xml</Include>\n</AMPSConfig>\n")
    write(tmp_path, "parts/admin.xml", "<Admin>\n  <InetAddr>8085\n</Admin>\n")
    result = validate(tmp_path, "amps.xml")
    assert result.code == 3
    assert "parts/admin.xml:3:" in result.stdout
    assert "in included file: malformed XML" in result.stdout


def test_include_of_a_non_utf8_fragment_points_into_it(tmp_path):
    write(tmp_path, "amps.xml", "<AMPSConfig>\n  <Name>a</Name>\n  <Include>admin.xml</Include>\n</AMPSConfig>\n")
    (tmp_path / "admin.xml").write_bytes(b"<Admin>\n  <FileName>caf\xe9.db</FileName>\n</Admin>\n")
    result = validate(tmp_path, "amps.xml")
    assert result.code == 3
    assert "admin.xml:2:16: error GEN-001" in result.stdout


def test_include_of_a_directory(tmp_path):
    write(tmp_path, "amps.xml", "<AMPSConfig>\n  <Name>a</Name>\n  <Include>conf.d</Include>\n</AMPSConfig>\n")
    (tmp_path / "conf.d").mkdir()
    result = validate(tmp_path, "amps.xml")
    assert result.code == 1
    assert "amps.xml:3:3: error GEN-008" in result.stdout
    assert "'conf.d' is a directory" in result.stdout


# ----------------------------------------------------------------------------- content


def test_undefined_variable(tmp_path):
    write(tmp_path, "amps.xml", "<AMPSConfig>\n  <Name>ny-${AMPSCTL_TEST_SURELY_UNDEFINED}</Name>\n</AMPSConfig>\n")
    result = validate(tmp_path, "amps.xml")
    assert result.code == 1
    assert "amps.xml:2:12: error GEN-007" in result.stdout
    assert "${AMPSCTL_TEST_SURELY_UNDEFINED} is not defined" in result.stdout
    assert "--env AMPSCTL_TEST_SURELY_UNDEFINED=VALUE" in result.stdout


def test_unknown_element_with_did_you_mean(tmp_path):
    write(
        tmp_path,
        "amps.xml",
        "<AMPSConfig>\n  <Name>a</Name>\n  <SOW>\n    <Topic>\n      <Name>orders</Name>\n"
        "      <MessageType>json</MessageType>\n      <Durabilty>transient</Durabilty>\n"
        "    </Topic>\n  </SOW>\n</AMPSConfig>\n",
    )
    result = validate(tmp_path, "amps.xml", "--select", "GEN-006")
    assert result.code == 0  # a warning
    assert "amps.xml:7:7: warning GEN-006" in result.stdout
    assert "unknown element <Durabilty> in <Topic>" in result.stdout
    assert "did you mean <Durability>?" in result.stdout


def test_wrong_root_element(tmp_path):
    write(tmp_path, "amps.xml", '<?xml version="1.0"?>\n<Config>\n  <Name>a</Name>\n</Config>\n')
    result = validate(tmp_path, "amps.xml")
    assert result.code == 3
    assert "amps.xml:2:1: error GEN-001" in result.stdout
    assert "the root element is <Config>, not <AMPSConfig>" in result.stdout


def test_control_characters_and_odd_text_do_not_break_reports(tmp_path):
    write(tmp_path, "amps.xml", "<AMPSConfig>\n  <Name>a</Name>\n  <Bogus>%0A::error ,:%</Bogus>\n</AMPSConfig>\n")
    for fmt in ("text", "json", "sarif", "github", "junit"):
        assert validate(tmp_path, "amps.xml", "-f", fmt).code == 0


@pytest.mark.skipif(sys.platform == "win32" or sys.platform == "darwin", reason="needs arbitrary bytes in file names")
def test_undecodable_file_name(tmp_path):
    name = os.fsdecode(b"conf-\xff.xml")
    (tmp_path / name).write_text(CLEAN)
    for fmt in ("text", "json", "sarif", "github", "junit"):
        # a strict UTF-8 stdout, as under most UTF-8 locales, must not meet a lone surrogate
        result = run_ampsctl(
            "validate", name, os.fsdecode(b"missing-\xfe.xml"), "-f", fmt,
            cwd=tmp_path, env={"PYTHONIOENCODING": "utf-8:strict"},
        )
        assert result.code == 3, (fmt, result.stderr)
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        assert any(shown in result.stdout for shown in ("missing-\ufffd.xml", "missing-%FE.xml", "missing-\\xfe.xml"))


# ------------------------------------------------------------------------------ baseline


def test_directory_passed_to_baseline(tmp_path):
    write(tmp_path, "amps.xml", CLEAN)
    (tmp_path / "base").mkdir()
    result = validate(tmp_path, "amps.xml", "--baseline", "base")
    assert result.code == 3
    assert "cannot read the baseline file 'base'" in result.stderr


def test_directory_passed_to_write_baseline(tmp_path):
    write(tmp_path, "amps.xml", CLEAN)
    (tmp_path / "base").mkdir()
    result = validate(tmp_path, "amps.xml", "--baseline", "base", "--write-baseline")
    assert result.code == 2
    assert "cannot write the baseline file 'base'" in result.stderr


def test_baseline_that_is_not_utf8(tmp_path):
    write(tmp_path, "amps.xml", CLEAN)
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00garbage")
    result = validate(tmp_path, "amps.xml", "--baseline", "b.json")
    assert result.code == 3
    assert "baseline file is not valid" in result.stderr


# ------------------------------------------------------------------- encodings that work


def test_utf16_with_bom(tmp_path):
    text = '<?xml version="1.0" encoding="UTF-16"?>\n<AMPSConfig>\n  <Name>caf\u00e9</Name>\n  <Bogus/>\n</AMPSConfig>\n'
    (tmp_path / "le.xml").write_bytes(text.encode("utf-16"))  # BOM + native order
    (tmp_path / "be.xml").write_bytes(b"\xfe\xff" + text.encode("utf-16-be"))
    for name in ("le.xml", "be.xml"):
        result = validate(tmp_path, name, "-f", "json")
        assert result.code == 0, result.output
        [finding] = json.loads(result.stdout)["files"][0]["findings"]
        assert (finding["code"], finding["line"], finding["column"]) == ("GEN-006", 4, 3)


def test_utf8_with_bom(tmp_path):
    (tmp_path / "amps.xml").write_bytes(b"\xef\xbb\xbf" + CLEAN.encode())
    assert validate(tmp_path, "amps.xml").code == 0


@pytest.mark.parametrize("declared", ["ISO-8859-1", "latin-1", "latin1"])
def test_latin1_declaration(tmp_path, declared):
    text = f'<?xml version="1.0" encoding="{declared}"?>\n<AMPSConfig>\n  <Name>caf\u00e9</Name><Bogus/>\n</AMPSConfig>\n'
    (tmp_path / "amps.xml").write_bytes(text.encode("latin-1"))
    result = validate(tmp_path, "amps.xml", "-f", "json")
    assert result.code == 0, result.output
    [finding] = json.loads(result.stdout)["files"][0]["findings"]
    # the column counts characters, not bytes: "  <Name>café</Name>" is 19 characters
    assert (finding["code"], finding["line"], finding["column"]) == ("GEN-006", 3, 20)
    dump = run_ampsctl("config", "dump", "amps.xml", cwd=tmp_path)
    assert dump.code == 0 and "<Name>caf\u00e9</Name>" in dump.stdout


def test_unknown_declared_encoding(tmp_path):
    (tmp_path / "amps.xml").write_bytes(b'<?xml version="1.0" encoding="klingon-8"?>\n<AMPSConfig/>\n')
    result = validate(tmp_path, "amps.xml")
    assert result.code == 3
    assert "unknown encoding 'klingon-8'" in result.stdout
