"""The pytest plugin (entry point ``pytest11``): the ``amps_broker`` fixture.

    @pytest.mark.amps_config("deploy/amps.xml")
    def test_orders_flow(amps_broker):          # amps_broker == "tcp://127.0.0.1:PORT/amps/json"
        my_app.run(amps_broker)

Which config the broker runs, first match wins:

1. indirect parametrisation: ``@pytest.mark.parametrize("amps_broker", ["a.xml"], indirect=True)``;
2. the marker ``@pytest.mark.amps_config(PATH)`` on the test, its class or module;
3. the ini option ``amps_config`` (relative to the rootdir);
4. ampsctl's built-in config: a journal recording every json topic, no SOW topics.

Each test gets a fresh broker on a free port of 127.0.0.1, running in the test's ``tmp_path``
(journal and SOW files included) and stopped cleanly afterwards. A broker that cannot start
fails the test with its log. This module imports nothing heavy: pytest loads it in every
project where ampsctl is installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

INI_OPTION = "amps_config"
MARKER = "amps_config"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(INI_OPTION, "AMPS config for the amps_broker fixture (relative to the rootdir)", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(path): the AMPS config the amps_broker fixture runs")


def _config_path(request: pytest.FixtureRequest) -> Path:
    param = getattr(request, "param", None)
    if param is not None:
        return Path(param)
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        if len(marker.args) != 1:
            raise pytest.UsageError(f"@pytest.mark.{MARKER} takes one argument, the config path")
        return Path(marker.args[0])
    configured = request.config.getini(INI_OPTION)
    if configured:
        return request.config.rootpath / configured
    return Path(str(resources.files("ampsctl.data") / "broker-default.xml"))


@pytest.fixture
def amps_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A running ampsctl broker for this test; the value is its URI."""
    from ampsctl.testing.process import BrokerProcess, BrokerStartError

    broker = BrokerProcess(_config_path(request), tmp_path / "amps-broker")
    problem = None
    try:
        uri = broker.start()
    except BrokerStartError as exc:
        problem = exc.message
    if problem is not None:
        pytest.fail(f"amps_broker: {problem}", pytrace=False)
    try:
        yield uri
    finally:
        broker.stop()
