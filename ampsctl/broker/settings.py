"""What an AMPS config asks of the local broker: listeners, journal, SOW topics, core settings.

``broker_settings(model, ...)`` reads a loaded config (``config.model.ConfigModel``) and
returns a ``BrokerSettings`` value; ``read_users`` reads a ``--users`` file. Nothing here opens
a socket.

Decisions (docs/broker.md):
* Listeners come from ``Transports/Transport`` elements of ``Type`` ``tcp`` whose ``Protocol`` is
  ``amps`` or ``json`` (or a ``Protocols/Protocol`` whose ``Module`` is ``amps``) and whose
  ``MessageType``, if given, is ``json``. Others (tcps, websocket, FIX, unix sockets, another
  message type) are reported at start-up as not supported, never silently dropped.
* The port comes from ``InetAddr``; the host is ``--host`` (127.0.0.1 by default), never the
  host part of ``InetAddr``: a development broker does not listen on every interface because a
  production config says so. ``--port`` replaces the config's transports with one listener.
* ``TransactionLog/JournalDirectory`` is the journal (``FlushInterval`` is the group-commit
  interval, ``JournalSize`` the segment size); its ``Topic`` entries say what is recorded.
* Relative paths (journal, SOW files) are relative to the current directory, as for AMPS.
* Actions (``actions/plan.py``): an ``amps-action-on-manifold-affinity`` action whose Do steps
  are all ``amps-action-do-publish-message`` runs; every other action is reported at start-up as
  not supported, with its config location, never silently ignored. A ``CoverageSubsetOption``
  name is declared to the command parser (``CoreSettings.user_options``) so control subscriptions
  keep it even when it is not a ``udo_*`` name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ampsctl.actions.plan import plan_actions
from ampsctl.broker.core.settings import CoreSettings, RecordedTopics
from ampsctl.errors import InputError, Location, UnitError
from ampsctl.journal.writer import DEFAULT_SEGMENT_BYTES, FsyncPolicy
from ampsctl.protocol.frames import DEFAULT_MAX_FRAME_SIZE
from ampsctl.sow.spec import TopicSpec, topic_specs
from ampsctl.units import parse_bytes, parse_interval

if TYPE_CHECKING:
    from ampsctl.config.model import ConfigModel, Section

DEFAULT_HOST = "127.0.0.1"
DEFAULT_FLUSH_INTERVAL = 0.1  # FlushInterval default (spec/config.md §4.3)
DEFAULT_OUTBOUND_LIMIT = 64 * 1024 * 1024  # bytes queued for one client before it is a slow consumer


@dataclass(frozen=True, slots=True)
class Listener:
    name: str  # the Transport's Name, or "command line"
    host: str
    port: int

    def uri(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp://{host}:{self.port if port is None else port}/amps/json"


@dataclass(frozen=True, slots=True)
class JournalSettings:
    directory: Path
    flush_interval: float = DEFAULT_FLUSH_INTERVAL  # seconds between group commits
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    fsync: FsyncPolicy = FsyncPolicy.GROUP


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    listeners: tuple[Listener, ...]
    specs: tuple[TopicSpec, ...] = ()
    journal: JournalSettings | None = None
    core: CoreSettings = field(default_factory=CoreSettings)
    base_dir: Path = Path(".")  # SOW FileName paths are relative to this
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    outbound_limit: int = DEFAULT_OUTBOUND_LIMIT
    tick_interval: float = 1.0  # SOW expiry and heartbeats
    checkpoint_interval: float = 5.0  # SOW files brought up to date this often (and at shutdown)
    notes: tuple[str, ...] = ()  # what the config asks for that this broker does not do


def broker_settings(model: ConfigModel, *, host: str = DEFAULT_HOST, port: int | None = None,
                    fsync: FsyncPolicy = FsyncPolicy.GROUP, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                    outbound_limit: int = DEFAULT_OUTBOUND_LIMIT) -> BrokerSettings:
    """The broker settings of a config; InputError (with the place) for values it cannot use."""
    notes: list[str] = []
    if port is not None:
        listeners: tuple[Listener, ...] = (Listener("command line", host, port),)
    else:
        listeners = tuple(_listeners(model, host, notes))
        if not listeners:
            raise InputError("the config has no tcp transport with protocol amps (json) to listen on",
                             code="BROKER_CONFIG", location=None,
                             hint="add a <Transport> with <Type>tcp</Type> and <Protocol>amps</Protocol>, "
                                  "or pass --port")
    journal = _journal(model, fsync)
    recorded = RecordedTopics.from_entries([(name, mtype) for name, mtype, _ in model.txlog_topics]) \
        if journal is not None else RecordedTopics()
    specs = tuple(topic_specs(model))
    for spec in specs:
        if spec.message_type != "json":
            notes.append(f"SOW topic {spec.name!r} ({spec.message_type}): only json is served; its records are "
                         "recovered but no client can reach them")
    plan = plan_actions(model)
    notes += plan.notes
    coverage = frozenset(option for action in plan.actions
                         if (option := action.manifold.settings.coverage_option) is not None)
    core = CoreSettings(recorded=recorded, user_options=coverage, actions=plan if plan.actions else None)
    return BrokerSettings(listeners=listeners, specs=specs, journal=journal, core=core,
                          max_frame_size=max_frame_size, outbound_limit=outbound_limit, notes=tuple(notes))


def _listeners(model: ConfigModel, host: str, notes: list[str]) -> list[Listener]:
    amps_protocols = {"amps", "json"} | {
        (protocol.text("Name") or "").lower()
        for protocol in _protocols(model)
        if (protocol.text("Module") or "").lower() == "amps"
    }
    found = []
    for transport in model.transports:
        name = transport.text("Name") or "(unnamed)"
        kind = (transport.text("Type") or "").lower()
        protocol = (transport.text("Protocol") or "").lower()
        message_type = (transport.text("MessageType") or "json").lower()
        if kind != "tcp" or protocol not in amps_protocols or message_type != "json":
            what = f"type {kind or '?'}, protocol {protocol or '?'}, message type {message_type}"
            notes.append(f"transport {name!r} ({what}) is not supported: only tcp with protocol amps and json "
                         "messages; not listening on it")
            continue
        address = transport.text("InetAddr") or ""
        found.append(Listener(name, host, _port(address, name, model, transport)))
    return found


def _protocols(model: ConfigModel) -> list[Section]:
    from ampsctl.config.model import Section

    return [Section(el) for section in model.root.all("Protocols") for el in Section(section).all("Protocol")]


def _port(address: str, name: str, model: ConfigModel, transport: Section) -> int:
    text = address.strip().rsplit(":", 1)[-1].strip("[] ")
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise InputError(f"transport {name!r}: InetAddr {address!r} has no port number",
                         code="BROKER_CONFIG", location=model.config.locate(transport.el),
                         hint="write <InetAddr>9007</InetAddr> or <InetAddr>localhost:9007</InetAddr>")
    return int(text)


def _journal(model: ConfigModel, fsync: FsyncPolicy) -> JournalSettings | None:
    txlog = model.txlog
    if txlog is None:
        return None
    directory = txlog.text("JournalDirectory")
    where = model.config.locate(txlog.el)
    if not directory:
        raise InputError("TransactionLog has no JournalDirectory", code="BROKER_CONFIG", location=where,
                         hint="add <JournalDirectory>./journal</JournalDirectory>")
    try:
        interval = txlog.text("FlushInterval")
        flush = parse_interval(interval).nanos / 1e9 if interval else DEFAULT_FLUSH_INTERVAL
        size = txlog.text("JournalSize")
        segment = math.ceil(parse_bytes(size).high) if size else DEFAULT_SEGMENT_BYTES
    except UnitError as exc:
        raise InputError(f"TransactionLog: {exc.message}", code="BROKER_CONFIG", location=where, hint=exc.hint) from None
    return JournalSettings(Path(directory), max(flush, 0.000_001), segment, fsync)


def read_users(path: Path) -> dict[str, str]:
    """A ``--users`` file: one ``user:password`` per line; blank lines and ``#`` comments skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the users file: {exc.strerror or exc}", code="BROKER_USERS",
                         location=Location(str(path)), hint="give a readable file of user:password lines") from None
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        user, sep, password = entry.partition(":")
        if not sep or not user:
            raise InputError("a users file line must be user:password", code="BROKER_USERS",
                             location=Location(str(path), number), hint="for example alice:s3cret")
        users[user] = password
    return users
