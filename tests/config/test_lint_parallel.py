"""Linting in worker processes gives exactly the in-process result."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_workers_keep_the_order_of_the_paths(tmp_path: Path) -> None:
    """Workers take the largest files first; the reports still come back in the order given."""
    paths = []
    for n in range(PARALLEL_FROM + 4):
        path = tmp_path / f"c{n:02d}.xml"
        topics = "".join(f"<Topic><Name>t{i}</Name><MessageType>json</MessageType></Topic>" for i in range(n * 7 % 11))
        path.write_text(f"<AMPSConfig><Name>i{n}</Name><SOW>{topics}</SOW></AMPSConfig>")
        paths.append(str(path))
    paths.append(paths[0])  # the same file twice gets two reports
    report = lint_paths(paths, LintOptions(env={}, jobs=2))
    assert [r.path for r in report.files] == paths
    assert _plain(report) == _plain(lint_paths(paths, LintOptions(env={}, jobs=1)))


def test_a_failing_worker_is_an_error(monkeypatch) -> None:
    """A bug in a worker is not a silently missing report: lint_paths raises."""
    from ampsctl.config import lint

    real = lint.lint_file

    def broken(path, plan, options):  # noqa: ANN001, ANN202
        if path == SAMPLES[-1]:
            raise ValueError("boom")
        return real(path, plan, options)

    monkeypatch.setattr(lint, "lint_file", broken)  # inherited by the forked workers
    with pytest.raises(RuntimeError, match="boom"):
        lint_paths(SAMPLES, LintOptions(env={}, jobs=2))
