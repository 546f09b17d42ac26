"""Client errors: a failure ack from the server, or a connection that is gone or unusable."""

from __future__ import annotations

from ampsctl.errors import EnvironmentProblem, InputError, UsageError
from ampsctl.protocol.acks import Ack


class CommandFailed(InputError):
    """The server answered a command with ``status=failure`` (``reason``: the §7.4 reason)."""

    def __init__(self, command: str, ack: Ack) -> None:
        reason = ack.reason or "no reason given"
        super().__init__(f"{command} failed: {reason}", code="CLIENT-FAILED",
                         hint="the broker's log says more about why")
        self.command = command
        self.reason = reason
        self.ack = ack


class Disconnected(EnvironmentProblem):
    """The connection to the server is closed (or could not be opened)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="CLIENT-DISCONNECTED", hint="is the broker running at that URI?")

    def again(self) -> Disconnected:
        """The same error as a new instance, for one more caller. Raising one instance from many
        tasks would add every raise to its traceback (quadratic to print, megabytes to log)."""
        return Disconnected(self.message)


class BadUri(UsageError):
    def __init__(self, uri: str, why: str) -> None:
        from ampsctl.client.uri import shown_uri  # here: uri.py imports this module

        super().__init__(f"invalid AMPS URI {shown_uri(uri)!r}: {why}",
                         hint="write tcp://[user[:password]@]host:port/amps/json, e.g. tcp://127.0.0.1:9007/amps/json")
