"""Every scenario in tests/affinity/scenarios/ through the engine, in its announcement mode.

Each file names the rule it shows (``description``), the action's settings, a script of
subscription events and the exact affinity events expected (scenario_notation.py explains
the notation). ``warnings`` lists the script lines that must warn; no other line may.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from scenario_notation import expected_lines, parse_script, show

from ampsctl.affinity.engine import FaucetEngine
from ampsctl.affinity.model import AffinitySettings, Announcements

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.toml"))


def load(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def settings_of(scenario: dict) -> AffinitySettings:
    raw = scenario["settings"]
    return AffinitySettings(
        raw["control_topic"],
        raw["subscription_topic"],
        Announcements(raw.get("announcements", "default")),
        raw.get("coverage_option"),
    )


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario(path: Path) -> None:
    scenario = load(path)
    engine = FaucetEngine(settings_of(scenario))
    shown, warned = [], []
    for line, event in enumerate(parse_script(scenario["events"]), 1):
        shown += [show(line, e) for e in engine.handle(event)]
        if engine.warnings:
            warned.append(line)
            engine.warnings.clear()
    assert shown == expected_lines(scenario["expected"]), scenario["description"]
    assert warned == scenario.get("warnings", [])


def test_scenarios_cover_both_modes_with_and_without_coverage() -> None:
    kinds = {(settings_of(load(p)).announcements, settings_of(load(p)).coverage_option is not None) for p in SCENARIOS}
    assert kinds == {(mode, coverage) for mode in Announcements for coverage in (False, True)}
