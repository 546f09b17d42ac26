"""actions/runner.py and templates.py: the pure side of running a config's faucet actions."""

from __future__ import annotations

from pathlib import Path

from ampsctl.actions.plan import plan_actions
from ampsctl.actions.runner import FaucetActions
from ampsctl.actions.templates import render
from ampsctl.affinity.model import Disconnect, Subscribe
from ampsctl.config.loader import load_config
from ampsctl.config.model import ConfigModel

ACTION = """<Action><On><Module>amps-action-on-manifold-affinity</Module><Options><MessageType>json</MessageType>
<ControlTopic>{control}</ControlTopic><SubscriptionTopic>^/s/</SubscriptionTopic></Options></On>
<Do><Module>amps-action-do-publish-message</Module><Options><Topic>{control}</Topic>
<Data>{control} {{{{AMPS_AFFINITY_ACTION}}}} {{{{AMPS_TOPIC}}}} {{{{AMPS_INSTANCE_NAME}}}}</Data></Options></Do></Action>"""


def _runner(tmp_path: Path) -> FaucetActions:
    path = tmp_path / "amps.xml"
    actions = ACTION.format(control="ctl-1") + ACTION.format(control="ctl-2")
    path.write_text(f"<AMPSConfig><Name>x</Name><Actions>{actions}</Actions></AMPSConfig>")
    plan = plan_actions(ConfigModel(load_config(str(path))))
    assert [a.number for a in plan.actions] == [1, 2] and not plan.notes
    return FaucetActions(plan.actions)


def test_runs_come_in_config_order_and_render_with_the_context(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    context = {"AMPS_INSTANCE_NAME": "inst", "AMPS_TOPIC": "overridden by the event"}
    for control in ("ctl-1", "ctl-2"):
        assert runner.handle(Subscribe("p", "pub", control, control), context) == ([], [])
    runs, warnings = runner.handle(Subscribe("s", "sub", "/s/A", "1"), context)
    assert warnings == []
    assert [run.steps[0]["Data"] for run in runs] == ["ctl-1 assign /s/A inst", "ctl-2 assign /s/A inst"]
    runs, _ = runner.handle(Disconnect("s"), context)
    assert [(run.action.number, run.event.action.value) for run in runs] == [(1, "unassign"), (2, "unassign")]


def test_engine_errors_become_warnings(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    runner.handle(Subscribe("c", "one", "x", "1"), {})
    runs, warnings = runner.handle(Subscribe("c", "two", "x", "2"), {})  # a connection changing its client name
    assert runs == [] and len(warnings) == 2 and all("belongs to client" in w for w in warnings)


def test_render_bytes_and_missing_variables() -> None:
    assert render("a{{AMPS_BYTE_01}}b{{ AMPS_BYTE_3D }}c{{NOPE}}", {}) == "a\x01b=c"
    assert render("{{AMPS_BYTE_0g}}{{X}}", {"X": "{{AMPS_TOPIC}}"}) == "{{AMPS_TOPIC}}"  # one pass, no re-expansion
