"""Starting and stopping a broker: recovery, listeners, and the serve-until-signal loop.

``start_broker(settings)`` does what ``ampsctl broker run`` does before it prints its
``listening ...`` lines, in this order:

1. open the journal for appending (``JournalWriter.open`` takes its lock and cuts a torn tail);
2. recover the SOW (``sow.recovery.recover``: load each SOW file, replay the journal after it,
   process the expirations due now), and journal those expirations;
3. build the core on the recovered store, numbering new records after the journal's last, and
   give it the publishers the journal records (the last ``s`` and bookmark of each client name);
4. bind every listener (a port in use is EnvironmentProblem, exit 4).

``running_broker`` is the same as an async context manager (tests, the future pytest plugin);
``serve`` runs until ``stop`` is set (SIGINT/SIGTERM in the CLI) or the broker fails; a final
commit or checkpoint that fails during the shutdown is that failure too (logged, exit code 4).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from ampsctl.broker.core import BrokerCore
from ampsctl.broker.durability import Durability
from ampsctl.broker.server import BrokerServer, wall_clock_micros
from ampsctl.broker.settings import BrokerSettings
from ampsctl.errors import AmpsctlError
from ampsctl.journal.publishers import publisher_marks
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.writer import JournalWriter
from ampsctl.sow.recovery import RecoveryResult, recover

log = logging.getLogger("ampsctl.broker")


async def start_broker(settings: BrokerSettings, *, clock: Callable[[], int] = wall_clock_micros) -> BrokerServer:
    """Recover and start listening; the running server (``server.uris`` says where)."""
    for note in settings.notes:
        log.warning("%s", note)
    journal = settings.journal
    writer = None
    if journal is not None:
        writer = JournalWriter.open(journal.directory, segment_bytes=journal.segment_bytes, fsync=journal.fsync)
        if writer.recovery is not None:
            log.warning("journal %s: %s", journal.directory, writer.recovery)
    try:
        now = clock()
        # One reader (one walk of the last segment) for the SOW replay and the publisher memory.
        reader = JournalReader(journal.directory) if journal is not None and writer and writer.last_sequence else None
        result = recover(list(settings.specs), journal=reader, now=now, base_dir=settings.base_dir)
        _report(result)
        core = BrokerCore(settings.core, result.store, last_sequence=writer.last_sequence if writer else 0)
        if reader is not None:
            core.publishers.recover(publisher_marks(reader))  # §4.2: s and bm survive a restart
        server = BrokerServer(settings, core, Durability(writer, result.store, settings.base_dir), clock=clock)
        server.execute(core.recovered_expiries(result.expired, now))
        await server.start()
    except BaseException:
        if writer is not None:
            writer.close()
        raise
    return server


@contextlib.asynccontextmanager
async def running_broker(settings: BrokerSettings, *,
                         clock: Callable[[], int] = wall_clock_micros) -> AsyncIterator[BrokerServer]:
    server = await start_broker(settings, clock=clock)
    try:
        yield server
    finally:
        await server.close()


async def serve(settings: BrokerSettings, *, on_ready: Callable[[list[str]], None],
                stop: asyncio.Event) -> AmpsctlError | None:
    """Run until ``stop`` is set or the broker fails; the failure, if any (already logged)."""
    server = await start_broker(settings)
    on_ready(server.uris)
    stopping = asyncio.create_task(stop.wait())
    stopped = asyncio.create_task(server.stopped.wait())
    await asyncio.wait({stopping, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    log.info("shutting down")
    await server.close()
    stopped.cancel()
    failure = server.failure
    if failure is None and server.durability.error is not None:  # the final commit or checkpoint failed
        failure = server.durability.error
        log.critical("the shutdown could not finish: %s", failure.message)
    return failure


def _report(result: RecoveryResult) -> None:
    for group in result.groups:
        name = f"SOW topic {group.name} ({group.message_type})"
        if group.source == "file":
            log.info("%s: loaded %d record(s) from %s, replayed %d journal record(s) after sequence %s",
                     name, group.loaded, group.path, group.replayed, group.file_sequence)
        elif group.source == "rebuilt":
            log.info("%s: rebuilt from the journal (%d record(s) replayed); %s: %s", name, group.replayed,
                     group.path, group.problem or "not used")
        else:
            log.info("%s: transient, %d journal record(s) replayed", name, group.replayed)
        if group.removed:
            log.warning("%s: removed the temporary file(s) of a checkpoint killed midway: %s", name,
                        ", ".join(group.removed))
        # a first start has no SOW file (normal); a damaged or ahead-of-journal file deserves a warning
        if group.problem and group.problem != "no SOW file yet":
            log.warning("%s: %s", name, group.problem)
    if result.torn_tail:
        log.warning("journal: %s", result.torn_tail)
    if result.expired:
        log.info("recovery expired %d SOW record(s)", len(result.expired))
