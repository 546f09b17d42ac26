"""``AMPSCTL_PASSWORD``: a URI that names a user without a password takes it from the environment.

A password in the URI is on the command line, where ``ps`` shows it to every user of the
machine; the variable keeps it off (docs/broker.md, Client). Run for real: ``ampsctl client``
processes against a broker that checks credentials.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ampsctl.broker.core import CoreSettings
from test_e2e_client_cli import cli

PASSWORD = "env-S3cret"
USERS = CoreSettings(users={"alice": PASSWORD})


def test_the_password_comes_from_the_environment(broker_run, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario(uri: str, tmp: Path) -> None:
        alice = uri.replace("tcp://", "tcp://alice@", 1)

        monkeypatch.delenv("AMPSCTL_PASSWORD", raising=False)
        done = await cli("client", "ping", alice)
        assert done.code == 1 and "auth failure" in done.err and "AMPSCTL_PASSWORD" in done.err, done.err

        monkeypatch.setenv("AMPSCTL_PASSWORD", PASSWORD)
        done = await cli("client", "ping", alice)
        assert done.code == 0 and done.out.startswith(f"ok {alice}: "), done.err
        done = await cli("client", "publish", alice, "-t", "orders", "-d", '{"id":1}')
        assert done.code == 0, done.err
        assert PASSWORD not in done.out + done.err

        # a password written in the URI wins over the variable
        done = await cli("client", "ping", uri.replace("tcp://", "tcp://alice:wrong@", 1))
        assert done.code == 1 and "auth failure" in done.err, done.err

        # without a user, nothing is sent: the broker refuses an anonymous logon
        done = await cli("client", "ping", uri)
        assert done.code == 1 and "auth failure" in done.err, done.err

        monkeypatch.setenv("AMPSCTL_PASSWORD", "")  # empty: as if unset
        done = await cli("client", "ping", alice)
        assert done.code == 1 and "auth failure" in done.err, done.err

    broker_run(scenario, core=USERS)
