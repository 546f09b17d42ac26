"""Generated docs stay current, and the repository metadata other tools read stays usable.

* docs/cli.md and docs/rules.md equal what ``ampsctl.cli.docgen`` generates now (run
  ``make docs`` when these fail), the generator is deterministic, and ``--check`` works;
* every rule has a summary and examples, every command is in docs/cli.md;
* .pre-commit-hooks.yaml parses and its ``entry`` runs.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ampsctl.cli import docgen
from ampsctl.config.registry import all_rules

ROOT = Path(__file__).resolve().parents[1]
STALE_HINT = "is stale: run `make docs` (python -m ampsctl.cli.docgen) and commit the result"


# --------------------------------------------------------------------------------------
# generated docs
# --------------------------------------------------------------------------------------


def test_cli_doc_is_current() -> None:
    assert (ROOT / docgen.CLI_DOC).read_text(encoding="utf-8") == docgen.cli_markdown(), f"{docgen.CLI_DOC} {STALE_HINT}"


def test_rules_doc_is_current() -> None:
    assert (ROOT / docgen.RULES_DOC).read_text(encoding="utf-8") == docgen.rules_markdown(), f"{docgen.RULES_DOC} {STALE_HINT}"


def test_generation_ignores_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = docgen.cli_markdown()
    for columns in ("40", "200"):
        monkeypatch.setenv("COLUMNS", columns)
        monkeypatch.setenv("FORCE_COLOR", "1")
        assert docgen.cli_markdown() == expected
    assert "\x1b[" not in expected
    assert all(len(line) <= docgen.HELP_WIDTH for line in _help_blocks(expected))


def test_check_reports_the_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 1  # nothing written yet
    assert docgen.main(["--root", str(tmp_path)]) == 0
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 0
    rules = tmp_path / docgen.RULES_DOC
    rules.write_text(rules.read_text() + "hand edit\n")
    capsys.readouterr()
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert str(docgen.RULES_DOC) in err and str(docgen.CLI_DOC) not in err


def test_every_rule_is_documented() -> None:
    rules = all_rules()
    assert rules
    for rule in rules:
        assert rule.summary.strip(), f"{rule.code} has no summary"
        assert rule.name.strip() and rule.bad.strip() and rule.good.strip(), f"{rule.code} lacks a name or an example"
    text = (ROOT / docgen.RULES_DOC).read_text(encoding="utf-8")
    for rule in rules:
        assert f"\n## {rule.code}\n" in text, f"{rule.code} missing from {docgen.RULES_DOC}"


def _typer_commands(app, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:  # noqa: ANN001
    """Command paths from typer's own registrations (independent of docgen's click walk)."""
    from typer.main import get_command_name

    found = []
    for info in app.registered_commands:
        if info.hidden:
            continue
        found.append((*prefix, info.name or get_command_name(info.callback.__name__)))
    for group in app.registered_groups:
        if group.hidden:
            continue
        name = group.name or group.typer_instance.info.name
        found.append((*prefix, name))
        found += _typer_commands(group.typer_instance, (*prefix, name))
    return found


def test_every_command_is_in_cli_doc() -> None:
    from ampsctl.cli.app import app

    text = (ROOT / docgen.CLI_DOC).read_text(encoding="utf-8")
    paths = _typer_commands(app)
    assert ("validate",) in paths and ("config", "validate") in paths
    for path in [(), *paths]:
        title = " ".join(("ampsctl", *path))
        assert f"\n## `{title}`\n" in text, f"`{title}` is missing from {docgen.CLI_DOC}"
        assert f"Usage: {title} " in text


def test_cli_doc_holds_real_help_output() -> None:
    """A block is exactly what `COLUMNS=80 ampsctl ... --help` prints in a real process."""
    import os

    text = (ROOT / docgen.CLI_DOC).read_text(encoding="utf-8")
    env = {**os.environ, "COLUMNS": "80"}
    for path in ([], ["config", "validate"], ["config", "explain"]):
        done = subprocess.run(
            [sys.executable, "-m", "ampsctl", *path, "--help"], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr
        real = "\n".join(line.rstrip() for line in done.stdout.rstrip("\n").splitlines())
        assert f"```text\n{real}\n```" in text, f"ampsctl {' '.join(path)} --help differs from {docgen.CLI_DOC}"


def test_tidy_example_realigns_stripped_indentation() -> None:
    example = "<SOW>\n    <Topic>\n      <Name>x</Name>\n    </Topic>\n  </SOW>"
    assert docgen.tidy_example(example) == "<SOW>\n  <Topic>\n    <Name>x</Name>\n  </Topic>\n</SOW>"
    assert docgen.tidy_example("<AMPSConfig><Name>a</Name></AMPSConfig>") == "<AMPSConfig><Name>a</Name></AMPSConfig>"


def test_markdown_prose_keeps_tags_visible() -> None:
    assert docgen._md("root <AMPSConfig> and `<Include>`") == "root &lt;AMPSConfig&gt; and `<Include>`"
    assert docgen._md("a | b", cell=True) == "a \\| b"


def _help_blocks(markdown: str) -> list[str]:
    lines = []
    for block in re.findall(r"```text\n(.*?)\n```", markdown, re.S):
        lines += block.splitlines()
    return lines


# --------------------------------------------------------------------------------------
# .pre-commit-hooks.yaml (PyYAML is not a dependency: a small parser for the subset used)
# --------------------------------------------------------------------------------------


def _scalar(text: str) -> object:
    text = text.strip()
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1].replace("''", "'")
    if text.startswith('"') and text.endswith('"'):
        return ast.literal_eval(text)
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(item) for item in text[1:-1].split(",") if item.strip()]
    if text in ("true", "false"):
        return text == "true"
    return text


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if ch in "'\"" and quote in (None, ch):
            quote = None if quote else ch
        elif ch == "#" and quote is None and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def parse_hooks(text: str) -> list[dict[str, object]]:
    """A top-level list of flat mappings: `- key: value` then `  key: value` lines."""
    hooks: list[dict[str, object]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw).rstrip()
        if not line.strip():
            continue
        if line.startswith("- "):
            hooks.append({})
            line = "  " + line[2:]
        match = re.fullmatch(r"  ([A-Za-z_]+):\s*(.*)", line)
        assert match and hooks, f"line {number} is outside the supported YAML subset: {raw!r}"
        key, value = match.groups()
        assert key not in hooks[-1], f"line {number}: duplicate key {key}"
        assert value, f"line {number}: nested values are not used in a hooks file"
        hooks[-1][key] = _scalar(value)
    return hooks


@pytest.fixture(scope="module")
def hook() -> dict[str, object]:
    hooks = parse_hooks((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    by_id = {h["id"]: h for h in hooks}
    assert len(by_id) == len(hooks)
    return by_id["ampsctl-validate"]


def test_pre_commit_hook_manifest(hook: dict[str, object]) -> None:
    assert hook["name"] and hook["entry"] == "ampsctl validate"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is True
    pattern = re.compile(str(hook["files"]))  # pre-commit uses Python's re.search
    for path in ("amps.xml", "config/amps-prod.xml", "deploy/prod/my-amps-config.xml", "ampsconfig.xml"):
        assert pattern.search(path), path
    for path in ("pom.xml", "amps.xml.bak", "amps/pom.xml", "docs/amps.md", "examples.xml"):
        assert not pattern.search(path), path


def test_pre_commit_entry_runs(hook: dict[str, object], tmp_path: Path) -> None:
    """pre-commit installs the package and runs `entry` with the staged file names appended."""
    command, *args = str(hook["entry"]).split()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert command in scripts, f"entry command {command} is not a console script of this package"
    executable = shutil.which(command, path=str(Path(sys.executable).parent))
    argv = [executable] if executable else [sys.executable, "-m", "ampsctl"]
    good = tmp_path / "amps.xml"
    good.write_text("<AMPSConfig>\n  <Name>hook-test</Name>\n</AMPSConfig>\n")
    broken = tmp_path / "amps-broken.xml"
    broken.write_text("<AMPSConfig>\n  <Name>hook-test</Name>\n")
    done = subprocess.run([*argv, *args, str(good)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([*argv, *args, str(good), str(broken)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "amps-broken.xml" in done.stdout + done.stderr
