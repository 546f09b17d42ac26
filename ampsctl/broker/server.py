"""The asyncio server: listeners, connections, timers, and the executor of the core's actions.

Theory of operation. Everything runs on one event loop thread. asyncio calls the connection
callbacks; a decoded frame goes to ``BrokerCore.receive`` and the returned actions are executed
at once, in order (``execute``), before the next frame or event is looked at. That is what makes
the core's guarantees hold on the wire: each command is complete before the next starts.

Bookmark replay (``replayer.py``): a ``StartReplay`` action commits the journal and finds the
start synchronously, then a task streams the journal in chunks, yielding between them.

Timers: ``tick`` (SOW expiry, heartbeats) every ``tick_interval``; conflated subscriptions'
releases at the core's next conflation deadline (checked after every batch of actions, so a
100 ms interval is kept to within the event loop's latency, not the 1 s tick); a journal commit at most
``flush_interval`` after the first uncommitted append or held frame (group commit: everything
appended in between shares one fsync), releasing the ``persisted`` acks it covers; a SOW
checkpoint every ``checkpoint_interval`` and at shutdown, each right after a commit.

Invariants:
* Actions are executed in list order, and a connection's frames reach its transport in the
  order the core produced them (held frames keep their order among themselves).
* No exception from one connection's input reaches another connection: framing errors close
  that connection; a failure of the journal (disk full) or an internal error stops the whole
  broker cleanly (``failure``) instead of serving on with a journal that no longer matches.
* ``close`` commits, releases held acks, checkpoints and closes every socket exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import time
from collections.abc import Callable

from ampsctl.broker.connection import ClientConnection
from ampsctl.broker.core import Action, Append, BrokerCore, Close, Log, LogLevel, Send, SendDurable
from ampsctl.broker.core.replay import StartReplay
from ampsctl.broker.durability import Durability
from ampsctl.broker.replayer import Replayer
from ampsctl.broker.settings import BrokerSettings, Listener
from ampsctl.errors import AmpsctlError, EnvironmentProblem
from ampsctl.protocol.frames import Frame

log = logging.getLogger("ampsctl.broker")
_LEVELS = {LogLevel.DEBUG: logging.DEBUG, LogLevel.INFO: logging.INFO, LogLevel.WARNING: logging.WARNING,
           LogLevel.ERROR: logging.ERROR}


def wall_clock_micros() -> int:
    return time.time_ns() // 1000


class BrokerServer:
    """Serves one ``BrokerCore`` on the listeners of ``settings``."""

    def __init__(self, settings: BrokerSettings, core: BrokerCore, durability: Durability, *,
                 clock: Callable[[], int] = wall_clock_micros) -> None:
        self.settings = settings
        self.core = core
        self.durability = durability
        self.clock = clock
        self.connections: dict[int, ClientConnection] = {}
        self.uris: list[str] = []
        self.failure: AmpsctlError | None = None  # why the broker stopped on its own
        self.stopped = asyncio.Event()
        self._servers: list[asyncio.Server] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._next_conn = 0
        self._commit_timer: asyncio.TimerHandle | None = None
        self._release_timer: tuple[int, asyncio.TimerHandle] | None = None  # (deadline µs, timer)
        self._closed = False
        journal = settings.journal
        self.replayer = Replayer(core, journal.directory if journal is not None else None, commit=self._commit,
                                 execute=self.execute, queued=self._queued)

    # ------------------------------------------------------------------ life cycle

    async def start(self) -> list[str]:
        """Bind every listener (EnvironmentProblem if a port is taken); the URIs served."""
        loop = asyncio.get_running_loop()
        for listener in self.settings.listeners:
            try:
                server = await loop.create_server(lambda: ClientConnection(self), listener.host, listener.port,
                                                  reuse_address=True)
            except OSError as exc:
                await self.close()
                raise _bind_error(listener, exc) from None
            self._servers.append(server)
            port = server.sockets[0].getsockname()[1]
            self.uris.append(listener.uri(port))
        self._tasks.append(asyncio.create_task(self._every(self.settings.tick_interval, self._tick)))
        self._tasks.append(asyncio.create_task(self._every(self.settings.checkpoint_interval, self._checkpoint)))
        return list(self.uris)

    async def close(self) -> None:
        """Stop listening, flush the journal and acks, checkpoint the SOW, drop every client."""
        if self._closed:
            return
        self._closed = True
        for server in self._servers:
            server.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.replayer.close()
        if self._commit_timer is not None:
            self._commit_timer.cancel()
        if self._release_timer is not None:
            self._release_timer[1].cancel()
        if self.failure is None:
            with contextlib.suppress(AmpsctlError):  # a failing disk at shutdown is logged, not raised twice
                self._commit()
                self._checkpoint()
        for connection in list(self.connections.values()):
            connection.close("the broker is shutting down")
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        self.durability.close()
        self.stopped.set()

    def fail(self, error: AmpsctlError) -> None:
        """Stop the broker because it cannot go on (journal write failed, internal error)."""
        if self.failure is None:
            self.failure = error
            log.critical("stopping the broker: %s", error.message)
            asyncio.get_running_loop().create_task(self.close())

    # ------------------------------------------------------------------ connections

    def register(self, connection: ClientConnection) -> int:
        self._next_conn += 1
        conn = self._next_conn
        self.connections[conn] = connection
        if self._closed or self.failure is not None:
            connection.close("the broker is shutting down")
            return conn
        log.debug("connection %d from %s", conn, connection.peer)
        self.execute(self.core.connected(conn, self.clock(), peer=connection.peer))
        return conn

    def unregister(self, connection: ClientConnection) -> None:
        if self.connections.pop(connection.conn, None) is not None:
            self.execute(self.core.disconnected(connection.conn, self.clock()))

    def received(self, connection: ClientConnection, frame: Frame) -> None:
        if self.failure is not None:
            return
        try:
            actions = self.core.receive(connection.conn, frame, self.clock())
        except Exception:  # a bug in the core: lose this client, not the broker (and say so loudly)
            log.exception("internal error while handling a command from connection %d; closing it", connection.conn)
            connection.close("internal error (see the log)", level=logging.ERROR)
            return
        self.execute(actions)

    # ------------------------------------------------------------------ actions

    def execute(self, actions: list[Action]) -> None:
        try:
            for action in actions:
                if isinstance(action, Send):
                    self._write(action.conn, action.data)
                elif isinstance(action, Append):
                    self.durability.append(action.record)
                    self._schedule_commit()
                elif isinstance(action, SendDurable):
                    if self.durability.hold(action.sequence, action.conn, action.data):
                        self._schedule_commit()
                    else:
                        self._write(action.conn, action.data)
                elif isinstance(action, Close):
                    connection = self.connections.get(action.conn)
                    if connection is not None:
                        connection.close(action.reason)
                elif isinstance(action, Log):
                    log.log(_LEVELS[action.level], "%s", action.message)
                elif isinstance(action, StartReplay):
                    self.replayer.start(action.ticket)
        except AmpsctlError as error:
            self.fail(error)
        self._schedule_release()

    def _queued(self, conn: int) -> int | None:
        connection = self.connections.get(conn)
        if connection is None or connection.closing or connection.transport is None:
            return None
        return connection.transport.get_write_buffer_size()

    def _write(self, conn: int, data: bytes) -> None:
        connection = self.connections.get(conn)
        if connection is not None:
            connection.write(data)

    # ------------------------------------------------------------------ timers

    def _schedule_commit(self) -> None:
        if self._commit_timer is None and not self._closed:
            loop = asyncio.get_running_loop()
            self._commit_timer = loop.call_later(self.durability_interval, self._timed_commit)

    @property
    def durability_interval(self) -> float:
        journal = self.settings.journal
        return journal.flush_interval if journal is not None else 0.0

    def _timed_commit(self) -> None:
        self._commit_timer = None
        try:
            self._commit()
        except AmpsctlError as error:
            self.fail(error)

    def _commit(self) -> None:
        for conn, frame in self.durability.commit():
            self._write(conn, frame)

    def _schedule_release(self) -> None:
        """Keep one timer armed for the core's next conflation deadline."""
        deadline = self.core.conflation.next_deadline()
        if deadline is None or self._closed:
            return
        current = self._release_timer
        if current is not None:
            if current[0] <= deadline:
                return
            current[1].cancel()
        delay = max(deadline - self.clock(), 0) / 1_000_000
        self._release_timer = (deadline, asyncio.get_running_loop().call_later(delay, self._release))

    def _release(self) -> None:
        self._release_timer = None
        if self.failure is None:
            self.execute(self.core.conflation.release(self.core.subs, self.clock()))  # re-arms the timer

    def _tick(self) -> None:
        self.execute(self.core.tick(self.clock()))

    def _checkpoint(self) -> None:
        self._commit()
        written = self.durability.checkpoint()
        if written:
            log.debug("checkpointed %d SOW file(s)", written)

    async def _every(self, seconds: float, work: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                work()
            except AmpsctlError as error:
                self.fail(error)
                return


def _bind_error(listener: Listener, exc: OSError) -> EnvironmentProblem:
    where = f"{listener.host}:{listener.port}"
    if exc.errno == errno.EADDRINUSE:
        return EnvironmentProblem(f"cannot listen on {where} (transport {listener.name!r}): the port is in use",
                                  code="BROKER_PORT", hint="stop what uses it, or pass --port 0 for a free port")
    return EnvironmentProblem(f"cannot listen on {where} (transport {listener.name!r}): {exc.strerror or exc}",
                              code="BROKER_PORT", hint="check --host and the transport's InetAddr")
