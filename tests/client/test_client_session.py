"""``ampsctl.client.session``: targets, client names, and errors with their exit codes."""

from __future__ import annotations

import asyncio
import socket

import pytest

from ampsctl.client.errors import BadUri, CommandFailed
from ampsctl.client.session import Rejected, Target, check_options, check_orderby, default_name, session
from ampsctl.errors import EnvironmentProblem, ExitCode, UsageError
from ampsctl.protocol.acks import Ack, AckType, Status


def test_a_bad_uri_fails_before_connecting() -> None:
    with pytest.raises(BadUri) as error:
        Target("tcp://localhost/amps/json")
    assert error.value.exit_code is ExitCode.USAGE


def test_default_names_differ_per_tool_and_process() -> None:
    assert default_name("ping") != default_name("publish")
    assert default_name("ping").startswith("ampsctl-ping-") and default_name("ping").endswith(f"-{__import__('os').getpid()}")


def test_rejected_is_exit_1_with_the_reason_and_a_hint() -> None:
    failed = CommandFailed("sow", Ack(AckType.PROCESSED, Status.FAILURE, "1", "bad filter"))
    error = Rejected(failed, "tcp://h:1/amps/json")
    assert error.exit_code is ExitCode.FINDINGS
    assert error.message == "sow refused by tcp://h:1/amps/json: bad filter"
    assert "--filter" in (error.hint or "")
    unknown = Rejected(CommandFailed("sow", Ack(AckType.PROCESSED, Status.FAILURE, "1", "odd")), "u")
    assert unknown.hint == "the broker's log says more about why"


def test_refused_connection_is_an_environment_problem() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> None:
        async with session(Target(f"tcp://127.0.0.1:{port}/amps/json"), "test"):
            raise AssertionError("connected to a closed port")

    with pytest.raises(EnvironmentProblem, match="cannot connect to 127.0.0.1") as error:
        asyncio.run(asyncio.wait_for(main(), 10))
    assert error.value.exit_code is ExitCode.ENVIRONMENT


def test_a_silent_server_times_out_as_an_environment_problem() -> None:
    """A listener that never answers the logon: the connect timeout ends the wait."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]

        async def main() -> None:
            async with session(Target(f"tcp://127.0.0.1:{port}/amps/json", connect_timeout=0.2), "test"):
                raise AssertionError("logged on to a silent server")

        with pytest.raises(EnvironmentProblem, match=r"no answer from 127.0.0.1:\d+ within 0.2 s"):
            asyncio.run(asyncio.wait_for(main(), 10))


def test_options_and_orderby_are_checked_locally() -> None:
    check_options("oof,top_n=5")
    check_orderby("/qty DESC, /id")
    with pytest.raises(UsageError, match="--options"):
        check_options("no_such_option")
    with pytest.raises(UsageError, match="--orderby"):
        check_orderby("/qty SIDEWAYS")
