"""AMPS connection strings (spec/protocol.md §1.1): ``tcp://[user[:pw]@]host:port/amps[/json]``."""

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
    parts = urlsplit(uri)
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
    except ValueError as exc:
        raise BadUri(uri, str(exc)) from None
    if not parts.hostname or port is None:
        raise BadUri(uri, "host and port are required")
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return AmpsUri(parts.hostname, port, user, password, message_type)
