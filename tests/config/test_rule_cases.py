"""One runner for every rule case file: tests/config/rule_cases/<CODE>.toml.

A case file holds ``[[case]]`` tables with ``name``, a complete ``config`` (an
``<AMPSConfig>`` document), optional ``env`` (a table of variables) and ``files`` (extra
files written next to the config, for includes), and ``expect``: the findings of THIS
rule as ``"LINE:COL"`` strings (an empty list for a passing case).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ampsctl.config.lint import LintOptions, lint_paths
from ampsctl.config.registry import all_rules, wrap_example

CASES_DIR = Path(__file__).parent / "rule_cases"


def _cases():
    for path in sorted(CASES_DIR.glob("*.toml")):
        data = tomllib.loads(path.read_text())
        for index, case in enumerate(data.get("case", [])):
            yield pytest.param(path.stem, case, id=f"{path.stem}-{index}-{case.get('name', '')}")


def _findings(code: str, config: str, tmp_path: Path, env=None, files=None) -> list[str]:
    main = tmp_path / "amps.xml"
    main.write_text(config)
    for name, text in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    report = lint_paths([str(main)], LintOptions(env=env or {}, select=(code,)))
    return [f"{f.location.line}:{f.location.col}" for f in report.findings if f.code == code]


@pytest.mark.parametrize(("code", "case"), list(_cases()))
def test_rule_case(code: str, case: dict, tmp_path: Path) -> None:
    found = _findings(code, case["config"], tmp_path, case.get("env"), case.get("files"))
    assert sorted(found) == sorted(case["expect"]), case.get("name")


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_docs_examples(rule, tmp_path: Path) -> None:
    """Each rule's documented bad example triggers it and its good example does not."""
    assert _findings(rule.code, wrap_example(rule.bad), tmp_path), f"{rule.code}: bad example does not trigger"
    assert not _findings(rule.code, wrap_example(rule.good), tmp_path), f"{rule.code}: good example triggers"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_has_cases(rule) -> None:
    path = CASES_DIR / f"{rule.code}.toml"
    assert path.exists(), f"missing {path}"
    cases = tomllib.loads(path.read_text()).get("case", [])
    assert any(c["expect"] for c in cases), f"{rule.code}: no failing case"
    assert any(not c["expect"] for c in cases), f"{rule.code}: no passing case"
