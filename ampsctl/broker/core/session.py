"""Per-connection state of the broker core: the logon state machine and heartbeat timing.

Theory of operation (§4). A connection starts ``NEW``. A successful ``logon`` moves it to
``LOGGED_ON`` (once: a second logon is refused with ``already logged on``). A failed logon
(``auth failure``, ``name in use``) leaves it ``NEW`` so the client may try again. With
``require_logon`` off, the first other command logs the connection on implicitly with no name.
A connection that lost its client name to a reconnect (§4.2) is removed from the core at once;
the server's later ``disconnected`` call for it is a no-op.

Heartbeats (§4.4): ``heartbeat start,N`` sets ``interval``; the core sends a heartbeat when it
has sent nothing for ``interval``, and one that asks for an answer (``probe``) when nothing
arrived for ``interval``; it closes the connection when nothing arrived within
``grace * interval`` after that heartbeat. Times are µs, always supplied by the caller.

Publisher memory (§4.2, §5.2): per client name, the highest publish sequence ``s`` seen and
the bookmark of the last journaled publish, for duplicate detection and the logon ack. It is
kept by name, not by connection, so a reconnecting publisher finds it, and it is rebuilt from
the journal at start-up (``Publishers.recover``), so a publisher finds it after a restart too
(what is not journaled, publishes to unrecorded topics, is forgotten then).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from ampsctl.journal.bookmarks import format_bookmark


class LogonState(enum.Enum):
    NEW = "new"
    LOGGED_ON = "logged on"


@dataclass(slots=True)
class Session:
    """One client connection as the core sees it."""

    conn: int
    peer: str = ""
    state: LogonState = LogonState.NEW
    client_name: str | None = None
    user_id: str | None = None
    interval: int | None = None  # heartbeat interval in µs; None = heartbeats off
    last_in: int = 0  # µs of the last command received
    last_out: int = 0  # µs of the last frame queued for this connection
    probe: int | None = None  # µs a heartbeat was sent to a silent client that has not answered yet
    next_sub_id: int = 0  # for subscriptions that carry neither sub_id nor cid (seed 002)

    @property
    def logged_on(self) -> bool:
        return self.state is LogonState.LOGGED_ON

    @property
    def label(self) -> str:
        """How log lines name this connection."""
        name = f" ({self.client_name})" if self.client_name else ""
        return f"connection {self.conn}{name}"

    def assign_sub_id(self) -> str:
        self.next_sub_id += 1
        return f"ampsctl-sub-{self.next_sub_id}"


@dataclass(slots=True)
class Publisher:
    """What the broker remembers about one client name's publishing."""

    name: str = ""
    last_seq: int = 0  # highest ``s`` seen (0: none)
    last_journaled: int = 0  # journal sequence of the last journaled publish (0: none)

    @property
    def last_bookmark(self) -> str | None:
        """The bookmark of the last journaled publish: formatted when asked (a logon), not per publish."""
        return format_bookmark(self.name, self.last_journaled) if self.last_journaled else None


@dataclass(slots=True)
class Publishers:
    """Publisher memory by client name (anonymous publishers are not tracked)."""

    by_name: dict[str, Publisher] = field(default_factory=dict)

    def get(self, name: str | None) -> Publisher | None:
        return self.by_name.get(name) if name else None

    def is_duplicate(self, name: str | None, seq: int | None) -> bool:
        """§5.2 [INF]: a publish whose ``s`` is at or below the highest seen for its name."""
        if not name or seq is None:
            return False
        known = self.by_name.get(name)
        return known is not None and seq <= known.last_seq

    def recover(self, marks: Mapping[str, tuple[int | None, int]]) -> None:
        """What ``published`` saw before a restart, from each client name's highest publisher
        sequence and last journaled publish (``journal.publishers.publisher_marks``): the logon
        ack's ``s`` and ``bm`` and duplicate detection survive the restart (§4.2)."""
        for name, (highest, last) in marks.items():
            self.published(name, highest, last)

    def published(self, name: str | None, seq: int | None, journaled: int) -> None:
        """``journaled``: the publish's journal sequence (0: not journaled)."""
        if not name or (seq is None and not journaled):
            return
        known = self.by_name.get(name)
        if known is None:
            known = self.by_name[name] = Publisher(name)
        if seq is not None and seq > known.last_seq:
            known.last_seq = seq
        if journaled:
            known.last_journaled = journaled
