"""Helpers for driving BrokerCore directly (no sockets): build a core, send commands, read frames."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ampsctl.broker.core import Action, BrokerCore, CoreSettings, RecordedTopics, Send, SendDurable
from ampsctl.protocol import decode_frames, parse_message
from ampsctl.protocol.commands import Logon
from ampsctl.protocol.frames import Frame
from ampsctl.sow import SowStore, TopicSpec

NOW = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z in µs


def spec(name: str = "orders", *, keys: tuple[str, ...] = ("/id",), expiration: int | None = None,
         pattern: str | None = None) -> TopicSpec:
    return TopicSpec(
        name=name, message_type="json", key_fields=keys, key_domain=None, expiration=expiration,
        hash_indexes=(), indexes=(), history_window=None, history_granularity=None,
        pattern=pattern is not None, persistent=False, recovery_point="epoch", file_name=None, regex=pattern,
    )


def make_core(*specs: TopicSpec, recorded: Iterable[str] | None = None, **settings: Any) -> BrokerCore:
    if recorded is not None:
        settings["recorded"] = RecordedTopics.from_entries([(name, "json") for name in recorded])
    return BrokerCore(CoreSettings(**settings), SowStore(list(specs or (spec(),))))


def frames_for(actions: list[Action], conn: int) -> list[Any]:
    """Every server message the actions send to ``conn`` (durable ones included), parsed."""
    data = b"".join(a.data for a in actions if isinstance(a, Send | SendDurable) and a.conn == conn)
    return [parse_message(frame) for frame in decode_frames(data)]


def send(core: BrokerCore, conn: int, command: Any, now: int = NOW) -> list[Action]:
    """Encode, decode and receive a command as the server would."""
    frames = decode_frames(command.encode())
    out: list[Action] = []
    for frame in frames:
        out += core.receive(conn, Frame(frame.header, frame.body), now)
    return out


def logged_on(core: BrokerCore, conn: int, name: str | None = None, now: int = NOW) -> None:
    core.connected(conn, now)
    send(core, conn, Logon(cid="logon", client_name=name or f"client-{conn}"), now)
