"""samples/affinity: both seed 000 examples run through the real CLI and give their expected output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples" / "affinity"
CONFIGS = {"symbols": "manifold-affinity-default.xml", "space": "manifold-affinity-coverage.xml"}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_sample_script_gives_its_expected_events(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ampsctl", "affinity", "simulate", "--config", str(ROOT / "samples" / CONFIGS[name]),
         "--events", str(SAMPLES / f"{name}.events.jsonl"), "--format", "jsonl", "--no-summary"],
        capture_output=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    actual = [orjson.loads(line) for line in done.stdout.splitlines()]
    expected = [orjson.loads(line) for line in (SAMPLES / f"{name}.expected.jsonl").read_bytes().splitlines()]
    assert actual == expected
    assert b"Traceback" not in done.stderr


def test_every_script_has_an_expected_file_and_a_config() -> None:
    scripts = {p.name.removesuffix(".events.jsonl") for p in SAMPLES.glob("*.events.jsonl")}
    expected = {p.name.removesuffix(".expected.jsonl") for p in SAMPLES.glob("*.expected.jsonl")}
    assert scripts == expected == set(CONFIGS)
