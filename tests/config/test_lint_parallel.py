"""Linting in worker processes gives exactly the in-process result."""

from __future__ import annotations

from pathlib import Path

from ampsctl.config.lint import PARALLEL_FROM, LintOptions, lint_paths

SAMPLES = sorted(str(p) for p in (Path(__file__).resolve().parents[2] / "samples").glob("*.xml"))


def _plain(report):
    return [(r.path, r.findings, r.suppressed, r.lines) for r in report.files]


def test_workers_match_in_process() -> None:
    assert len(SAMPLES) >= PARALLEL_FROM
    env = {"AMPSCTL_UNUSED": "1"}
    serial = lint_paths(SAMPLES, LintOptions(env=env, jobs=1))
    parallel = lint_paths(SAMPLES, LintOptions(env=env, jobs=2))
    assert any(r.findings for r in serial.files)
    assert _plain(serial) == _plain(parallel)
