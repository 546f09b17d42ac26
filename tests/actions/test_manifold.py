"""Reading manifold-affinity actions from a config, and {{VARIABLE}} rendering."""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.actions.manifold import manifold_actions, pick_action
from ampsctl.actions.templates import render
from ampsctl.affinity.model import AffinityAction, AffinityEvent, Announcements
from ampsctl.config.loader import load_config
from ampsctl.config.model import ConfigModel
from ampsctl.errors import InputError, UsageError

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def actions_of(path: Path) -> list:
    return manifold_actions(ConfigModel(load_config(str(path), {})))


def test_seed_examples_read_as_the_seed_writes_them() -> None:
    (symbols,) = actions_of(SAMPLES / "manifold-affinity-default.xml")
    assert symbols.settings.control_topic == "symbol_faucet_control"
    assert symbols.settings.subscription_topic == "/symbols/.*"
    assert symbols.settings.announcements is Announcements.ALL
    assert symbols.settings.coverage_option is None
    assert symbols.message_type == "json"
    assert [step.module for step in symbols.do] == ["amps-action-do-publish-message"]
    (space,) = actions_of(SAMPLES / "manifold-affinity-coverage.xml")
    assert space.settings.coverage_option == "udo_coverage"
    assert space.settings.announcements is Announcements.DEFAULT


def test_rendering_a_do_step_fills_known_variables_and_blanks_the_rest() -> None:
    (symbols,) = actions_of(SAMPLES / "manifold-affinity-default.xml")
    event = AffinityEvent(AffinityAction.NO_HANDLERS, "/symbols/IBM", None, None, "sub-1", "c-sub-1")
    data = symbols.do[0].render(event)["Data"]
    assert '"client_name":""' in data and '"topic":"/symbols/IBM"' in data
    assert '"event":"no_handlers"' in data and '"subscriber_connection_name":"c-sub-1"' in data


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{AMPS_TOPIC}}", "/t/A"),
        ("{{ AMPS_TOPIC }}/{{MISSING}}!", "/t/A/!"),
        ("{AMPS_TOPIC} {{{AMPS_TOPIC}}}", "{AMPS_TOPIC} {/t/A}"),
        ('"q":"{{QUOTE}}"', '"q":"a"b"'),  # substitution is textual, as in AMPS
    ],
)
def test_render(template: str, expected: str) -> None:
    assert render(template, {"AMPS_TOPIC": "/t/A", "QUOTE": 'a"b'}) == expected


def test_pick_action(tmp_path: Path) -> None:
    one = actions_of(SAMPLES / "manifold-affinity-default.xml")
    assert pick_action(one, None, "f") is one[0]
    assert pick_action(one, "1", "f") is one[0]
    assert pick_action(one, "symbol_faucet_control", "f") is one[0]
    with pytest.raises(UsageError, match="names no manifold-affinity action"):
        pick_action(one, "2", "f")
    with pytest.raises(UsageError, match="has no action"):
        pick_action([], None, "f")


def test_a_bad_subscription_topic_points_at_its_text(tmp_path: Path) -> None:
    path = tmp_path / "bad.xml"
    path.write_text(
        "<AMPSConfig><Name>x</Name><Actions><Action><On><Module>amps-action-on-manifold-affinity</Module>\n"
        "<Options><ControlTopic>c</ControlTopic><SubscriptionTopic>[a</SubscriptionTopic></Options></On></Action></Actions></AMPSConfig>\n"
    )
    with pytest.raises(InputError, match="not a valid PCRE") as caught:
        actions_of(path)
    assert (caught.value.location.line, caught.value.location.col) == (2, 59)
