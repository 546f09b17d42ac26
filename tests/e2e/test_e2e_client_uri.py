"""The password of a broker URI never reaches the output of ``ampsctl client`` or ``journal replay``.

Every message, JSON summary and error shows the URI as ``tcp://alice:***@host:port/amps/json``
(``ampsctl.client.uri.shown_uri``). The broker checks credentials (``CoreSettings.users``, the
``--users`` file of ``broker run``), so both a refused logon and the success paths are run for
real, as processes against a broker on 127.0.0.1, port 0.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from ampsctl.broker.core import CoreSettings
from ampsctl.client.uri import shown_uri
from test_e2e_client_cli import Done, Subscriber, cli, free_port

PASSWORD = "s3cr3t-Pw"
WRONG = "n0t-the-Pw"
USERS = CoreSettings(users={"alice": PASSWORD})


def with_user(uri: str, password: str = PASSWORD) -> str:
    return uri.replace("tcp://", f"tcp://alice:{password}@", 1)


def assert_hidden(done: Done, *secrets: str) -> None:
    for secret in (PASSWORD, WRONG, *secrets):
        assert secret not in done.out and secret not in done.err, (done.out, done.err)


def test_the_uri_is_shown_without_its_password(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        good = with_user(uri)
        shown = uri.replace("tcp://", "tcp://alice:***@", 1)

        # publish, sow-delete and ping print their one-line result on stdout, nothing on stderr
        # (docs/broker.md, client_cmd.py's docstring)
        done = await cli("client", "ping", good)
        assert done.code == 0, done.err
        assert done.out.startswith(f"ok {shown}: round trip ") and done.err == ""
        assert_hidden(done)
        done = await cli("client", "ping", good, "--format", "json")
        assert done.code == 0, done.err
        assert done.objects[0]["uri"] == shown
        assert_hidden(done)

        done = await cli("client", "publish", good, "-t", "orders", "-d", '{"id":1,"qty":5}')
        assert done.code == 0 and done.out.startswith("published 1 message to orders") and done.err == "", done.err
        assert_hidden(done)
        done = await cli("client", "sow", good, "-t", "orders")
        assert (done.code, done.out) == (0, '{"id":1,"qty":5}\n'), done.err
        assert_hidden(done)
        subscriber = await Subscriber.start(good, "-t", "orders", "--count", "1", "--format", "json")
        assert (await cli("client", "publish", good, "-t", "orders", "-d", '{"id":2}')).code == 0
        done = await subscriber.finish()
        assert done.code == 0 and done.objects[0]["data"] == {"id": 2}, done.err
        assert_hidden(done)
        done = await cli("client", "sow-delete", good, "-t", "orders", "--filter", "/id = 1", "--format", "json")
        assert done.code == 0 and done.objects[0]["records_deleted"] == 1, done.err
        assert_hidden(done)
        done = await cli("client", "sow-delete", good, "-t", "orders", "--filter", "1=1")
        assert (done.code, done.out, done.err) == (0, "deleted 1 record from orders\n", "")

        # the broker answers a wrong password with a failure ack: exit 1, the reason and the URI, hidden
        for args in (["ping"], ["publish", "-t", "orders", "-d", "{}"], ["subscribe", "-t", "orders"],
                     ["sow", "-t", "orders"], ["sow-delete", "-t", "orders", "--filter", "1=1"]):
            done = await cli("client", args[0], with_user(uri, WRONG), *args[1:])
            assert done.code == 1, (args, done.err)
            assert f"logon refused by {shown}: auth failure" in done.err, done.err
            assert_hidden(done)

    broker_run(scenario, core=USERS)


def test_journal_replay_shows_the_target_without_its_password(broker_run) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        source = tmp / "source.jsonl"
        source.write_bytes(b"".join(orjson.dumps({"topic": "orders", "data": {"id": n}}) + b"\n" for n in range(3)))
        done = await cli("journal", "import", str(source), "--out", str(tmp / "recorded"))
        assert done.code == 0, done.err
        shown = uri.replace("tcp://", "tcp://alice:***@", 1)

        done = await cli("journal", "replay", str(tmp / "recorded"), "--to", with_user(uri), "--speed", "inf")
        assert done.code == 0, done.err
        assert done.out.startswith(f"replayed 3 records (3 publish) to {shown} in ")
        assert_hidden(done)
        done = await cli("journal", "replay", str(tmp / "recorded"), "--to", with_user(uri), "--speed", "inf", "-f", "json")
        assert done.code == 0 and done.objects[0]["to"] == shown, done.err
        assert_hidden(done)
        done = await cli("journal", "replay", str(tmp / "recorded"), "--to", with_user(uri, WRONG))
        assert done.code == 1 and f"logon refused by {shown}: auth failure" in done.err, done.err
        assert_hidden(done)

    broker_run(scenario, core=USERS)


def test_errors_before_logon_hide_the_password(tmp_path: Path) -> None:
    """A refused connection (exit 4) and a URI that does not parse (exit 2) repeat the URI too."""
    source = tmp_path / "source.jsonl"
    source.write_bytes(b'{"topic":"orders","data":{"id":1}}\n')
    assert asyncio.run(cli("journal", "import", str(source), "--out", str(tmp_path / "recorded"))).code == 0
    refused = f"tcp://alice:{PASSWORD}@127.0.0.1:{free_port()}/amps/json"
    for args in (["client", "ping", refused], ["client", "sow", refused, "-t", "orders"],
                 ["journal", "replay", str(tmp_path / "recorded"), "--to", refused]):
        done = asyncio.run(cli(*args, cwd=tmp_path))
        assert done.code == 4 and "cannot connect to 127.0.0.1:" in done.err, (args, done.err)
        assert shown_uri(refused) in done.err and "alice:***@" in done.err
        assert_hidden(done)

    for bad in (f"tcp://alice:{PASSWORD}@127.0.0.1/amps/json",  # no port
                f"tcp://alice:{PASSWORD}@[::1/amps/json",  # an unclosed IPv6 bracket: urlsplit raises
                f"tcp://alice:{PASSWORD}/x@127.0.0.1:9007/amps/json",  # a / in the password: it reads as the port
                f"http://alice:{PASSWORD}@127.0.0.1:9007/amps/json"):
        for args in (["client", "ping", bad], ["journal", "replay", str(tmp_path / "recorded"), "--to", bad]):
            done = asyncio.run(cli(*args, cwd=tmp_path))
            assert done.code == 2 and "invalid AMPS URI '" in done.err and "://alice:***@" in done.err, done.err
            assert_hidden(done, "/x@")


def test_a_broker_that_goes_away_is_named_without_the_password(tmp_path: Path) -> None:
    from ampsctl.broker.run import running_broker
    from e2e_helpers import run, settings_for

    async def scenario() -> Done:
        async with running_broker(settings_for(tmp_path, core=USERS)) as broker:
            subscriber = await Subscriber.start(with_user(broker.uris[0]), "-t", "orders")
        return await subscriber.finish()  # the broker closed every connection on its way out

    done = run(scenario(), 60)
    assert done.code == 4 and "tcp://alice:***@127.0.0.1:" in done.err, done.err
    assert_hidden(done)


@pytest.mark.parametrize(("uri", "shown"), [
    ("tcp://alice:pw@host:9007/amps/json", "tcp://alice:***@host:9007/amps/json"),
    ("tcp://alice@host:9007/amps/json", "tcp://alice@host:9007/amps/json"),
    ("tcp://host:9007/amps/json", "tcp://host:9007/amps/json"),
    ("tcp://alice:p@ss:w/rd@host:9007/amps/json", "tcp://alice:***@host:9007/amps/json"),
    ("tcp://:pw@host:9007/amps/json", "tcp://:***@host:9007/amps/json"),
    ("alice:pw@host:9007", "alice:***@host:9007"),
])
def test_shown_uri(uri: str, shown: str) -> None:
    assert shown_uri(uri) == shown
