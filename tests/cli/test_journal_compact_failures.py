"""``ampsctl journal compact`` when its output cannot be written as asked: every SOW file is
written, or none is. Runs ``ampsctl.cli.app.main`` in this process (the ``cli`` fixture) so a
full disk can be simulated by patching ``os.replace``, as tests/sow/test_sowfile.py does."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ampsctl.sow import checkpoint

CONFIG = """<AMPSConfig><Name>t</Name><SOW>
<Topic><Name>a</Name><MessageType>json</MessageType><FileName>sow/%n.sow</FileName><Key>/id</Key></Topic>
<Topic><Name>b</Name><MessageType>json</MessageType><FileName>sow/%n.sow</FileName><Key>/id</Key></Topic>
</SOW></AMPSConfig>
"""
OLD = '{"topic":"a","data":{"id":1}}\n{"topic":"b","data":{"id":1}}\n'
NEW = OLD + '{"topic":"a","data":{"id":2}}\n{"topic":"b","data":{"id":2}}\n{"command":"sow_delete","topic":"a","keys":"x"}\n'


@pytest.fixture
def journals(cli, tmp_path: Path) -> Path:  # noqa: ANN001
    (tmp_path / "amps.xml").write_text(CONFIG)
    for name, text in (("old", OLD), ("new", NEW)):
        (tmp_path / f"{name}.jsonl").write_text(text)
        assert cli("journal", "import", f"{name}.jsonl", "--out", name).code == 0
    assert cli("journal", "compact", "old", "--config", "amps.xml", "--out", "out").code == 0
    return tmp_path


def _contents(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() if path.is_file() else b"<dir>" for path in sorted(directory.iterdir())}


def test_a_full_disk_on_the_second_file_leaves_the_first_as_it_was(cli, journals: Path,  # noqa: ANN001
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    before = _contents(journals / "out")
    real = os.replace

    def full_for_b(source: object, target: object) -> None:
        if "b.json" in os.fspath(target):  # type: ignore[arg-type]
            raise OSError(errno.ENOSPC, "No space left on device")
        real(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(checkpoint.os, "replace", full_for_b)
    done = cli("journal", "compact", "new", "--config", "amps.xml", "--out", "out", "--force")
    assert done.code == 4, done.output
    assert "No space left" in done.stderr and "b.json.sow" in done.stderr and "Traceback" not in done.output
    # a.json.sow was replaced before b.json.sow failed: the directory held files of two journal points
    assert _contents(journals / "out") == before


def test_a_directory_where_a_sow_file_goes_is_refused_before_the_scan(cli, journals: Path) -> None:  # noqa: ANN001
    (journals / "out" / "b.json.sow").unlink()
    (journals / "out" / "b.json.sow").mkdir()
    before = _contents(journals / "out")
    done = cli("journal", "compact", "new", "--config", "amps.xml", "--out", "out", "--force")
    assert done.code == 2, done.output  # was exit 4 ("Is a directory") after the replay, a.json.sow replaced
    assert "b.json.sow" in done.stderr and "directory" in done.stderr
    assert _contents(journals / "out") == before
