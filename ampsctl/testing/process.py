"""``BrokerProcess``: ``ampsctl broker run`` as a child process, for tests of client code.

Why a process and not an in-process asyncio server: the code under test may run its own event
loop, threads or a blocking AMPS client; a broker in its own process never competes with it
and is stopped the way a real one is (SIGTERM, then SIGKILL if it does not exit).

Invariants:
* ``start`` returns only once the broker printed its ``listening`` line, so the URI accepts
  connections; it raises ``BrokerStartError`` with the broker's log if it exits or stays
  silent for ``start_timeout`` seconds (never a hang).
* The broker runs in ``workdir``, so the relative journal and SOW paths of a config land there
  and not in the caller's directory.
* ``stop`` is idempotent and always reaps the child.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from ampsctl.errors import EnvironmentProblem


class BrokerStartError(EnvironmentProblem):
    """The broker exited or stayed silent instead of listening."""


class BrokerProcess:
    """One broker child process serving ``config`` on a free port of 127.0.0.1."""

    def __init__(self, config: str | os.PathLike[str], workdir: str | os.PathLike[str], *,
                 extra_args: tuple[str, ...] = ("--fsync", "never"), start_timeout: float = 30.0) -> None:
        self.config = Path(config).resolve()
        self.workdir = Path(workdir)
        self.extra_args = extra_args
        self.start_timeout = start_timeout
        self.log_path = self.workdir / "ampsctl-broker.log"
        self.uri = ""
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        """Start the broker; its URI (``tcp://127.0.0.1:PORT/amps/json``)."""
        if not self.config.is_file():
            raise BrokerStartError(f"AMPS config {self.config} does not exist", code="TESTING_CONFIG",
                                   hint="pass the path of your amps.xml (absolute, or relative to the test run)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "ampsctl", "broker", "run", "--config", str(self.config),
                   "--port", "0", *self.extra_args]
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(command, cwd=self.workdir, stdout=subprocess.PIPE, stderr=log,
                                             stdin=subprocess.DEVNULL)
        line = self._first_line()
        if not line.startswith("listening "):
            self.stop()
            raise BrokerStartError(f"the broker did not start: {line or 'no output'}\n{self.log()}",
                                   code="TESTING_START", hint="run `ampsctl broker run --config CFG` to see why")
        self.uri = line.split()[1]
        return self.uri

    def _first_line(self) -> str:
        process = self._process
        assert process is not None and process.stdout is not None
        deadline = time.monotonic() + self.start_timeout
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0:
                if selector.select(left):
                    line = process.stdout.readline().decode("utf-8", "replace").strip()
                    if line:
                        return line
                    try:
                        process.wait(self.start_timeout)  # end of output: the broker is exiting
                    except subprocess.TimeoutExpired:
                        pass
                    break
        if process.poll() is None:
            return f"nothing after {self.start_timeout:.0f} s"
        return f"exited with code {process.returncode}"

    def log(self) -> str:
        """What the broker logged so far (stderr)."""
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (clean shutdown: journal committed, SOW files written), SIGKILL after ``timeout``."""
        process, self._process = self._process, None
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
        return process.returncode

    def __enter__(self) -> BrokerProcess:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
