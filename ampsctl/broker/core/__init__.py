"""The broker core: sans-IO (no asyncio, socket or time imports; a test checks it).

``BrokerCore(settings, store)`` takes (connection, command, now) and returns ``Action`` values
for the transport to execute; see ``broker.py`` for the theory of operation and invariants.

Why here and not in ``ampsctl/protocol/``: the core is several modules (sessions, fan-out,
queries, writes), it drives the SOW store and the journal numbering, and ``protocol/`` is the
finished wire-format package; keeping the core next to the server that drives it keeps each
package one concept. It stays sans-IO all the same: only ``server.py``, ``connection.py``,
``durability.py`` and ``run.py`` in ``ampsctl/broker/`` touch sockets, files or the clock.
"""

from ampsctl.broker.core.actions import Action, Append, Close, Log, LogLevel, Send, SendDurable
from ampsctl.broker.core.broker import BrokerCore
from ampsctl.broker.core.settings import CoreSettings, RecordedTopics

__all__ = [
    "Action", "Append", "BrokerCore", "Close", "CoreSettings", "Log", "LogLevel", "RecordedTopics", "Send",
    "SendDurable",
]
