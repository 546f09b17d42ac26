"""Spark job and stage progress on a terminal (rich), nothing when output is piped.

Spark reports progress through the driver's ``statusTracker``; a daemon thread polls it a few
times a second while a job runs and shows one bar per active stage (tasks done / tasks).
Spark's own console progress bar is off in every ampsctl session (``session.py``) so the two
never fight over the terminal. Polling, not a listener: PySpark has no Python-side listener
API, and a few calls per second cost nothing next to a job.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession
    from rich.console import Console

POLL_SECONDS = 0.25


@contextmanager
def spark_progress(spark: SparkSession, *, enabled: bool | None = None, console: Console | None = None) -> Iterator[None]:
    """Show stage progress while the body runs; ``enabled`` defaults to "stderr is a terminal"."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()
    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console or Console(stderr=True), transient=True, refresh_per_second=8) as progress:
        tasks: dict[int, int] = {}  # stage id -> rich task id

        def poll() -> None:
            while not stop.wait(POLL_SECONDS):
                try:
                    active = set(tracker.getActiveStageIds())
                    for stage_id in active:
                        info = tracker.getStageInfo(stage_id)
                        if info is None:
                            continue
                        label = f"stage {stage_id}: {info.name.split(' at ')[0]}"
                        if stage_id not in tasks:
                            tasks[stage_id] = progress.add_task(label, total=info.numTasks)
                        progress.update(tasks[stage_id], completed=info.numCompletedTasks, total=info.numTasks)
                    for stage_id in [s for s in tasks if s not in active]:
                        progress.remove_task(tasks.pop(stage_id))
                except Exception:  # the context is stopping: progress is best effort, never an error
                    return

        thread = threading.Thread(target=poll, name="ampsctl-spark-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=2)
