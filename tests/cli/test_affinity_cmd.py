"""``ampsctl affinity simulate``: golden-file tests of the real CLI.

Each case runs ``python -m ampsctl affinity simulate ...`` in a subprocess (working directory:
a temporary directory with the case's files) and compares the command line, exit code,
stdout and stderr with ``tests/cli/golden/affinity/<case>.txt``. To accept new output after
an intended change::

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/cli/test_affinity_cmd.py

then review the diff of tests/cli/golden/affinity/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clitools import GoldenCase, check_golden, orphan_goldens, run_ampsctl, run_golden

GOLDEN = Path(__file__).resolve().parent / "golden" / "affinity"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"

SCRIPT = b"\n".join([
    b'{"event":"subscribe","connection":"p1","client":"pub-a","topic":"ctl","sub_id":"1"}',
    b'{"event":"subscribe","connection":"s1","client":"sub-x","topic":"/t/A","sub_id":"1"}',
    b'{"event":"subscribe","connection":"s2","client":"sub-y","topic":"/t/A","sub_id":"1"}',
    b'{"event":"subscribe","connection":"p2","client":"pub-b","topic":"ctl","sub_id":"1"}',
    b'{"event":"subscribe","connection":"s1","client":"sub-x","topic":"/t/B","sub_id":"2"}',
    b'{"event":"disconnect","connection":"p1"}',
    b'{"event":"unsubscribe","connection":"s2","sub_id":"1"}',
    b'{"event":"unsubscribe","connection":"s2","sub_id":"1"}',
]) + b"\n"
FLAGS = ("--control-topic", "ctl", "--subscription-topic", "^/t/")


def action(options: str, do: str = "") -> str:
    return f"""
    <Action>
      <On>
        <Module>amps-action-on-manifold-affinity</Module>
        <Options>
          <MessageType>json</MessageType>
          {options}
        </Options>
      </On>{do}
    </Action>"""


def config(*actions: str) -> bytes:
    return f"<AMPSConfig>\n  <Name>t</Name>\n  <Actions>{''.join(actions)}\n  </Actions>\n</AMPSConfig>\n".encode()


TWO_ACTIONS = config(
    action("<ControlTopic>ctl</ControlTopic>\n          <SubscriptionTopic>^/t/</SubscriptionTopic>"),
    action("<ControlTopic>ctl2</ControlTopic>\n          <SubscriptionTopic>^/u/</SubscriptionTopic>\n          <Announcements>all</Announcements>"),
)
BAD_REGEX = config(action("<ControlTopic>ctl</ControlTopic>\n          <SubscriptionTopic>/t/(</SubscriptionTopic>"))
BAD_MODE = config(action("<ControlTopic>ctl</ControlTopic>\n          <SubscriptionTopic>/t/</SubscriptionTopic>\n          <Announcements>some</Announcements>"))
NO_CONTROL = config(action("<SubscriptionTopic>/t/</SubscriptionTopic>"))
NO_ACTION = config()
SYMBOLS = {"faucet.xml": (SAMPLES / "manifold-affinity-default.xml").read_bytes(),
           "symbols.jsonl": (SAMPLES / "affinity" / "symbols.events.jsonl").read_bytes()}
SPACE = {"faucet.xml": (SAMPLES / "manifold-affinity-coverage.xml").read_bytes(),
         "space.jsonl": (SAMPLES / "affinity" / "space.events.jsonl").read_bytes()}

Case = GoldenCase
CASES = [
    # ---- settings from flags, every format
    Case("flags-table", ("simulate", *FLAGS, "--events", "ev.jsonl"), files={"ev.jsonl": SCRIPT}),
    Case("flags-jsonl-all", ("simulate", *FLAGS, "--announcements", "all", "--events", "ev.jsonl", "-f", "jsonl"), files={"ev.jsonl": SCRIPT}),
    Case("flags-json", ("simulate", *FLAGS, "--events", "-", "--format", "json"), stdin=SCRIPT),
    Case("flags-chart", ("simulate", *FLAGS, "--events", "ev.jsonl", "--chart", "--format", "jsonl"), files={"ev.jsonl": SCRIPT}),
    Case("flags-no-summary", ("simulate", *FLAGS, "--events", "-", "--no-summary"), stdin=b""),
    # ---- settings from a config: the seed examples, --render, --action, flag overrides
    Case("config-symbols-render", ("simulate", "--config", "faucet.xml", "--events", "symbols.jsonl", "--render", "-f", "jsonl", "--no-summary"), files=SYMBOLS),
    Case("config-symbols-table-render", ("simulate", "-c", "faucet.xml", "-e", "symbols.jsonl", "--render"), files=SYMBOLS),
    Case("config-space-chart", ("simulate", "--config", "faucet.xml", "--events", "space.jsonl", "--chart"), files=SPACE),
    Case("config-space-override-all", ("simulate", "--config", "faucet.xml", "--events", "space.jsonl", "--announcements", "all", "-f", "jsonl", "--no-summary"), files=SPACE),
    Case("config-action-by-number", ("simulate", "--config", "two.xml", "--action", "1", "--events", "ev.jsonl", "-f", "jsonl"), files={"two.xml": TWO_ACTIONS, "ev.jsonl": SCRIPT}),
    Case("config-action-by-control-topic", ("simulate", "--config", "two.xml", "--action", "ctl2", "--events", "ev.jsonl", "-f", "jsonl"), files={"two.xml": TWO_ACTIONS, "ev.jsonl": SCRIPT}),
    # ---- usage errors (exit 2)
    Case("error-no-settings", ("simulate", "--events", "ev.jsonl"), files={"ev.jsonl": SCRIPT}),
    Case("error-render-without-config", ("simulate", *FLAGS, "--events", "ev.jsonl", "--render"), files={"ev.jsonl": SCRIPT}),
    Case("error-two-actions", ("simulate", "--config", "two.xml", "--events", "ev.jsonl"), files={"two.xml": TWO_ACTIONS, "ev.jsonl": SCRIPT}),
    Case("error-unknown-action", ("simulate", "--config", "two.xml", "--action", "3", "--events", "ev.jsonl"), files={"two.xml": TWO_ACTIONS, "ev.jsonl": SCRIPT}),
    Case("error-no-manifold-action", ("simulate", "--config", "none.xml", "--events", "ev.jsonl"), files={"none.xml": NO_ACTION, "ev.jsonl": SCRIPT}),
    Case("error-bad-announcements-flag", ("simulate", *FLAGS, "--announcements", "some", "--events", "ev.jsonl"), files={"ev.jsonl": SCRIPT}),
    # ---- invalid input (exit 3)
    Case("error-bad-regex-flag", ("simulate", "--control-topic", "ctl", "--subscription-topic", "/t/(", "--events", "ev.jsonl"), files={"ev.jsonl": SCRIPT}),
    Case("error-bad-regex-config", ("simulate", "--config", "bad.xml", "--events", "ev.jsonl"), files={"bad.xml": BAD_REGEX, "ev.jsonl": SCRIPT}),
    Case("error-bad-announcements-config", ("simulate", "--config", "bad.xml", "--events", "ev.jsonl"), files={"bad.xml": BAD_MODE, "ev.jsonl": SCRIPT}),
    Case("error-no-control-topic-config", ("simulate", "--config", "bad.xml", "--events", "ev.jsonl"), files={"bad.xml": NO_CONTROL, "ev.jsonl": SCRIPT}),
    Case("error-missing-events-file", ("simulate", *FLAGS, "--events", "nope.jsonl")),
    Case("error-malformed-line", ("simulate", *FLAGS, "--events", "ev.jsonl", "-f", "jsonl"), files={"ev.jsonl": SCRIPT.replace(b'"sub_id":"2"}', b'"sub_id":"2"')}),
    Case("error-unknown-event", ("simulate", *FLAGS, "--events", "-", "-f", "jsonl"), stdin=SCRIPT + b'{"event":"publish","connection":"p9"}\n'),
    Case("error-client-mismatch", ("simulate", *FLAGS, "--events", "-", "-f", "jsonl"),
         stdin=SCRIPT + b'{"event":"subscribe","connection":"s1","client":"someone-else","topic":"/t/C","sub_id":"9"}\n'),
    Case("error-binary-garbage", ("simulate", *FLAGS, "--events", "-", "-f", "jsonl"), stdin=b"\x00\xff\xfe garbage\n"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_golden(case: GoldenCase, tmp_path: Path) -> None:
    check_golden(GOLDEN, case, run_golden("affinity", case, tmp_path))


def test_no_orphan_golden_files() -> None:
    assert orphan_goldens(GOLDEN, CASES) == []


def test_the_table_shows_names_as_they_are_never_as_markup_or_control_characters(tmp_path: Path) -> None:
    # A connection named "[/]" was rich markup (exit 5, MarkupError), "[red]p" lost its
    # brackets, and an ESC in a name or topic reached the terminal.
    events = tmp_path / "events.jsonl"
    events.write_text(
        '{"event":"subscribe","connection":"[/]","client":"[red]p\\u001b[2J","topic":"ctl","sub_id":"1","options":"udo_coverage=/s/"}\n'
        '{"event":"subscribe","connection":"s1","client":"x","topic":"/s/A\\u001b\\u009b\\nB","sub_id":"1"}\n'
    )
    flags = ["--control-topic", "ctl", "--subscription-topic", "^/s/", "--coverage-option", "udo_coverage"]
    result = run_ampsctl("affinity", "simulate", *flags, "--events", str(events), "--chart", cwd=tmp_path)
    assert (result.code, result.stderr) == (0, "")
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout
    assert "/s/A\\x1b\\x9b\\nB" in result.stdout and "[red]p\\x1b[2J ([/])" in result.stdout
    assert "[red]p\\x1b[2J  [/]" in result.stdout  # the summary's publisher row
    jsonl = run_ampsctl("affinity", "simulate", *flags, "--events", str(events), "--format", "jsonl", cwd=tmp_path)
    assert jsonl.code == 0 and "\x1b" not in jsonl.stderr and "[red]p\\x1b[2J" in jsonl.stderr


def test_render_fills_the_instance_name_from_the_config(tmp_path: Path) -> None:
    # The broker renders AMPS_INSTANCE_NAME as the config's Name; simulate left it empty.
    do = """
      <Do>
        <Module>amps-action-do-publish-message</Module>
        <Options><MessageType>json</MessageType><Topic>ctl</Topic><Data>{{AMPS_INSTANCE_NAME}}:{{AMPS_TOPIC}}</Data></Options>
      </Do>"""
    (tmp_path / "faucet.xml").write_bytes(config(action("<ControlTopic>ctl</ControlTopic>\n<SubscriptionTopic>^/t/</SubscriptionTopic>", do)))
    (tmp_path / "ev.jsonl").write_bytes(SCRIPT)
    result = run_ampsctl("affinity", "simulate", "--config", "faucet.xml", "--events", "ev.jsonl", "--render", "-f", "jsonl",
                         "--no-summary", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert '"Data":"t:/t/A"' in result.stdout
