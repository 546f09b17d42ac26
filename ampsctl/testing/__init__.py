"""pytest support for teams testing their own AMPS client code against ampsctl's broker.

Installing ampsctl registers the plugin ``ampsctl.testing.plugin`` (entry point ``pytest11``),
which provides the ``amps_broker`` fixture; ``BrokerProcess`` is the same thing without pytest.
"""

from ampsctl.testing.process import BrokerProcess, BrokerStartError

__all__ = ["BrokerProcess", "BrokerStartError"]
