"""A reader that closes standard output early (``| head``) ends every command with exit 141.

141 is ``ExitCode.BROKEN_PIPE`` (docs/cli.md), never 1 (which means "findings" for validate),
with nothing on stderr: no traceback, no "Exception ignored", no error message. The commands
run as real processes writing into real pipes, in two ways:

* ``reads_one_byte``: the reader takes one byte and closes the pipe, like ``head -c 1``. The
  pipe is shrunk to one page (F_SETPIPE_SZ) and every input makes many pages of output, so the
  command is always still writing when the reader leaves.
* ``closed_before``: the pipe's read end is closed before the command starts, so even a command
  that prints a few lines finds the reader gone.

``client subscribe`` is the documented exception (docs/broker.md): a stream that never ends is
ended by its reader, exit 0 (tests/e2e/test_e2e_client_cli.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

AMPSCTL = [sys.executable, "-m", "ampsctl"]
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
BROKEN = sorted(str(path) for path in SAMPLES.glob("broken-*.xml"))
TIMEOUT = 120
PAGE = 4096

SOW_CONFIG = """<AMPSConfig>
  <Name>pipes</Name>
  <SOW>
    <Topic><Name>orders</Name><MessageType>json</MessageType><FileName>sow/%n.sow</FileName><Key>/id</Key></Topic>
  </SOW>
</AMPSConfig>
"""

AFFINITY = ["affinity", "simulate", "--control-topic", "ctl", "--subscription-topic", "^/t/", "--events", "events.jsonl"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal, its SOW file, messages and affinity events: each makes far more than a page of output."""
    base = tmp_path_factory.mktemp("pipe-inputs")
    (base / "sow.xml").write_text(SOW_CONFIG)
    with (base / "records.jsonl").open("w") as out:
        for n in range(2000):  # over 1 MiB of dump: more than write_lines batches, so the reader leaves mid-dump
            out.write(json.dumps({"topic": "orders", "data": {"id": n, "qty": n % 50, "pad": "x" * 600}}) + "\n")
    with (base / "messages.jsonl").open("w") as out:
        for n in range(5000):
            out.write(json.dumps({"id": n % 1000, "qty": n, "pad": "y" * 20}) + "\n")
    with (base / "events.jsonl").open("w") as out:
        out.write(json.dumps({"event": "subscribe", "connection": "cp", "client": "pub", "topic": "ctl", "sub_id": "c"}) + "\n")
        for n in range(500):
            out.write(json.dumps({"event": "subscribe", "connection": f"c{n}", "client": f"s{n}", "topic": f"/t/{n}",
                                  "sub_id": "1"}) + "\n")
    for args in (["journal", "import", "records.jsonl", "--out", "journal"],
                 ["journal", "compact", "journal", "--config", "sow.xml", "--out", "sow"]):
        subprocess.run([*AMPSCTL, *args], cwd=base, capture_output=True, timeout=TIMEOUT, check=True)
    return base


def run_into_pipe(args: list[str], cwd: Path, *, closed_before: bool) -> tuple[int, str]:
    """Run ``ampsctl ARGS`` with stdout on a pipe whose reader leaves early; (exit code, stderr)."""
    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PAGE)
        if closed_before:
            os.close(read_end)
            read_end = -1
        process = subprocess.Popen([*AMPSCTL, *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=write_end,
                                   stderr=subprocess.PIPE)
        os.close(write_end)
        write_end = -1
        if read_end >= 0:
            assert os.read(read_end, 1)  # the command has started writing; then the reader leaves
            os.close(read_end)
            read_end = -1
        try:
            _, err = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
        return process.returncode, err.decode("utf-8", "replace")
    finally:
        for end in (read_end, write_end):
            if end >= 0:
                os.close(end)


def assert_quiet_141(code: int, stderr: str) -> None:
    assert code == 141, stderr
    assert stderr == ""  # not even "Exception ignored ..." from a generator cleaned up at exit


LARGE = {
    "validate text": ["validate", *BROKEN, "--fail-on", "never"],
    "validate findings": ["validate", *BROKEN],
    "validate json": ["validate", *BROKEN, "--fail-on", "never", "--format", "json"],
    "validate sarif": ["validate", *BROKEN, "--fail-on", "never", "--format", "sarif"],
    "validate github": ["validate", *BROKEN, "--fail-on", "never", "--format", "github"],
    "validate junit": ["validate", *BROKEN, "--fail-on", "never", "--format", "junit"],
    "config rules": ["config", "rules"],
    "config rules json": ["config", "rules", "--format", "json"],
    "config sample": ["config", "sample"],
    "filter functions": ["filter", "functions"],
    "filter test": ["filter", "test", "/qty > 5", "--data", "@messages.jsonl"],
    "filter test json": ["filter", "test", "/qty > 5", "--data", "@messages.jsonl", "--format", "json"],
    "filter test explain": ["filter", "test", "/qty > 5", "--data", "@messages.jsonl", "--explain"],
    "delta merge": ["delta", "merge", "--stream", "--key", "/id", "--all", "messages.jsonl"],
    "delta conflate": ["delta", "conflate", "--key", "/id", "messages.jsonl"],
    "affinity table": AFFINITY,
    "affinity jsonl": [*AFFINITY, "--format", "jsonl"],
    "affinity json": [*AFFINITY, "--format", "json"],
    "journal dump text": ["journal", "dump", "journal"],
    "journal dump json": ["journal", "dump", "journal", "--format", "json"],
    "journal dump jsonl": ["journal", "dump", "journal", "--format", "jsonl"],
    "journal dump filter": ["journal", "dump", "journal", "--filter", "/qty > 5"],
    "sow query table": ["sow", "query", "sow/orders.json.sow"],
    "sow query json": ["sow", "query", "sow/orders.json.sow", "--format", "json"],
    "sow query jsonl": ["sow", "query", "sow/orders.json.sow", "--format", "jsonl"],
    "sow query csv": ["sow", "query", "sow/orders.json.sow", "--format", "csv"],
    "sow dump text": ["sow", "dump", "sow/orders.json.sow"],
    "sow dump json": ["sow", "dump", "sow/orders.json.sow", "--format", "json"],
    "sow dump jsonl": ["sow", "dump", "sow/orders.json.sow", "--format", "jsonl"],
}

SMALL = {
    "config explain": ["config", "explain", "SOWT-004"],
    "config dump": ["config", "dump", str(SAMPLES / "amps.xml")],
    "journal verify": ["journal", "verify", "journal"],
    "journal verify json": ["journal", "verify", "journal", "--format", "json"],
    "sow stats": ["sow", "stats", "sow/orders.json.sow", "--verify"],
    "sow stats json": ["sow", "stats", "sow/orders.json.sow", "--format", "json"],
    "version": ["--version"],
    "help": ["--help"],
}


@pytest.mark.parametrize("name", LARGE)
def test_a_reader_leaving_mid_output_is_141(name: str, inputs: Path) -> None:
    assert_quiet_141(*run_into_pipe(LARGE[name], inputs, closed_before=False))


@pytest.mark.parametrize("name", [*LARGE, *SMALL])
def test_a_reader_gone_before_the_first_write_is_141(name: str, inputs: Path) -> None:
    assert_quiet_141(*run_into_pipe({**LARGE, **SMALL}[name], inputs, closed_before=True))


@pytest.mark.skipif(shutil.which("head") is None, reason="no head")
@pytest.mark.parametrize(("command", "reader"), [
    ("validate samples/broken-*.xml --fail-on never", "head -1"),  # exit 1 would read as "findings"
    ("config rules", "head -1"),
    ("affinity simulate --control-topic ctl --subscription-topic '^/t/' --events EVENTS", "head -c 10"),
])
def test_the_shell_sees_141_through_head(command: str, reader: str, inputs: Path, tmp_path: Path) -> None:
    ampsctl = " ".join(AMPSCTL) + " " + command.replace("EVENTS", str(inputs / "events.jsonl"))
    script = f"{ampsctl} 2> {tmp_path}/err.txt | {reader} > /dev/null; echo ${{PIPESTATUS[0]}}"
    result = subprocess.run(["bash", "-c", script], cwd=SAMPLES.parent, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.stdout.strip() == "141", result.stderr
    assert (tmp_path / "err.txt").read_text() == ""


def test_files_are_written_whole_when_the_summary_cannot_be(inputs: Path, tmp_path: Path) -> None:
    """journal import and compact write their files, then the summary: a missing reader costs
    only the summary (exit 141), never a half-written journal or SOW file."""
    shutil.copy(inputs / "records.jsonl", tmp_path)
    shutil.copy(inputs / "sow.xml", tmp_path)
    assert_quiet_141(*run_into_pipe(["journal", "import", "records.jsonl", "--out", "journal"], tmp_path, closed_before=True))
    assert_quiet_141(*run_into_pipe(["journal", "compact", "journal", "--config", "sow.xml", "--out", "sow"], tmp_path,
                                    closed_before=True))
    verified = subprocess.run([*AMPSCTL, "journal", "verify", "journal"], cwd=tmp_path, capture_output=True, timeout=TIMEOUT)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    stats = subprocess.run([*AMPSCTL, "sow", "stats", "sow/orders.json.sow", "--verify", "--format", "json"], cwd=tmp_path,
                           capture_output=True, timeout=TIMEOUT)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["records"] == 2000


# ------------------------------------------------------------------------------ client commands, on a real broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from ampsctl.testing.process import BrokerProcess

    base = tmp_path_factory.mktemp("pipe-broker")
    config = base / "amps.xml"
    config.write_text("""<AMPSConfig>
  <Name>pipes</Name>
  <Transports><Transport><Name>json-tcp</Name><Type>tcp</Type><InetAddr>0</InetAddr><Protocol>amps</Protocol></Transport></Transports>
  <SOW><Topic><Name>orders</Name><MessageType>json</MessageType><Key>/id</Key><Durability>transient</Durability></Topic></SOW>
</AMPSConfig>
""")
    with BrokerProcess(config, base / "run") as running:
        lines = "".join(json.dumps({"id": n, "pad": "z" * 60}) + "\n" for n in range(2000))
        subprocess.run([*AMPSCTL, "client", "publish", running.uri, "-t", "orders", "--file", "-"], input=lines.encode(),
                       capture_output=True, timeout=TIMEOUT, check=True)
        yield running.uri


@pytest.mark.parametrize("format", ["text", "json"])
@pytest.mark.parametrize("closed_before", [False, True])
def test_client_sow_into_a_closed_pipe_is_141(broker: str, format: str, closed_before: bool, tmp_path: Path) -> None:
    args = ["client", "sow", broker, "-t", "orders", "--batch-size", "500", "--format", format]
    assert_quiet_141(*run_into_pipe(args, tmp_path, closed_before=closed_before))


def test_client_publish_publishes_everything_before_its_summary_meets_the_closed_pipe(broker: str, tmp_path: Path) -> None:
    args = ["client", "publish", broker, "-t", "orders", "--data", '{"id":5000,"pad":"new"}']
    assert_quiet_141(*run_into_pipe(args, tmp_path, closed_before=True))
    found = subprocess.run([*AMPSCTL, "client", "sow", broker, "-t", "orders", "--filter", "/id = 5000"],
                           capture_output=True, timeout=TIMEOUT, check=True)
    assert found.stdout == b'{"id":5000,"pad":"new"}\n'
