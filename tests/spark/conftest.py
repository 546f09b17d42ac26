"""The Spark test session: one real local SparkSession for the whole test run.

``local[2]`` (the CI machine's two cores), UTC, few shuffle partitions (the inputs are small,
and 200 empty partitions would dominate the run time), UI off. Started through
``ampsctl.pipeline.session.start`` so the tests exercise the same environment checks and
defaults as the CLI. No skip when Java is missing: ``make test`` checks for Java before
pytest starts, and a missing Java here must fail loudly, not pass quietly.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

SHUFFLE_PARTITIONS = 4


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from ampsctl.pipeline.session import SessionOptions, start, stop

    session = start(SessionOptions(master="local[2]", shuffle_partitions=SHUFFLE_PARTITIONS,
                                   app_name="ampsctl-tests", conf={"spark.driver.memory": "2g"}))
    yield session
    stop(session)
