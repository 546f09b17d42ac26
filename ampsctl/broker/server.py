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
checkpoint every ``checkpoint_interval`` (a snapshot on the loop, written on its own thread
once the journal covers it: ``checkpoints.py``) and at shutdown (synchronously, after a commit).

The timed commit does not block the loop on the disk (an fsync takes 0.3-1.5 ms, and every
delivery would wait behind it): the records are written on the loop, the fsync runs on the
server's one worker thread (``durability.begin_commit``), and its completion, back on the loop,
releases the acks it covers (``end_commit``). One fsync is in flight at a time; a commit due
meanwhile starts as soon as it returns. Shutdown and bookmark replay commit synchronously
(rare, and they need the records on disk before they go on).

Invariants:
* Actions are executed in list order, and a connection's frames reach its transport in the
  order the core produced them (held frames keep their order among themselves).
* No exception from one connection's input reaches another connection: framing errors close
  that connection; a failure of the journal (disk full) or an internal error stops the whole
  broker cleanly (``failure``) instead of serving on with a journal that no longer matches.
* A held frame goes out only after the commit covering its sequence returned or its fsync job
  completed without error; a failed fsync stops the broker and releases nothing more.
* ``close`` waits for the fsync and the checkpoint in flight, then commits, releases held acks,
  checkpoints and closes every socket exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ampsctl.broker.checkpoints import Checkpoints
from ampsctl.broker.connection import ClientConnection
from ampsctl.broker.core import Action, Append, BrokerCore, Close, Log, LogLevel, Send, SendDurable
from ampsctl.broker.core.replay import StartReplay
from ampsctl.broker.durability import BrokerFailure, Durability
from ampsctl.broker.replayer import PAUSE_BYTES, Replayer
from ampsctl.broker.settings import BrokerSettings, Listener
from ampsctl.errors import AmpsctlError, EnvironmentProblem
from ampsctl.journal.writer import SyncJob
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
        self._syncing: tuple[SyncJob, asyncio.Future[None]] | None = None  # the fsync on the worker thread
        self._commit_due = False  # a timed commit came while one was in flight
        self._fsync_thread: ThreadPoolExecutor | None = None  # created by the first timed commit
        self._release_timer: tuple[int, asyncio.TimerHandle] | None = None  # (deadline µs, timer)
        self._checkpoints = Checkpoints(self)  # SOW files written on their own thread (checkpoints.py)
        self._closed = False
        journal = settings.journal
        self.replayer = Replayer(core, journal.directory if journal is not None else None, commit=self._commit,
                                 execute=self.execute, queued=self._queued, clock=clock, ended=self._close_if_ended,
                                 pause_bytes=min(PAUSE_BYTES, settings.outbound_limit))

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
        self._tasks.append(asyncio.create_task(self._every(self.settings.checkpoint_interval, self._checkpoints.start)))
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
        if self._syncing is not None:  # its completion (which releases what it covers) comes first
            job, syncing = self._syncing
            await asyncio.wait([syncing])
            self._synced(job, syncing)  # a no-op when its callback ran already
        if self._fsync_thread is not None:
            self._fsync_thread.shutdown(wait=True)
        await self._checkpoints.close()
        if self.failure is None:
            with contextlib.suppress(AmpsctlError):  # a failing disk at shutdown is logged, not raised twice
                self._commit()
                self._checkpoint_now()
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

    def holds_for(self, conn: int) -> bool:
        """Whether ``conn`` is owed more for commands it sent: acks waiting for a journal commit, or
        a bookmark replay still streaming (a half-closed client still gets them)."""
        return self.durability.holds(conn) or self.replayer.serving(conn)

    def _close_if_ended(self, conn: int) -> None:
        """Close a connection whose client ended its input once nothing more is owed to it."""
        connection = self.connections.get(conn)
        if connection is not None and connection.input_ended and not self.holds_for(conn):
            connection.close("the client ended its input; what it was owed was sent")

    def unregister(self, connection: ClientConnection) -> None:
        if self.connections.pop(connection.conn, None) is not None:
            self.execute(self.core.disconnected(connection.conn, self.clock()))

    def received(self, connection: ClientConnection, frames: list[Frame]) -> None:
        """The frames of one read, in order: each is handled and its actions executed before the
        next (the release timer is re-armed once, after the last: no timer runs in between)."""
        receive, run, clock, conn = self.core.receive, self._run, self.clock, connection.conn
        if not frames:
            self.core.heard(conn, clock())  # part of a frame: traffic, for the heartbeat check
        for frame in frames:
            if connection.closing or self.failure is not None:
                break
            try:
                actions = receive(conn, frame, clock())
            except Exception:  # a bug in the core: lose this client, not the broker (and say so loudly)
                log.exception("internal error while handling a command from connection %d; closing it", conn)
                connection.close("internal error (see the log)", level=logging.ERROR)
                break
            run(actions)
        self._schedule_release()

    # ------------------------------------------------------------------ actions

    def execute(self, actions: list[Action]) -> None:
        self._run(actions)
        self._schedule_release()

    def _run(self, actions: list[Action]) -> None:
        """Carry out ``actions`` in order (a failing journal stops the broker)."""
        try:
            for action in actions:
                kind = type(action)  # the action classes are final: exact types, cheaper than isinstance
                if kind is Send:
                    self._write(action.conn, action.data, action.reply)
                elif kind is Append:
                    self.durability.append(action.record)
                    if self._commit_timer is None:
                        self._schedule_commit()
                elif kind is SendDurable:
                    if self.durability.hold(action.sequence, action.conn, action.data):
                        if self._commit_timer is None:
                            self._schedule_commit()
                    else:
                        self._write(action.conn, action.data)
                elif kind is Close:
                    connection = self.connections.get(action.conn)
                    if connection is not None:
                        connection.close(action.reason)
                elif kind is Log:
                    log.log(_LEVELS[action.level], "%s", action.message)
                elif kind is StartReplay:
                    self.replayer.start(action.ticket)
        except AmpsctlError as error:
            self.fail(error)

    def _queued(self, conn: int) -> int | None:
        connection = self.connections.get(conn)
        if connection is None or connection.closing or connection.transport is None:
            return None
        return connection.transport.get_write_buffer_size()

    def _write(self, conn: int, data: bytes, reply: bool = False) -> None:
        connection = self.connections.get(conn)
        if connection is not None:
            connection.write(data, reply)

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
        self._start_commit()

    def _start_commit(self) -> None:
        """Write on the loop, fsync on the worker thread (see the module docstring)."""
        if self.failure is not None or self._closed:
            return  # close() commits synchronously itself
        if self._syncing is not None:
            self._commit_due = True  # _synced starts it: one fsync at a time
            return
        try:
            job = self.durability.begin_commit()
        except AmpsctlError as error:
            self.fail(error)
            return
        if job is None:  # nothing to fsync (policy NEVER or ALWAYS): the write was the commit
            self._deliver(self.durability.release())
            self._checkpoints.committed()
            return
        if self._fsync_thread is None:
            self._fsync_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ampsctl-fsync")
        syncing = asyncio.get_running_loop().run_in_executor(self._fsync_thread, job.run)
        syncing.add_done_callback(functools.partial(self._synced, job))
        self._syncing = (job, syncing)

    def _synced(self, job: SyncJob, syncing: asyncio.Future[None]) -> None:
        """The fsync job returned (on the loop): release the held frames it covers. Once per job."""
        if self._syncing is None or self._syncing[1] is not syncing:
            return
        self._syncing = None
        if self.failure is not None:
            return  # stopping: nothing more is acknowledged
        error = syncing.exception() if not syncing.cancelled() else asyncio.CancelledError()
        try:
            if error is not None and not isinstance(error, OSError):
                raise BrokerFailure(f"the journal's fsync job failed: {error!r}")
            released = self.durability.end_commit(job, error)
        except AmpsctlError as failure:
            self.fail(failure)
            return
        self._deliver(released)
        self._checkpoints.committed()
        if self._commit_due:
            self._commit_due = False
            self._start_commit()  # not _timed_commit: a timer armed meanwhile stays tracked

    def _commit(self) -> None:
        self._deliver(self.durability.commit())
        self._checkpoints.committed()

    def _deliver(self, released: list[tuple[int, bytes]]) -> None:
        """Write released frames; close a connection whose client ended its input once nothing is held for it."""
        for conn, frame in released:
            self._write(conn, frame)
        for conn in {conn for conn, _ in released}:
            self._close_if_ended(conn)

    def commit_soon(self) -> None:
        """Start a commit now rather than at the next FlushInterval (a checkpoint waits for it)."""
        self._start_commit()

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

    @property
    def closing(self) -> bool:
        return self._closed

    def _checkpoint_now(self) -> None:
        """Commit and checkpoint synchronously (shutdown, once the checkpoint thread is done)."""
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
