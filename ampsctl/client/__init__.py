"""A small asyncio client for AMPS brokers (ampsctl's own, or a real one): see ``client.py``.

Importing this package is cheap; it opens nothing until ``Client.connect``.
"""

from ampsctl.client.client import Client, ClientSubscription, SowResult
from ampsctl.client.errors import BadUri, CommandFailed, Disconnected
from ampsctl.client.uri import AmpsUri, parse_uri

__all__ = ["AmpsUri", "BadUri", "Client", "ClientSubscription", "CommandFailed", "Disconnected", "SowResult", "parse_uri"]
