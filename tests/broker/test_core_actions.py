"""The config's actions in the sans-IO broker core: the faucet engine driven by the core's own
subscription changes, and amps-action-do-publish-message through the normal publish path.

The reference is always the engine itself (``FaucetEngine`` fed the equivalent event list, and
``DoStep.render``, the functions ``ampsctl affinity simulate --render`` uses): the broker and the
simulator must never disagree (DESIGN.md, "One affinity engine").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from core_helpers import NOW, frames_for, logged_on, send, spec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ampsctl.actions.plan import ActionPlan, plan_actions
from ampsctl.affinity.engine import FaucetEngine
from ampsctl.affinity.model import Disconnect, Subscribe, SubscriptionEvent, Unsubscribe
from ampsctl.broker.core import Append, BrokerCore, CoreSettings, Log, LogLevel, RecordedTopics, Send
from ampsctl.broker.core.action_runner import connection_name
from ampsctl.broker.core.replay import StartReplay
from ampsctl.config.loader import load_config
from ampsctl.config.model import ConfigModel
from ampsctl.options import parse_options
from ampsctl.protocol.cmdoptions import HeartbeatAction, parse_command_options
from ampsctl.protocol.commands import Heartbeat, Logon, Subscribe as SubscribeCommand, Unsubscribe as UnsubscribeCommand
from ampsctl.protocol.acks import AckType
from ampsctl.protocol.messages import Delivery
from ampsctl.sow import SowStore

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
MICROS = 1_000_000

ACTION = """<AMPSConfig><Name>{name}</Name><Actions>{actions}</Actions></AMPSConfig>"""
MANIFOLD = """<Action><On><Module>amps-action-on-manifold-affinity</Module><Options>
  <MessageType>json</MessageType><ControlTopic>ctl</ControlTopic><SubscriptionTopic>^/sym/</SubscriptionTopic>
  {extra}</Options></On>{do}</Action>"""
PUBLISH = """<Do><Module>amps-action-do-publish-message</Module><Options><MessageType>json</MessageType>
  <Topic>{topic}</Topic><Data>{data}</Data>{more}</Options></Do>"""
BODY = ('{"e":"{{AMPS_AFFINITY_ACTION}}","t":"{{AMPS_TOPIC}}","c":"{{AMPS_CLIENT_NAME}}",'
        '"n":"{{AMPS_CONNECTION_NAME}}","s":"{{AMPS_SUBSCRIBER_CLIENT_NAME}}"}')


def _plan(tmp_path: Path, actions: str, name: str = "core-test") -> tuple[ActionPlan, ConfigModel]:
    path = tmp_path / "amps.xml"
    path.write_text(ACTION.format(name=name, actions=actions))
    model = ConfigModel(load_config(str(path)))
    return plan_actions(model), model


def _core(plan: ActionPlan, **settings: Any) -> BrokerCore:
    user = frozenset(o for a in plan.actions if (o := a.manifold.settings.coverage_option))
    return BrokerCore(CoreSettings(actions=plan, user_options=user, **settings), SowStore([spec()]))


def _sample_core(name: str) -> tuple[BrokerCore, ActionPlan]:
    plan = plan_actions(ConfigModel(load_config(str(SAMPLES / name))))
    assert len(plan.actions) == 1 and not plan.notes
    return _core(plan), plan


def _control(actions: list, conn: int, topic: str) -> list[str]:
    return [m.data.decode() for m in frames_for(actions, conn) if isinstance(m, Delivery) and m.topic == topic]


def _subscribe(core: BrokerCore, conn: int, topic: str, sub_id: str, options: str | None = None) -> list:
    return send(core, conn, SubscribeCommand(cid=sub_id, topic=topic, sub_id=sub_id, acks=frozenset({AckType.PROCESSED}),
                                             options=parse_command_options(options, user_names=core.settings.user_options)))


# ---------------------------------------------------------------------------- the plan


def test_plan_runs_manifold_publish_actions_and_notes_everything_else(tmp_path: Path) -> None:
    good = MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data="x", more=""))
    actions = "".join([
        good,
        "<Action><On><Module>amps-action-on-schedule</Module><Options><Every>1h</Every></Options></On>"
        "<Do><Module>amps-action-do-compact-sow</Module></Do></Action>",
        MANIFOLD.format(extra="", do="<Do><Module>amps-action-do-extract-values</Module></Do>"
                        + PUBLISH.format(topic="ctl", data="x", more="")),
        MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data="x", more="").replace(">json<", ">fix<")),
        MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data="x", more="<Delta>true</Delta><UpdateOnly>true</UpdateOnly>")),
        MANIFOLD.format(extra="<Announcements>some</Announcements>", do=PUBLISH.format(topic="ctl", data="x", more="")),
    ])
    plan, _ = _plan(tmp_path, actions)
    assert [a.number for a in plan.actions] == [1]
    assert plan.actions[0].publisher == "ampsctl-action-1" and plan.instance_name == "core-test"
    assert len(plan.notes) == 5  # every action that does not run is reported, one line each
    path = str(tmp_path / "amps.xml")
    assert all(note.startswith(path + ":") and "not" in note for note in plan.notes)
    assert "amps-action-on-schedule" in plan.notes[0] and "amps-action-do-compact-sow" in plan.notes[0]
    assert "amps-action-do-extract-values" in plan.notes[1]
    assert "MessageType fix" in plan.notes[2] and "UpdateOnly" in plan.notes[3]
    assert "Announcements" in plan.notes[4]


# ---------------------------------------------------------------------------- the engine, driven by the core


def test_assignment_published_to_the_publisher_after_the_subscribe_ack(tmp_path: Path) -> None:
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data=BODY, more="")))
    core = _core(plan)
    logged_on(core, 1, "pub-a")
    logged_on(core, 2, "sub-x")
    assert _control(_subscribe(core, 1, "ctl", "c"), 1, "ctl") == []
    out = _subscribe(core, 2, "/sym/IBM", "s1")
    sends = [a for a in out if isinstance(a, Send)]
    assert [a.conn for a in sends] == [2, 1]  # the command's own ack first, then the action's publish
    assert frames_for(sends[:1], 2)[0].ack_type is AckType.PROCESSED
    got = [orjson.loads(body) for body in _control(out, 1, "ctl")]
    assert got == [{"e": "assign", "t": "/sym/IBM", "c": "pub-a", "n": connection_name(1), "s": ""}]
    assert [orjson.loads(b) for b in _control(send(core, 2, UnsubscribeCommand(cid="u", sub_ids=("s1",))), 1, "ctl")] \
        == [{"e": "unassign", "t": "/sym/IBM", "c": "pub-a", "n": "connection-1", "s": ""}]


def test_publisher_dropped_for_heartbeat_timeout_hands_its_topics_over(tmp_path: Path) -> None:
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data=BODY, more="")))
    core = _core(plan)
    for conn, name in ((1, "pub-a"), (2, "pub-b"), (3, "sub")):
        logged_on(core, conn, name)
    _subscribe(core, 1, "ctl", "c")
    _subscribe(core, 2, "ctl", "c")
    assert [orjson.loads(b)["c"] for b in _control(_subscribe(core, 3, "/sym/A", "a"), 1, "ctl")] == ["pub-a"]
    send(core, 1, Heartbeat(action=HeartbeatAction.START, interval=1))
    core.tick(NOW + MICROS)  # pub-a silent for an interval: a heartbeat it must answer
    out = core.tick(NOW + 5 * MICROS)  # no answer for 4 s with a 1 s interval: dropped
    assert any(getattr(a, "reason", "") == "heartbeat timeout" for a in out)
    assert [orjson.loads(b) for b in _control(out, 2, "ctl")] == \
        [{"e": "assign", "t": "/sym/A", "c": "pub-b", "n": "connection-2", "s": ""}]


def test_reconnect_taking_the_name_is_a_publisher_loss(tmp_path: Path) -> None:
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data=BODY, more="")))
    core = _core(plan)
    for conn, name in ((1, "pub-a"), (3, "sub")):
        logged_on(core, conn, name)
    _subscribe(core, 1, "ctl", "c")
    _subscribe(core, 3, "/sym/A", "a")
    core.connected(4, NOW)
    _subscribe(core, 3, "^ctl$", "watch")  # a regex watcher of the control topic: not a publisher
    out = send(core, 4, Logon(cid="l", client_name="pub-a"))
    assert [orjson.loads(b)["e"] for b in _control(out, 3, "ctl")] == ["no_handlers"]
    out = _subscribe(core, 4, "ctl", "c")
    assert [orjson.loads(b) for b in _control(out, 4, "ctl")] == \
        [{"e": "assign", "t": "/sym/A", "c": "pub-a", "n": "connection-4", "s": ""}]


def test_action_publish_is_journaled_under_the_action_publisher_name(tmp_path: Path) -> None:
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data=BODY, more="")))
    core = _core(plan, recorded=RecordedTopics.from_entries([("ctl", "json")]))
    logged_on(core, 1, "pub-a")
    logged_on(core, 2, "sub")
    _subscribe(core, 1, "ctl", "c")
    out = _subscribe(core, 2, "/sym/A", "a")
    records = [a.record for a in out if isinstance(a, Append)]
    assert len(records) == 1 and records[0].topic == "ctl" and records[0].client_name == "ampsctl-action-1"
    (delivery,) = [m for m in frames_for(out, 1) if isinstance(m, Delivery)]
    assert delivery.bookmark == records[0].bookmark  # bookmarked like any journaled publish


def test_an_action_publisher_name_is_reserved(tmp_path: Path) -> None:
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data=BODY, more="")))
    core = _core(plan)
    core.connected(1, NOW)
    out = send(core, 1, Logon(cid="l", acks=frozenset({AckType.PROCESSED}), client_name="ampsctl-action-1"))
    (ack,) = frames_for(out, 1)
    assert (ack.status.value, ack.reason) == ("failure", "name in use") and not core.sessions[1].logged_on
    logged_on(core, 2, "ampsctl-action-2")  # no second action in this config: an ordinary name
    assert core.names["ampsctl-action-2"] == 2


def test_failing_do_step_is_logged_and_stops_the_remaining_steps(tmp_path: Path) -> None:
    steps = PUBLISH.format(topic="{{AMPS_TOPIC}}.*", data="first", more="") + PUBLISH.format(topic="ctl", data="second", more="")
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra="", do=steps))
    core = _core(plan)
    logged_on(core, 1, "pub-a")
    logged_on(core, 2, "sub")
    _subscribe(core, 1, "ctl", "c")
    out = _subscribe(core, 2, "/sym/A", "a")
    assert _control(out, 1, "ctl") == []
    warnings = [a.message for a in out if isinstance(a, Log) and a.level is LogLevel.WARNING]
    assert len(warnings) == 1 and "Do step 1 failed" in warnings[0] and "regex" in warnings[0]


def test_context_variables_and_delta_step(tmp_path: Path) -> None:
    data = '{"id":"{{AMPS_TOPIC}}","at":"{{AMPS_DATETIME}}","unix":"{{AMPS_UNIX_TIMESTAMP}}","i":"{{AMPS_INSTANCE_NAME}}"}'
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra="", do=PUBLISH.format(topic="orders", data=data, more="<Delta>true</Delta>")),
                    name="inst-9")
    core = _core(plan)
    logged_on(core, 1, "pub-a")
    logged_on(core, 2, "sub")
    _subscribe(core, 1, "ctl", "c")
    _subscribe(core, 2, "orders", "o")
    out = _subscribe(core, 2, "/sym/A", "a")
    (body,) = _control(out, 2, "orders")
    assert orjson.loads(body) == {"id": "/sym/A", "at": "20260101T000000.000000Z", "unix": str(NOW // MICROS), "i": "inst-9"}
    assert len(core.store.route("orders", "json").topics["orders"]) == 1  # the SOW stored it (a delta insert)


# ---------------------------------------------------------------------------- broker == simulate, any history


_CONNS = (1, 2, 3)  # few connections: histories where one is both publisher and subscriber
_TOPICS = ("ctl", "ctl", "/sym/A", "/sym/B", "other", "/sym/.*")
_COVERAGE = (None, "udo_coverage=/sym/A", "udo_coverage=/sym/(A|B)", "udo_coverage=[z-a]", "udo_coverage=.")
_step = st.one_of(
    st.tuples(st.just("sub"), st.sampled_from(_CONNS), st.sampled_from(_TOPICS), st.sampled_from("abc"),
              st.sampled_from(_COVERAGE), st.booleans()),
    st.tuples(st.just("unsub"), st.sampled_from(_CONNS), st.sampled_from(("a", "b", "c", "all"))),
    st.tuples(st.just("drop"), st.sampled_from(_CONNS)),
)


def _replay(plan: ActionPlan, steps: list[tuple]) -> tuple[list[str], list[str]]:
    """Drive the core with ``steps``; return the published control bodies and the engine's."""
    core = _core(plan)
    engine = FaucetEngine(plan.actions[0].manifold.settings)
    do = plan.actions[0].manifold.do[0]
    live: dict[int, set[str]] = {}
    events: list[SubscriptionEvent] = []
    got: list[str] = []
    watcher = 99  # sees every control-topic publish; its subscription is "other", not interest
    logged_on(core, watcher, "watcher")
    _subscribe(core, watcher, "^ctl$", "w")  # a regex subscription: never a publisher
    events.append(Subscribe(connection_name(watcher), "watcher", "^ctl$", "w", {}))
    for step in steps:
        kind, conn = step[0], step[1]
        if conn not in live:
            logged_on(core, conn, f"client-{conn}")
            live[conn] = set()
        if kind == "sub":
            _, _, topic, sub_id, options, replace = step
            if sub_id in live[conn] and not replace:
                continue  # refused by the broker (subscription already exists): no event
            text = ",".join(filter(None, [options, "replace" if replace else None])) or None
            out = _subscribe(core, conn, topic, sub_id, text)
            live[conn].add(sub_id)
            user = {k: v for k, v in parse_options(options or "").items() if k.startswith("udo_")}
            events.append(Subscribe(connection_name(conn), f"client-{conn}", topic, sub_id, user))
        elif kind == "unsub":
            sub_id = step[2]
            out = send(core, conn, UnsubscribeCommand(cid="u", sub_ids=(sub_id,)))
            gone = sorted(live[conn]) if sub_id == "all" else [sub_id] if sub_id in live[conn] else []
            order = [s for s in _order(events, conn) if s in gone]
            events += [Unsubscribe(connection_name(conn), s) for s in order]
            live[conn] -= set(gone)
        else:
            out = core.disconnected(conn, NOW)
            events.append(Disconnect(connection_name(conn)))
            del live[conn]
        got += _control(out, watcher, "ctl")
    expected = [do.render(e)["Data"] for event in events for e in engine.handle(event)]
    return got, expected


def _order(events: list[SubscriptionEvent], conn: int) -> list[str]:
    """The live sub_ids of ``conn`` in the engine's order (a replace moves a sub_id to the end)."""
    name, alive = connection_name(conn), {}
    for event in events:
        if isinstance(event, Subscribe) and event.connection == name:
            alive.pop(event.sub_id, None)
            alive[event.sub_id] = True
        elif isinstance(event, Unsubscribe) and event.connection == name:
            alive.pop(event.sub_id, None)
        elif isinstance(event, Disconnect) and event.connection == name:
            alive.clear()
    return list(alive)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_step, max_size=30), announcements=st.sampled_from(("default", "all")),
       coverage=st.booleans())
def test_core_publishes_exactly_what_the_engine_emits(tmp_path: Path, steps: list[tuple], announcements: str,
                                                      coverage: bool) -> None:
    extra = f"<Announcements>{announcements}</Announcements>"
    if coverage:
        extra += "<CoverageSubsetOption>udo_coverage</CoverageSubsetOption>"
    body = BODY.replace('"}}', '","sn":"{{AMPS_SUBSCRIBER_CONNECTION_NAME}}"}}')
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra=extra, do=PUBLISH.format(topic="ctl", data=body, more="")))
    got, expected = _replay(plan, steps)
    assert got == expected


def test_sample_configs_load_and_run() -> None:
    for name in ("manifold-affinity-default.xml", "manifold-affinity-coverage.xml"):
        core, plan = _sample_core(name)
        control = plan.actions[0].manifold.settings.control_topic
        logged_on(core, 1, "pub")
        _subscribe(core, 1, control, "c", "udo_coverage=.*")
        logged_on(core, 2, "sub")
        topic = "/symbols/IBM" if "default" in name else "/space/C"
        bodies = _control(_subscribe(core, 2, topic, "s"), 1, control)
        assert [orjson.loads(b)["event"] for b in bodies] == ["assign"], name


def test_disconnect_of_a_publisher_that_also_subscribes_follows_the_engine_order(tmp_path: Path) -> None:
    """The engine removes a closing connection's interest before its publisher role; a string of
    unsubscribes in creation order would hand the topic to pub-b first (docs/affinity.md)."""
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data=BODY, more="")))
    steps = [("sub", 1, "ctl", "a", None, False), ("sub", 2, "ctl", "a", None, False),
             ("sub", 1, "/sym/A", "b", None, False), ("drop", 1)]
    got, expected = _replay(plan, steps)
    assert got == expected
    assert [orjson.loads(b)["e"] for b in got] == ["assign", "unassign"]


def test_a_replace_keeping_the_topic_keeps_its_publisher(tmp_path: Path) -> None:
    """Seed 000: assignments are sticky. A replace used to reach the engine as an unsubscribe and
    a subscribe: the topic lost its interest for a moment and went to the least-loaded publisher."""
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data=BODY, more="")))
    core = _core(plan)
    for conn, name in ((1, "pub-a"), (2, "pub-b"), (3, "sub")):
        logged_on(core, conn, name)
    _subscribe(core, 1, "ctl", "c")
    _subscribe(core, 3, "/sym/A", "a")
    _subscribe(core, 3, "/sym/B", "b")  # pub-a holds both
    _subscribe(core, 2, "ctl", "c")  # pub-b joins with nothing
    out = _subscribe(core, 3, "/sym/A", "a", "replace")
    assert _control(out, 1, "ctl") == [] and _control(out, 2, "ctl") == []
    out = _subscribe(core, 1, "ctl", "c", "replace")  # the publisher never left the control topic
    assert _control(out, 1, "ctl") == [] and _control(out, 2, "ctl") == []
    out = send(core, 3, UnsubscribeCommand(cid="u", sub_ids=("a",)))
    assert [orjson.loads(b)["e"] for b in _control(out, 1, "ctl")] == ["unassign"]


def test_unsubscribing_a_replace_that_is_still_looking_for_its_bookmark_removes_the_replaced_interest(tmp_path: Path) -> None:
    """A bookmark_not_found=fail replace is announced only when its start is found; unsubscribed
    before that, the subscription it replaced went without the engine hearing of it, and the
    topic kept its publisher for good."""
    plan, _ = _plan(tmp_path, MANIFOLD.format(extra="", do=PUBLISH.format(topic="ctl", data=BODY, more="")))
    core = _core(plan, recorded=RecordedTopics.from_entries([("/sym/A", "json")]))
    for conn, name in ((1, "pub-a"), (3, "sub")):
        logged_on(core, conn, name)
    _subscribe(core, 1, "ctl", "c")
    _subscribe(core, 3, "/sym/A", "a")
    pending = send(core, 3, SubscribeCommand(cid="a", topic="/sym/A", sub_id="a", bookmark="0",
                                             options=parse_command_options("replace,bookmark_not_found=fail")))
    assert any(isinstance(action, StartReplay) for action in pending)  # unannounced until its start is found
    out = send(core, 3, UnsubscribeCommand(cid="u", sub_ids=("a",)))
    assert [orjson.loads(b) for b in _control(out, 1, "ctl")] == \
        [{"e": "unassign", "t": "/sym/A", "c": "pub-a", "n": "connection-1", "s": ""}]
