"""JSON numbers keep their published text in every output that nests a message as JSON.

``journal import`` of a message given as an object, ``sow query`` (json, jsonl, csv, table, with
and without ``--select``) and ``sow dump`` show ``1.50``, ``1E5``, ``-0`` and an integer beyond
64 bits as they were published, not as a parser writes them (``1.5``, ``100000.0``, ``0``, a
float): docs/messages.md, "Number text". Filters still read the values.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from clitools import run_ampsctl

MESSAGE = '{"id":1,"px":1.50,"q":1E5,"big":12345678901234567890123,"z":-0}'
MERGED = '{"id":1,"px":1.50,"q":1E5,"big":12345678901234567890123,"z":-0,"s":"x"}'
CONFIG = """<AMPSConfig><Name>t</Name>
<SOW><Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><FileName>./sow/%n.sow</FileName></Topic></SOW>
</AMPSConfig>
"""


def _sow(tmp_path: Path) -> Path:
    records = [
        {"command": "publish", "topic": "orders", "message_type": "json", "data": "@"},
        {"command": "delta_publish", "topic": "orders", "message_type": "json", "data": {"id": 1, "s": "x"}},
    ]
    lines = [orjson.dumps(record).decode().replace('"@"', MESSAGE) for record in records]  # the object as written
    (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "amps.xml").write_text(CONFIG)
    for args in (("journal", "import", "records.jsonl", "--out", "journal"),
                 ("journal", "compact", "journal", "--config", "amps.xml", "--out", "sow")):
        done = run_ampsctl(*args, cwd=tmp_path)
        assert done.code == 0, done.output
    return tmp_path / "sow" / "orders.json.sow"


def test_import_journals_a_message_object_as_written(tmp_path: Path) -> None:
    _sow(tmp_path)
    done = run_ampsctl("journal", "dump", "journal", "--format", "jsonl", cwd=tmp_path)
    assert done.code == 0, done.output
    assert orjson.loads(done.stdout.splitlines()[0])["payload"] == MESSAGE


def test_sow_outputs_show_numbers_as_published(tmp_path: Path) -> None:
    sow = _sow(tmp_path)
    done = run_ampsctl("sow", "query", sow, "--format", "jsonl", cwd=tmp_path)
    assert done.code == 0, done.output
    assert f'"message":{MERGED}' in done.stdout

    done = run_ampsctl("sow", "query", sow, "--format", "json", "--select", "/px,/big", "--filter", "/px = 1.5",
                       cwd=tmp_path)
    assert done.code == 0, done.output
    assert '"message":{"px":1.50,"big":12345678901234567890123}' in done.stdout

    done = run_ampsctl("sow", "query", sow, "--format", "csv", "--select", "/px,/q,/big,/z", cwd=tmp_path)
    assert done.code == 0, done.output
    assert done.stdout.splitlines()[1].endswith(",1.50,1E5,12345678901234567890123,-0")

    done = run_ampsctl("sow", "query", sow, "--select", "/q,/z", cwd=tmp_path)
    assert done.code == 0, done.output
    assert "1E5" in done.stdout and "100000" not in done.stdout

    done = run_ampsctl("sow", "dump", sow, cwd=tmp_path)
    assert done.code == 0, done.output
    assert MERGED in done.stdout
