"""``ampsctl sow query`` shows each message as the SOW stores it, whatever the filter or format
(through the real entry point, ``clitools.run_ampsctl``): only ``--select`` builds a new message."""

from __future__ import annotations

import json
from pathlib import Path

from clitools import run_ampsctl

CONFIG = b"""<AMPSConfig><Name>t</Name><SOW>
<Topic><Name>x</Name><MessageType>xml</MessageType><FileName>sow/%n.sow</FileName><Key>/o/id</Key></Topic>
</SOW></AMPSConfig>
"""
# single-quoted attribute, a comment, CDATA, an empty element, an XML declaration: what a writer
# of XML may produce and what a re-serialisation changes
MESSAGES = [
    "<o a='1'>\n  <!-- c -->\n  <id>8</id>\n  <n><![CDATA[a<b]]></n>\n  <e/>\n</o>",
    '<?xml version="1.0" encoding="UTF-8"?><o><id>9</id><n>caf\u00e9</n></o>',
]


def _sow(base: Path) -> Path:
    lines = [json.dumps({"topic": "x", "message_type": "xml", "payload": text}) for text in MESSAGES]
    (base / "in.jsonl").write_text("\n".join(lines) + "\n")
    (base / "amps.xml").write_bytes(CONFIG)
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=base).code == 0
    assert run_ampsctl("journal", "compact", "j", "--config", "amps.xml", "--out", "out", cwd=base).code == 0
    return base / "out" / "x.xml.sow"


def test_query_shows_xml_messages_as_stored(tmp_path: Path) -> None:
    # a query that parsed the messages (any filter, order or scan) printed them serialised again:
    # double quotes, CDATA as escaped text, the XML declaration gone
    sow = _sow(tmp_path)
    dumped = [json.loads(line)["message"] for line in run_ampsctl("sow", "dump", sow, "-f", "jsonl", cwd=tmp_path).stdout.splitlines()]
    assert dumped == MESSAGES
    for extra in ((), ("--filter", "/o/id > 0"), ("--order-by", "/o/id DESC")):
        done = run_ampsctl("sow", "query", sow, "-f", "jsonl", *extra, cwd=tmp_path)
        assert done.code == 0, done.output
        shown = [json.loads(line)["message"] for line in done.stdout.splitlines()]
        assert sorted(shown) == sorted(MESSAGES), (extra, shown)
    done = run_ampsctl("sow", "query", sow, "-f", "csv", "--filter", "/o/id = 8", cwd=tmp_path)
    assert "<![CDATA[a<b]]>" in done.stdout and "a='1'" in done.stdout, done.output


def test_select_still_builds_the_reduced_message(tmp_path: Path) -> None:
    sow = _sow(tmp_path)
    done = run_ampsctl("sow", "query", sow, "-f", "jsonl", "--select", "/o/id", "--filter", "/o/id = 9", cwd=tmp_path)
    assert done.code == 0 and [json.loads(line)["message"] for line in done.stdout.splitlines()] == ["<o><id>9</id></o>"], done.output


def test_text_outputs_escape_the_path_for_the_terminal(tmp_path: Path) -> None:
    # sow stats and sow dump printed the file's path raw: an ESC in a file name reached the terminal
    sow = _sow(tmp_path)
    odd = sow.with_name("\x1b[2Jx.sow")
    odd.write_bytes(sow.read_bytes())
    for command in (("stats",), ("stats", "--verify"), ("dump",)):
        done = run_ampsctl("sow", *command, odd, cwd=tmp_path)
        assert done.code == 0 and "\x1b" not in done.stdout and "\\x1b[2Jx.sow" in done.stdout, (command, done.output)


def test_json_outputs_give_binary_messages_as_base64(tmp_path: Path) -> None:
    # a message that is not UTF-8 was written with Python's escapes: the bytes 00 01 02 ff and a
    # message of the text "\x00\x01\x02\xff" came out alike, so the bytes could not be recovered
    (tmp_path / "amps.xml").write_bytes(b"""<AMPSConfig><Name>t</Name><SOW><Topic><Name>b</Name>
<MessageType>binary</MessageType><FileName>sow/%n.sow</FileName></Topic></SOW></AMPSConfig>""")
    (tmp_path / "in.jsonl").write_text('{"topic":"b","message_type":"binary","payload_base64":"AAEC/w==","sow_key":"k1"}\n'
                                       '{"topic":"b","message_type":"binary","payload":"\\\\xff","sow_key":"k2"}\n')
    assert run_ampsctl("journal", "import", "in.jsonl", "--out", "j", cwd=tmp_path).code == 0
    assert run_ampsctl("journal", "compact", "j", "--config", "amps.xml", "--out", "out", cwd=tmp_path).code == 0
    for command in (("query", "-f", "jsonl"), ("dump", "-f", "jsonl")):
        done = run_ampsctl("sow", *command, "out/b.binary.sow", cwd=tmp_path)
        shown = [json.loads(line) for line in done.stdout.splitlines()]
        assert [(o["sow_key"], o.get("message"), o.get("message_base64")) for o in shown] == [
            ("k1", None, "AAEC/w=="), ("k2", "\\xff", None)], (command, done.output)
