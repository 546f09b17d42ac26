"""The config's actions over real sockets: seed 000's two faucet configurations running in the
broker, checked against ``ampsctl affinity simulate`` on the same history (issue 7, actions).

Each scenario is a list of steps (connect, subscribe, replace, unsubscribe, unsubscribe all,
close). From the steps the test writes the equivalent event file, in which a connection is named
as the broker names it (``connection-N``, N counting the test's connections in connect order),
runs the real CLI ``ampsctl affinity simulate --render --format jsonl`` on it, then plays the
steps against a broker started from the seed configuration. After each step, a watcher that
subscribed to the control topic by regex (so it never counts as a publisher) must receive
exactly the Data payloads the simulator rendered for that step's event lines, in order; the
publishers' own control subscriptions must receive the same payloads from their subscribe on.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from e2e_helpers import connect, run, settings_for, w

from ampsctl.broker.run import running_broker
from ampsctl.client import Client, ClientSubscription
from ampsctl.protocol.messages import Delivery

SYMBOLS_ACTION = """<Action>
<On>
<Module>amps-action-on-manifold-affinity</Module>
<Options>
<MessageType>json</MessageType>
<ControlTopic>symbol_faucet_control</ControlTopic>
<SubscriptionTopic>/symbols/.*</SubscriptionTopic>
<Announcements>ANNOUNCEMENTS</Announcements>
</Options>
</On>
<Do>
<Module>amps-action-do-publish-message</Module>
<Options>
<MessageType>json</MessageType>
<Topic>symbol_faucet_control</Topic>
<Data>{"client_name":"{{AMPS_CLIENT_NAME}}",
"connection_name":"{{AMPS_CONNECTION_NAME}}",
"topic":"{{AMPS_TOPIC}}",
"event":"{{AMPS_AFFINITY_ACTION}}",
"subscriber_client_name":"{{AMPS_SUBSCRIBER_CLIENT_NAME}}",
"subscriber_connection_name":"{{AMPS_SUBSCRIBER_CONNECTION_NAME}}"}</Data>
</Options>
</Do>
</Action>"""  # seed 000, "Faucet Configuration Example", verbatim but for the Announcements value

COVERAGE_ACTION = """<Action>
<On>
<Module>amps-action-on-manifold-affinity</Module>
<Options>
<MessageType>json</MessageType>
<ControlTopic>space_faucet_control</ControlTopic>
<SubscriptionTopic>/space/.*</SubscriptionTopic>
<CoverageSubsetOption>udo_coverage</CoverageSubsetOption>
</Options>
</On>
<Do>
<Module>amps-action-do-publish-message</Module>
<Options>
<MessageType>json</MessageType>
<Topic>space_faucet_control</Topic>
<Data>{"client_name":"{{AMPS_CLIENT_NAME}}",
"connection_name":"{{AMPS_CONNECTION_NAME}}",
"topic":"{{AMPS_TOPIC}}",
"event":"{{AMPS_AFFINITY_ACTION}}"}</Data>
</Options>
</Do>
</Action>"""  # seed 000, "Coverage Subset Example", verbatim

CONFIG = """<AMPSConfig>
  <Name>faucet-e2e</Name>
  <Transports>
    <Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>0</InetAddr><Protocol>amps</Protocol></Transport>
  </Transports>
  JOURNAL
  <Actions>
ACTIONS
  </Actions>
</AMPSConfig>
"""
JOURNAL = """<TransactionLog><JournalDirectory>{dir}/journal</JournalDirectory><FlushInterval>5ms</FlushInterval>
    <Topic><Name>TOPIC</Name><MessageType>json</MessageType></Topic></TransactionLog>"""


def _config(action: str, *, journal_topic: str | None = None, more_actions: str = "") -> str:
    """A config for settings_for(), which formats the text with ``{dir}``: the actions' braces are doubled."""
    actions = (action + more_actions).replace("{", "{{").replace("}", "}}")
    journal = JOURNAL.replace("TOPIC", journal_topic) if journal_topic else ""
    return CONFIG.replace("JOURNAL", journal).replace("ACTIONS", actions)


# ---------------------------------------------------------------------------- scenarios as data

Step = tuple[Any, ...]


@dataclass
class _Model:
    """What the test predicts about the broker: connection numbers and live sub_ids per client."""

    numbers: dict[str, int] = field(default_factory=dict)
    subs: dict[str, list[str]] = field(default_factory=dict)  # client -> live sub_ids, engine order
    count: int = 1  # the watcher connects first: connection-1

    def events(self, step: Step) -> list[dict[str, Any]]:
        """The event-file lines of one step (docs/affinity.md, "Event files")."""
        kind, who = step[0], step[1]
        if kind == "connect":
            self.count += 1
            self.numbers[who] = self.count
            self.subs[who] = []
            return []
        conn = f"connection-{self.numbers[who]}"
        if kind == "reconnect":  # the broker closes the old connection holding the name
            self.count += 1
            self.numbers[who] = self.count
            self.subs[who] = []
            return [{"event": "disconnect", "connection": conn}]
        live = self.subs[who]
        if kind in ("subscribe", "replace"):
            _, _, topic, sub_id, *options = step
            if sub_id in live:
                live.remove(sub_id)  # a replaced subscription moves to the end, as in the engine
            live.append(sub_id)
            event = {"event": "subscribe", "connection": conn, "client": who, "topic": topic, "sub_id": sub_id}
            if options and options[0]:
                event["options"] = options[0]
            return [event]
        if kind == "unsubscribe":
            gone = list(live) if step[2] == "all" else [step[2]]
            for sub_id in gone:
                live.remove(sub_id)
            return [{"event": "unsubscribe", "connection": conn, "sub_id": sub_id} for sub_id in gone]
        assert kind == "close"
        del self.subs[who]
        return [{"event": "disconnect", "connection": conn}]


def _simulate(tmp_path: Path, config: Path, steps: list[Step]) -> list[list[str]]:
    """The Data payloads ``ampsctl affinity simulate --render`` gives for each step."""
    model = _Model()
    lines: list[bytes] = []
    step_of_line: list[int] = []
    for index, step in enumerate(steps):
        for event in model.events(step):
            lines.append(orjson.dumps(event))
            step_of_line.append(index)
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(lines) + b"\n")
    done = subprocess.run([sys.executable, "-m", "ampsctl", "affinity", "simulate", "--config", str(config),
                           "--events", str(events), "--render", "--format", "jsonl", "--no-summary"],
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()
    per_step: list[list[str]] = [[] for _ in steps]
    for row in map(orjson.loads, done.stdout.splitlines()):
        (rendered,) = row["rendered"]
        assert rendered["module"] == "amps-action-do-publish-message"
        per_step[step_of_line[row["input_line"] - 1]].append(rendered["Data"])
    return per_step


async def _drain(sub: ClientSubscription, client: Client) -> list[Delivery]:
    """Everything ``sub`` has received so far: a flush round trip orders it after what was sent."""
    await w(client.flush())
    got = []
    while sub.pending():
        message = await w(sub.next())
        assert isinstance(message, Delivery)
        got.append(message)
    return got


async def _play(uri: str, control: str, steps: list[Step], expected: list[list[str]]) -> dict[str, list[Delivery]]:
    """Play ``steps``; after each, the watcher gets exactly its payloads. Returns what each
    publisher's control subscription received (for the live ones, after a final flush)."""
    clients: dict[str, Client] = {}
    control_subs: dict[str, ClientSubscription] = {}
    watcher_client = await connect(uri, "watcher")
    watcher = await w(watcher_client.subscribe(f"^{control}$"))  # a regex subscription is never a publisher
    for step, payloads in zip(steps, expected, strict=True):
        kind, who = step[0], step[1]
        if kind == "connect":
            clients[who] = await connect(uri, who)
        elif kind in ("subscribe", "replace"):
            _, _, topic, sub_id, *options = step
            text = ",".join(filter(None, [options[0] if options else None, "replace" if kind == "replace" else None]))
            sub = await w(clients[who].subscribe(topic, sub_id=sub_id, options=text or None))
            if topic == control:
                control_subs[who] = sub
        elif kind == "unsubscribe":
            await w(clients[who].unsubscribe(step[2]))
        elif kind == "reconnect":  # the same client name logs on again: the broker drops the old connection
            assert payloads, f"step {step}: a drop that publishes nothing cannot be waited for"
            old, clients[who] = clients[who], await connect(uri, who)
            control_subs.pop(who, None)
            await w(old.wire.wait_closed())
            await w(old.close())
        else:  # close: the broker sees the socket go; the watcher's payloads say it handled it
            assert payloads, f"step {step}: a close that publishes nothing cannot be waited for"
            await w(clients.pop(who).close())
        got = [(await w(watcher.next())) for _ in payloads]
        assert [m.data.decode() for m in got] == payloads, f"after step {step}"
        assert all(m.topic == control for m in got)
    assert await _drain(watcher, watcher_client) == []  # nothing more than the simulator said
    received = {who: await _drain(sub, clients[who]) for who, sub in control_subs.items() if who in clients}
    for client in [*clients.values(), watcher_client]:
        await w(client.close())
    return received


def _check_publishers(received: dict[str, list[Delivery]], steps: list[Step], expected: list[list[str]],
                      control: str) -> None:
    """A live publisher's control subscription got every payload from its subscribe step on,
    that step included: the action publishes after the subscription is registered."""
    assert received
    for who, got in received.items():
        start = next(i for i, s in enumerate(steps) if s[0] == "subscribe" and s[1] == who and s[2] == control)
        assert [m.data.decode() for m in got] == [p for payloads in expected[start:] for p in payloads], who


def _run(tmp_path: Path, text: str, control: str, steps: list[Step]) -> tuple[dict[str, list[Delivery]], list[list[str]]]:
    settings = settings_for(tmp_path, text)
    expected = _simulate(tmp_path, tmp_path / "amps.xml", steps)

    async def main() -> dict[str, list[Delivery]]:
        async with running_broker(settings) as broker:
            return await _play(broker.uris[0], control, steps, expected)

    return run(main()), expected


SYMBOLS = "symbol_faucet_control"
SYMBOL_STEPS: list[Step] = [
    ("connect", "pub-a"), ("subscribe", "pub-a", SYMBOLS, "ctl"),
    ("connect", "pub-b"), ("subscribe", "pub-b", SYMBOLS, "ctl"),
    ("connect", "sub-1"), ("connect", "sub-2"),
    ("subscribe", "sub-1", "/symbols/IBM", "1"),
    ("subscribe", "sub-2", "/symbols/IBM", "1"),
    ("subscribe", "sub-2", "/symbols/MSFT", "2"),
    ("subscribe", "sub-1", "/symbols/.*", "regex"),  # a regex subscription: no interest
    ("unsubscribe", "sub-1", "1"),
    ("subscribe", "sub-1", "/symbols/AAPL", "3"),
    ("replace", "sub-1", "/symbols/ORCL", "3"),  # the replace option: AAPL goes, ORCL comes
    ("close", "sub-2"),  # IBM loses its last subscriber, MSFT too
    ("subscribe", "sub-1", "/symbols/GOOG", "4"),
    ("close", "pub-a"),  # publisher loss: its topics move to pub-b
    ("connect", "pub-c"), ("subscribe", "pub-c", SYMBOLS, "ctl"),
    ("subscribe", "sub-1", "/symbols/TSLA", "5"),  # least loaded: pub-c
    ("unsubscribe", "sub-1", "all"),
]


@pytest.mark.parametrize("announcements", ["all", "default"])
def test_symbols_faucet_matches_simulate(tmp_path: Path, announcements: str) -> None:
    text = _config(SYMBOLS_ACTION.replace("ANNOUNCEMENTS", announcements))
    received, expected = _run(tmp_path, text, SYMBOLS, SYMBOL_STEPS)
    _check_publishers(received, SYMBOL_STEPS, expected, SYMBOLS)
    events = [orjson.loads(p) for payloads in expected for p in payloads]
    # the scenario exercises what it claims (not a check of the engine, which simulate is)
    assert {e["event"] for e in events} == {"assign", "unassign"}
    assert any(e["client_name"] == "pub-c" for e in events)
    if announcements == "all":
        assert all(e["subscriber_client_name"] for e in events)
        assert sum(e["event"] == "assign" and e["topic"] == "/symbols/IBM" for e in events) == 2
    else:
        assert not any(e["subscriber_client_name"] for e in events)
        assert sum(e["event"] == "assign" and e["topic"] == "/symbols/IBM" for e in events) == 1


SPACE = "space_faucet_control"
SPACE_STEPS: list[Step] = [
    ("connect", "pub-c"), ("subscribe", "pub-c", SPACE, "ctl", "udo_coverage=/space/C.*"),
    ("connect", "sub-1"), ("connect", "sub-2"),
    ("subscribe", "sub-1", "/space/C", "1"),
    ("subscribe", "sub-1", "/space/COBALT", "2"),
    ("subscribe", "sub-2", "/space/A", "1"),  # nobody covers it: no_handlers
    ("subscribe", "sub-2", "/space/E", "2"),
    ("connect", "pub-ae"), ("subscribe", "pub-ae", SPACE, "ctl", "udo_coverage=/space/(A|E)"),  # takes A and E
    ("connect", "pub-bad"), ("subscribe", "pub-bad", SPACE, "ctl", "udo_coverage=[z-a]"),  # invalid PCRE: ignored
    ("subscribe", "pub-bad", SPACE, "ctl2"),  # no coverage option: ignored
    ("connect", "pub-all"), ("subscribe", "pub-all", SPACE, "ctl", "udo_coverage=.*"),
    ("subscribe", "sub-2", "/space/CARBON", "3"),  # pub-c has 2, pub-all 0: pub-all
    ("close", "pub-c"),  # C and COBALT: only pub-all covers them
    ("unsubscribe", "sub-2", "all"),
    ("close", "sub-1"),
]


def test_coverage_faucet_matches_simulate_with_journaled_assignments(tmp_path: Path) -> None:
    text = _config(COVERAGE_ACTION, journal_topic=SPACE)
    received, expected = _run(tmp_path, text, SPACE, SPACE_STEPS)
    _check_publishers(received, SPACE_STEPS, expected, SPACE)
    events = [orjson.loads(p) for payloads in expected for p in payloads]
    assert {e["event"] for e in events} == {"assign", "unassign", "no_handlers"}
    assert not any(e["client_name"] == "pub-bad" for e in events)
    assert all(m.bookmark for got in received.values() for m in got)  # the control topic is journaled


def test_unsupported_actions_are_reported_at_start_up(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    schedule = """<Action><On><Module>amps-action-on-schedule</Module><Options><Every>1h</Every></Options></On>
<Do><Module>amps-action-do-compact-sow</Module></Do></Action>"""
    text = _config(COVERAGE_ACTION, more_actions=schedule)
    settings = settings_for(tmp_path, text)

    async def main() -> None:
        async with running_broker(settings) as broker:
            client = await connect(broker.uris[0], "probe")
            await w(client.close())

    with caplog.at_level(logging.WARNING, logger="ampsctl.broker"):
        run(main())
    lines = [r.getMessage() for r in caplog.records if "not supported" in r.getMessage()]
    assert len(lines) == 1, lines  # the faucet action runs; only the schedule action is reported
    assert lines[0].startswith(f"{tmp_path / 'amps.xml'}:") and "amps-action-on-schedule" in lines[0]
    assert "will not run" in lines[0]


RECONNECT_STEPS: list[Step] = [
    ("connect", "pub-a"), ("subscribe", "pub-a", SYMBOLS, "ctl"),
    ("connect", "sub-1"), ("subscribe", "sub-1", "/symbols/IBM", "1"),
    ("reconnect", "pub-a"),  # the old connection is dropped by the broker: a publisher loss
    ("subscribe", "pub-a", SYMBOLS, "ctl"),  # the new connection takes the waiting topic
    ("subscribe", "sub-1", "/symbols/MSFT", "2"),
]


@pytest.mark.parametrize("announcements", ["all", "default"])
def test_publisher_dropped_by_a_reconnect_taking_its_name(tmp_path: Path, announcements: str) -> None:
    text = _config(SYMBOLS_ACTION.replace("ANNOUNCEMENTS", announcements))
    received, expected = _run(tmp_path, text, SYMBOLS, RECONNECT_STEPS)
    events = [orjson.loads(p) for payloads in expected for p in payloads]
    assert [e["event"] for e in events] == (["assign", "unassign", "no_handlers", "assign", "assign"]
                                            if announcements == "all" else ["assign", "no_handlers", "assign", "assign"])
    assert events[-1]["connection_name"] != events[0]["connection_name"]  # the new connection, same client name
    assert [m.data.decode() for m in received["pub-a"]] == [p for payloads in expected[5:] for p in payloads]


def test_cli_broker_logs_unrun_actions_and_runs_the_faucet(tmp_path: Path) -> None:
    """``ampsctl broker run`` as a process: the start-up warning names the unsupported action's
    config line, and the faucet action of the same config publishes its assignment."""
    schedule = """<Action><On><Module>amps-action-on-schedule</Module><Options><Every>1h</Every></Options></On>
<Do><Module>amps-action-do-compact-sow</Module></Do></Action>"""
    config = tmp_path / "amps.xml"
    config.write_text(_config(COVERAGE_ACTION, more_actions=schedule).format(dir=tmp_path))
    log = tmp_path / "broker.log"

    async def scenario() -> None:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ampsctl", "broker", "run", "--config", str(config), "--port", "0",
            stdout=asyncio.subprocess.PIPE, stderr=log.open("ab"), cwd=tmp_path)
        try:
            assert process.stdout is not None
            line = (await w(process.stdout.readline(), 30)).decode()
            assert line.startswith("listening tcp://"), (line, log.read_text())
            uri = line.split()[1]
            pub = await connect(uri, "pub")
            control = await w(pub.subscribe(SPACE, options="udo_coverage=/space/.*"))
            sub = await connect(uri, "sub")
            await w(sub.subscribe("/space/X"))
            assignment = orjson.loads((await w(control.next())).data)
            assert assignment == {"client_name": "pub", "connection_name": "connection-1", "topic": "/space/X",
                                  "event": "assign"}
            await w(pub.close())
            await w(sub.close())
        finally:
            process.send_signal(signal.SIGTERM)
            assert await w(process.wait(), 30) == 0

    run(scenario(), 90)
    warnings = [line for line in log.read_text().splitlines() if "will not run" in line]
    assert len(warnings) == 1 and f"{config}:" in warnings[0] and "amps-action-on-schedule" in warnings[0], warnings
