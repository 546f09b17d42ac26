"""Opening a tool's connection and naming what went wrong: shared by ``ampsctl client`` and
``journal replay`` (``tool.py``, ``replay.py``).

A tool runs one short session: connect (bounded by a timeout, so an unreachable host cannot
hang it), log on, do one thing, close. Errors are turned into what a command-line user needs:

* the broker refused the connection or never answered -> ``EnvironmentProblem`` (exit 4),
  naming the URI, with a hint to start a broker;
* a failure ack -> ``Rejected`` (exit 1): the command reached the broker, which said no, and
  the reason is printed with a hint about the option that probably caused it;
* a bad URI -> ``BadUri`` (exit 2), from ``parse_uri`` before any socket is opened.

A password written in the URI is visible to every user of the machine (``ps``, /proc) and in
shell history, so a URI that names a user without a password takes it from the environment
variable ``AMPSCTL_PASSWORD`` (docs/broker.md).
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from ampsctl.client.client import Client
from ampsctl.client.errors import CommandFailed, Disconnected
from ampsctl.client.uri import AmpsUri, parse_uri, shown_uri
from ampsctl.errors import AmpsctlError, EnvironmentProblem, ExitCode, UsageError
from ampsctl.protocol.errors import HeaderValueError

PASSWORD_VARIABLE = "AMPSCTL_PASSWORD"

_HINTS = {
    "bad filter": "check the --filter expression (docs/filter-language.md); `ampsctl filter test EXPR --data MSG` tries one",
    "bad regex topic": "the topic is read as a regular expression because of characters like . or *; fix the pattern",
    "invalid topic": "sow and sow-delete need a SOW topic, bookmark subscriptions a topic in the transaction log, "
                     "and a publish a plain topic name (no regex characters)",
    "invalid options": "check the --options text and the combination of options (e.g. --bookmark with --delta)",
    "invalid bookmark": "a bookmark is HASH|SEQ|, 0 (the beginning), 0|1| (now) or a timestamp YYYYMMDDThhmmss",
    "invalid order by": "write --orderby '/field [ASC|DESC], ...'",
    "invalid sow key": "a SowKey has only Base64 characters: A-Z a-z 0-9 + / =",
    "auth failure": "check the user and password: tcp://user:password@host:port/amps/json, or tcp://user@host:port/amps/json "
                    f"with the password in {PASSWORD_VARIABLE}",
    "name in use": "another client holds this name: give another with --name",
    "subscription already exists": "give another --sub-id",
    "not entitled": "the user is not entitled to this topic",
}


class Rejected(AmpsctlError):
    """The broker answered a command with a failure ack: the command was understood and refused."""

    exit_code = ExitCode.FINDINGS

    def __init__(self, failed: CommandFailed, uri: str) -> None:
        super().__init__(f"{failed.command} refused by {shown_uri(uri)}: {failed.reason}", code="CLIENT-REJECTED",
                         hint=_HINTS.get(failed.reason, "the broker's log says more about why"))
        self.reason = failed.reason
        self.ack = failed.ack


@dataclass(frozen=True, slots=True)
class Target:
    """Where a tool connects and as whom."""

    uri: str = field(repr=False)  # with the password: for connecting only, never printed
    name: str | None = None  # client name; None: ``default_name(tool)``
    connect_timeout: float = 10.0  # seconds for connect + logon
    where: AmpsUri = field(init=False, repr=False)
    shown: str = field(init=False)  # the URI to print: its password hidden (uri.py)
    password: str | None = field(init=False, repr=False)  # the URI's, else AMPSCTL_PASSWORD's for a named user

    def __post_init__(self) -> None:
        where = parse_uri(self.uri)  # BadUri (exit 2) before anything else
        password = where.password
        if password is None and where.user is not None:
            password = os.environ.get(PASSWORD_VARIABLE) or None
        object.__setattr__(self, "shown", shown_uri(self.uri))
        object.__setattr__(self, "where", where)
        object.__setattr__(self, "password", password)


def default_name(tool: str) -> str:
    """Client names must be unique among live connections (§4.2): tool, host and process id."""
    return f"ampsctl-{tool}-{socket.gethostname()}-{os.getpid()}"


@asynccontextmanager
async def session(target: Target, tool: str) -> AsyncIterator[Client]:
    """A logged-on client for ``target``; failures become the errors of the module docstring."""
    where = target.where
    name = target.name or default_name(tool)
    try:
        client = await asyncio.wait_for(Client.connect(target.uri, name=name, password=target.password), target.connect_timeout)
    except TimeoutError:
        raise EnvironmentProblem(
            f"no answer from {where.host}:{where.port} within {target.connect_timeout:g} s", code="CLIENT-TIMEOUT",
            hint="check the host and port, and that no firewall drops the connection; --connect-timeout waits longer",
        ) from None
    except Disconnected as exc:
        raise EnvironmentProblem(f"{exc.message} ({target.shown})", code="CLIENT-CONNECT",
                                 hint="is an AMPS broker (a tcp transport, protocol amps) listening there? "
                                      "start one with `ampsctl broker run --config amps.xml`") from None
    except CommandFailed as exc:
        raise Rejected(exc, target.uri) from None
    try:
        yield client
    except CommandFailed as exc:
        raise Rejected(exc, target.uri) from None
    except Disconnected as exc:
        raise EnvironmentProblem(f"{exc.message} ({target.shown})", code="CLIENT-DISCONNECTED",
                                 hint="the broker stopped or dropped this client; its log says why") from None
    finally:
        await client.close()


def check_options(text: str | None, top_n: int | None = None) -> None:
    """Refuse a malformed --options string here (exit 2) rather than after connecting."""
    from ampsctl.protocol.cmdoptions import parse_command_options

    try:
        parse_command_options(text or None, header_top_n=top_n)
    except HeaderValueError as exc:
        raise UsageError(f"--options: {exc.message}", hint="options are a comma list, e.g. 'oof,top_n=10'") from None


def check_orderby(text: str | None) -> None:
    from ampsctl.protocol.cmdoptions import parse_orderby

    try:
        parse_orderby(text)
    except HeaderValueError as exc:
        raise UsageError(f"--orderby: {exc.message}", hint="write '/field [ASC|DESC], ...'") from None
