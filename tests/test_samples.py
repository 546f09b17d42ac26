"""The bundled samples: every samples/*.xml must produce exactly the findings its sidecar lists.

Each ``samples/<name>.xml`` has a ``samples/<name>.expected.json``: a JSON list of
``{"code", "line", "column"}`` objects sorted by (line, column, code), the findings
``ampsctl validate samples/<name>.xml --format json`` reports. Valid samples list nothing
(legacy-synonyms.xml lists only its informational GEN-010 findings); ``broken-*`` samples
list the mistakes they were written to contain, and nothing else.

The findings are computed in-process through ``lint_paths`` for each file, and once more
through one real ``python -m ampsctl validate samples/*.xml --format json`` run, which is
the command the samples document. The XSD verdict on each sample must be the same in
lxml (libxml2) and xmlschema, and the valid samples must pass both.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import xmlschema
from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.lint import LintOptions, lint_paths
from ampsctl.config.schema import schema_path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES_DIR = ROOT / "samples"
SAMPLES = sorted(SAMPLES_DIR.glob("*.xml"))
SIDECAR_SUFFIX = ".expected.json"

# Valid samples whose sidecar may list findings, and which codes (all informational).
INFO_ONLY = {"legacy-synonyms": {"GEN-010"}}


def _sidecar(sample: Path) -> Path:
    return sample.with_name(sample.stem + SIDECAR_SUFFIX)


def _expected(sample: Path) -> list[dict]:
    return json.loads(_sidecar(sample).read_text())


def _is_broken(sample: Path) -> bool:
    return sample.name.startswith("broken-")


def _env() -> dict[str, str]:
    """The process environment without the ${VARS} the samples reference.

    broken-loading.xml relies on its variable being undefined; the valid samples use none.
    """
    referenced = {m for s in SAMPLES for m in re.findall(r"\$\{([^}]+)\}", s.read_text())}
    return {k: v for k, v in os.environ.items() if k not in referenced}


def _rows(findings) -> list[dict]:
    rows = [{"code": f.code, "line": f.location.line, "column": f.location.col} for f in findings]
    return sorted(rows, key=lambda r: (r["line"], r["column"], r["code"]))


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


# --------------------------------------------------------------------------
# the sidecars themselves
# --------------------------------------------------------------------------


def test_samples_exist() -> None:
    assert SAMPLES, f"no samples in {SAMPLES_DIR}"
    assert any(_is_broken(s) for s in SAMPLES) and any(not _is_broken(s) for s in SAMPLES)


@pytest.mark.parametrize("sample", SAMPLES, ids=_ids(SAMPLES))
def test_every_sample_has_a_well_formed_sidecar(sample: Path) -> None:
    sidecar = _sidecar(sample)
    assert sidecar.exists(), f"{sample.name} has no {sidecar.name}"
    rows = json.loads(sidecar.read_text())
    assert isinstance(rows, list)
    for row in rows:
        assert set(row) == {"code", "line", "column"}, row
        assert isinstance(row["code"], str) and isinstance(row["line"], int) and isinstance(row["column"], int), row
    assert rows == sorted(rows, key=lambda r: (r["line"], r["column"], r["code"])), f"{sidecar.name} is not sorted"


def test_no_orphan_sidecars() -> None:
    for sidecar in SAMPLES_DIR.glob("*" + SIDECAR_SUFFIX):
        sample = sidecar.with_name(sidecar.name[: -len(SIDECAR_SUFFIX)] + ".xml")
        assert sample.exists(), f"{sidecar.name} has no sample"


@pytest.mark.parametrize("sample", SAMPLES, ids=_ids(SAMPLES))
def test_sidecar_matches_the_kind_of_sample(sample: Path) -> None:
    codes = {row["code"] for row in _expected(sample)}
    if _is_broken(sample):
        assert codes, f"{sample.name} is a broken sample but expects no findings"
    else:
        assert codes <= INFO_ONLY.get(sample.stem, set()), f"valid sample {sample.name} expects findings {codes}"


# --------------------------------------------------------------------------
# the linter against the sidecars
# --------------------------------------------------------------------------


@pytest.mark.parametrize("sample", SAMPLES, ids=_ids(SAMPLES))
def test_findings_equal_sidecar(sample: Path) -> None:
    report = lint_paths([str(sample)], LintOptions(env=_env()))
    findings = report.findings
    assert not any(f.fatal for f in findings), [f"{f.code} {f.message}" for f in findings if f.fatal]
    assert all(f.location.path == str(sample) for f in findings), "a finding points outside the sample"
    got = _rows(findings)
    expected = _expected(sample)
    detail = "\n".join(f"  {f.location.line}:{f.location.col} {f.code} {f.severity.label}: {f.message}" for f in findings)
    assert got == expected, f"{sample.name}: findings differ from {_sidecar(sample).name}\nlinter reported:\n{detail}"


@pytest.mark.parametrize("sample", [s for s in SAMPLES if not _is_broken(s)], ids=_ids([s for s in SAMPLES if not _is_broken(s)]))
def test_valid_samples_have_no_errors_or_warnings(sample: Path) -> None:
    report = lint_paths([str(sample)], LintOptions(env=_env()))
    serious = [f for f in report.findings if f.severity >= Severity.WARNING]
    assert not serious, [f"{f.location.line}:{f.location.col} {f.code}: {f.message}" for f in serious]


def test_cli_validate_all_samples_json() -> None:
    """The literal check: one `python -m ampsctl validate samples/*.xml --format json` run."""
    args = [str(s.relative_to(ROOT)) for s in SAMPLES]
    proc = subprocess.run(
        [sys.executable, "-m", "ampsctl", "validate", *args, "--format", "json"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, f"exit code {proc.returncode} (expected 1: the broken samples have errors)\n{proc.stderr}"
    report = json.loads(proc.stdout)
    by_name = {Path(f["path"]).name: f for f in report["files"]}
    assert sorted(by_name) == sorted(s.name for s in SAMPLES)
    mismatched = {}
    for sample in SAMPLES:
        findings = by_name[sample.name]["findings"]
        got = sorted(
            ({"code": f["code"], "line": f["line"], "column": f["column"]} for f in findings),
            key=lambda r: (r["line"], r["column"], r["code"]),
        )
        if got != _expected(sample):
            mismatched[sample.name] = {"got": got, "expected": _expected(sample)}
    assert not mismatched, json.dumps(mismatched, indent=1)


# --------------------------------------------------------------------------
# XSD: both engines agree on every sample
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lxml_schema() -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(schema_path())))


@pytest.fixture(scope="module")
def xs_schema() -> xmlschema.XMLSchema10:
    return xmlschema.XMLSchema10(str(schema_path()))


@pytest.mark.parametrize("sample", SAMPLES, ids=_ids(SAMPLES))
def test_xsd_engines_agree(sample: Path, lxml_schema: etree.XMLSchema, xs_schema: xmlschema.XMLSchema10) -> None:
    # The file as written (no ${VAR} or <Include> expansion): what an editor or xmllint sees.
    doc = etree.parse(str(sample))
    by_lxml = lxml_schema.validate(doc)
    errors = list(xs_schema.iter_errors(doc))
    by_xmlschema = not errors
    assert by_lxml == by_xmlschema, (
        f"{sample.name}: lxml says {by_lxml} ({lxml_schema.error_log.last_error}), "
        f"xmlschema says {by_xmlschema} ({errors[0].reason if errors else ''})"
    )
    if not _is_broken(sample):
        assert by_lxml, f"valid sample {sample.name} fails the XSD: {lxml_schema.error_log.last_error}"
