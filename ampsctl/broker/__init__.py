"""The local AMPS broker (issue 7): a sans-IO core and the asyncio server that drives it.

* ``ampsctl.broker.core``: ``BrokerCore`` takes (connection, command, now) and returns actions
  (send these bytes, append this journal record, close that connection). It never imports
  asyncio, socket or time; tests/broker/test_core_is_sans_io.py checks it.
* ``settings``: what a config (Transports, TransactionLog, SOW) asks of the broker.
* ``durability``: the journal writer, group commit, persisted acks and SOW checkpoints.
* ``connection`` / ``server``: sockets, framing, bounded outbound buffers, timers, shutdown.
* ``run``: start-up (recovery, listeners, the ``listening ...`` lines) for ``ampsctl broker run``.

This package's ``__init__`` imports nothing: ``ampsctl --help`` must not load the broker.
See docs/broker.md for what the broker supports and the decisions taken.
"""
