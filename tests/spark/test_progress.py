"""Spark stage progress: bars on a terminal while a job runs, nothing when not enabled."""

from __future__ import annotations

import io
import time

from rich.console import Console

from ampsctl.pipeline.progress import spark_progress


# A job long enough for a few polls. A lambda, not a function of this module: cloudpickle sends
# lambdas by value, and the Python workers cannot import test modules.
_slow = lambda rows: (time.sleep(0.4), rows)[1]  # noqa: E731


def test_progress_shows_stages_on_a_terminal(spark) -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    with spark_progress(spark, enabled=True, console=console):
        assert spark.sparkContext.parallelize(range(8), 4).mapPartitions(_slow).count() == 8
    text = screen.getvalue()
    assert "stage " in text and "/4" in text


def test_progress_is_quiet_when_disabled(spark, capsys) -> None:
    with spark_progress(spark, enabled=False):
        spark.sparkContext.parallelize(range(4), 2).mapPartitions(_slow).count()
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
