"""AMPS connection strings (spec/protocol.md §1.1): ``tcp://[user[:pw]@]host:port/amps[/json]``.

A URI is shown to the user (messages, errors, JSON summaries) only through ``shown_uri``, which
hides the password: output ends up in terminals and CI logs that others read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from ampsctl.client.errors import BadUri


@dataclass(frozen=True, slots=True)
class AmpsUri:
    host: str
    port: int
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    message_type: str = "json"


def parse_uri(uri: str) -> AmpsUri:
    """The parts of an AMPS URI; only tcp, protocol amps (or json) and message type json."""
    try:
        parts = urlsplit(uri)
    except ValueError as exc:  # an unclosed [ of an IPv6 address
        raise BadUri(uri, str(exc)) from None
    if parts.scheme != "tcp":
        raise BadUri(uri, f"transport {parts.scheme or '(none)'!r} is not supported (only tcp)")
    segments = [segment for segment in parts.path.split("/") if segment]
    if not segments or segments[0] not in ("amps", "json"):
        raise BadUri(uri, "the path must name the protocol: /amps/json")
    message_type = segments[1] if len(segments) > 1 else "json"
    if message_type != "json" or len(segments) > 2:
        raise BadUri(uri, f"message type {message_type!r} is not supported (only json)")
    try:
        port = parts.port
    except ValueError:  # not urlsplit's words: they quote the "port", which may be the password
        raise BadUri(uri, "the port must be a number from 0 to 65535") from None
    if not parts.hostname or port is None:
        raise BadUri(uri, "host and port are required")
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return AmpsUri(parts.hostname, port, user, password, message_type)


HIDDEN = "***"


def shown_uri(uri: str) -> str:
    """``uri`` with its password replaced by ``***`` (``tcp://alice:***@host:9007/amps/json``).

    Plain string work, not ``urlsplit``: it must also hide the password of a URI that does not
    parse (a ``BadUri`` message repeats it). Everything from the first ``:`` after the user to
    the last ``@`` counts as the password, so a password holding ``@``, ``/`` or ``:`` is still
    hidden whole; a URI without ``@`` has no password and is returned unchanged.
    """
    scheme_end = uri.find("://")
    start = scheme_end + 3 if scheme_end >= 0 else 0
    at = uri.rfind("@", start)
    if at < 0:
        return uri
    colon = uri.find(":", start, at)
    if colon < 0 or colon + 1 == at:  # a user without a password, or an empty one
        return uri
    return f"{uri[:colon + 1]}{HIDDEN}{uri[at:]}"
