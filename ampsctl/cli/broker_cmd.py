"""``ampsctl broker run``: a local AMPS broker for development and tests.

A thin command over ``ampsctl.broker`` (imported inside the function so ``ampsctl --help``
never loads the broker or asyncio-heavy modules, tests/cli/test_startup.py). Contract:

* stdout: one line per listener, ``listening tcp://HOST:PORT/amps/json``, printed (and flushed)
  once the broker accepts connections; nothing else goes to stdout. ``--port 0`` picks a free
  port, and the line says which.
* stderr: the log (start-up recovery, unsupported config features, rejected commands,
  disconnects of slow or silent clients).
* SIGINT/SIGTERM: stop listening, commit the journal, send the acks it covers, write the SOW
  files, close every client, exit 0.
* Exit codes: 0 clean shutdown, 2 usage, 3 invalid input (bad config or users file),
  4 environment (the port is in use, the journal is locked or unwritable), 5 internal error.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from pathlib import Path

import typer

app = typer.Typer(help="Run the local AMPS broker.", no_args_is_help=True)


class Fsync(str, Enum):
    group = "group"
    always = "always"
    never = "never"


class LogLevelName(str, Enum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


@app.command("run")
def run_command(
    config: Path = typer.Option(..., "--config", "-c", metavar="CFG", help="The AMPS config file: Transports, TransactionLog and SOW are used."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on (the host part of InetAddr is not used)."),
    port: int | None = typer.Option(None, "--port", "-p", min=0, max=65535, help="Listen on this one port instead of the config's transports (0: a free port)."),
    users: Path | None = typer.Option(None, "--users", metavar="FILE", help="Check logon credentials against this file of user:password lines."),
    fsync: Fsync = typer.Option(Fsync.group, "--fsync", help="Journal durability: group (fsync every FlushInterval), always, or never (tests)."),
    max_frame: str = typer.Option("64MB", "--max-frame-size", metavar="BYTES", help="Frames larger than this close the connection."),
    outbound: str = typer.Option("64MB", "--outbound-limit", metavar="BYTES", help="A client with more than this waiting to be sent is disconnected (slow consumer)."),
    log_level: LogLevelName = typer.Option(LogLevelName.info, "--log-level", help="Lowest level of log lines on stderr."),
    env: list[str] | None = typer.Option(None, "--env", help="Define NAME=VALUE for ${NAME} expansion in the config (repeatable)."),
) -> None:
    """Serve the AMPS protocol (amps/json) with the config's SOW topics and journal.

    Prints `listening tcp://HOST:PORT/amps/json` for each listener, then serves until
    SIGINT or SIGTERM. Exit codes: 0 clean shutdown, 2 usage, 3 invalid config,
    4 port in use or journal unavailable, 5 internal error.
    """
    import asyncio
    import logging
    import signal
    import sys

    from ampsctl.broker.run import serve
    from ampsctl.broker.settings import broker_settings, read_users
    from ampsctl.cli.config_cmd import parse_env
    from ampsctl.config.loader import load_config
    from ampsctl.config.model import ConfigModel
    from ampsctl.journal.writer import FsyncPolicy

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger = logging.getLogger("ampsctl.broker")
    logger.addHandler(handler)
    logger.setLevel(log_level.value.upper())
    logger.propagate = False

    model = ConfigModel(load_config(str(config), parse_env(env)))
    settings = broker_settings(model, host=host, port=port, fsync=FsyncPolicy(fsync.value),
                               max_frame_size=_size("--max-frame-size", max_frame),
                               outbound_limit=_size("--outbound-limit", outbound))
    if users is not None:
        settings = dataclasses.replace(settings, core=dataclasses.replace(settings.core, users=read_users(users)))

    def ready(uris: list[str]) -> None:
        for uri in uris:
            print(f"listening {uri}", flush=True)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, stop.set)
        failure = await serve(settings, on_ready=ready, stop=stop)
        if failure is not None:
            raise failure

    asyncio.run(main())


def _size(option: str, text: str) -> int:
    from ampsctl.errors import UnitError, UsageError
    from ampsctl.units import parse_bytes

    try:
        size = parse_bytes(text).high  # 64MB = 64 MiB: frame sizes are powers of two
    except UnitError as exc:
        raise UsageError(f"{option}: {exc.message}", hint=exc.hint) from None
    if not 1 <= size <= 0xFFFF_FFFF:
        raise UsageError(f"{option}: {text} is outside 1 byte .. 4 GB", hint="for example 64MB")
    return int(size)
