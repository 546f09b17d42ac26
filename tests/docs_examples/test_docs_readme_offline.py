"""README.md's offline examples (lint, filter, delta, journal, sow), run as the README writes them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from docs_example_tools import ROOT, doc_block_after, doc_text, readme_command

ORDERS = (ROOT / "samples" / "broker" / "orders.jsonl").read_text(encoding="utf-8")

SLAB_CONFIG = """<AMPSConfig>
  <Name>slabs</Name>
  <SOW>
    {comment}<Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
      <SlabSize>64KB</SlabSize>
    </Topic>
  </SOW>
</AMPSConfig>
"""


def test_the_sample_config_validates_clean(ampsctl, tmp_path: Path) -> None:
    *args, redirect, target = readme_command("ampsctl config sample")
    assert (redirect, target) == (">", "amps.xml")
    sample = ampsctl(*args)
    assert sample.code == 0
    (tmp_path / "amps.xml").write_text(sample.stdout, encoding="utf-8")
    result = ampsctl(*readme_command("ampsctl validate amps.xml"))
    assert (result.code, result.stdout.strip()) == (0, "1 file checked, no findings")


def test_the_finding_shown_in_the_readme(ampsctl) -> None:
    finding = doc_block_after("README.md", "A finding looks like this:")
    result = ampsctl("validate", "samples/broken-sow-topics.xml", cwd=ROOT)
    assert result.code == 1  # errors: "1 findings at or above --fail-on (default error)"
    assert finding in result.stdout


def test_the_suppression_comment(ampsctl, tmp_path: Path) -> None:
    comment = re.search(r"`(<!-- ampsctl: disable=SOWT-019 [^`]*-->)`", doc_text("README.md"))
    assert comment, "README.md no longer shows the SOWT-019 suppression comment"
    (tmp_path / "plain.xml").write_text(SLAB_CONFIG.format(comment=""), encoding="utf-8")
    (tmp_path / "silenced.xml").write_text(SLAB_CONFIG.format(comment=comment.group(1) + "\n    "), encoding="utf-8")
    plain = ampsctl("validate", "plain.xml", "--fail-on", "info")
    assert plain.code == 1 and "info SOWT-019" in plain.stdout
    silenced = ampsctl("validate", "silenced.xml", "--fail-on", "info")
    assert (silenced.code, silenced.stdout.strip()) == (0, "1 file checked, no findings (1 suppressed)")


def test_filter_examples(ampsctl) -> None:
    check = ampsctl(*readme_command("ampsctl filter check"))
    assert (check.code, check.stdout) == (0, "/price > 90 AND /symbol LIKE '^MS'\n")
    test = ampsctl(*readme_command("ampsctl filter test \"/qty > 100\""))
    assert (test.code, test.stdout) == (0, "true\n")  # "prints true; exit 0 if every message matched"
    miss = ampsctl("filter", "test", "/qty > 100", "--data", '{"qty": 50}')
    assert (miss.code, miss.stdout) == (1, "false\n")


def test_delta_merge_replaces_fields_and_deletes_nothing(ampsctl, tmp_path: Path) -> None:
    (tmp_path / "order.json").write_text('{"id":1,"qty":10,"status":"new","desk":"A"}')
    (tmp_path / "delta1.json").write_text('{"id":1,"status":"open"}')
    (tmp_path / "delta2.json").write_text('{"id":1,"qty":12}')
    result = ampsctl(*readme_command("ampsctl delta merge order.json"))
    assert result.code == 0
    assert json.loads(result.stdout) == {"id": 1, "qty": 12, "status": "open", "desk": "A"}


def test_journal_to_sow_examples(ampsctl, tmp_path: Path) -> None:
    """import -> dump -> verify -> compact -> sow query, as the README chains them."""
    records = [{"topic": "orders", "data": json.loads(line)} for line in ORDERS.splitlines()]
    records.append({"command": "delta_publish", "topic": "orders", "data": {"id": 3, "status": "filled"},
                    "timestamp": "20261122T100000Z"})  # after the --as-of point: left out of the SOW
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    shutil.copy(ROOT / "samples" / "amps.xml", tmp_path / "amps.xml")

    imported = ampsctl(*readme_command("ampsctl journal import"))
    assert imported.code == 0 and sorted(p.name for p in (tmp_path / "journal").iterdir()) == [
        "00000001.index", "00000001.journal", "journal.lock"]  # docs/formats.md "Transaction log"

    dump = ampsctl(*readme_command("ampsctl journal dump"))
    assert dump.code == 0
    dumped = [json.loads(line) for line in dump.stdout.splitlines()]
    assert [json.loads(r["payload"])["id"] for r in dumped] == [2, 4, 6]  # /qty > 100
    assert all(re.fullmatch(r"\d+\|\d+\|", r["bookmark"]) for r in dumped)

    verify = ampsctl(*readme_command("ampsctl journal verify"))
    assert verify.code == 0 and verify.stdout.startswith("ok: 7 records in 1 segment (sequences 1 to 7, ")

    compact = ampsctl(*readme_command("ampsctl journal compact"))
    assert compact.code == 0 and "sow/orders.json.sow  6 records" in compact.stdout
    again = ampsctl(*readme_command("ampsctl journal compact"))  # docs/sow.md: replaced only with --force
    assert again.code == 2 and "already exists" in again.stderr

    query = readme_command("ampsctl sow query")
    table = ampsctl(*query)
    assert table.code == 0 and table.stdout.rstrip().endswith("3 records (JSON pre-filter)")
    rows = ampsctl(*query, "--format", "jsonl")
    found = [json.loads(line)["message"] for line in rows.stdout.splitlines()]
    assert [(m["id"], m["status"]) for m in found] == [(2, "new"), (1, "new"), (5, "new")]


def test_the_two_commands_are_what_the_makefile_and_ci_run() -> None:
    """README.md "Two commands": make demo and make test come first, install the dev and spark
    extras, and .ci/run runs make test."""
    readme = doc_text("README.md")
    first_block = doc_block_after("README.md", "## Two commands")
    assert readme.index("## Two commands") < readme.index("## Examples")
    assert [line.split()[:2] for line in first_block.splitlines() if line.startswith("make")] == [
        ["make", "demo"], ["make", "test"]]
    makefile = doc_text("Makefile")
    targets = dict(re.findall(r"^([a-z-]+):[^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.MULTILINE))
    assert "scripts/demo.sh" in targets["demo"]
    assert "-m pytest" in targets["test"] and "java" in targets["test"] and "exit 4" in targets["test"]
    assert "pip install -q -e '.[dev,spark]'" in makefile
    assert re.search(r"^make test$", doc_text(".ci/run"), re.MULTILINE)
