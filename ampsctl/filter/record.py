"""How the filter language reads a message: the ``Record`` interface.

Message codecs (json now; xml, fix and nvfix with the message-types issue) implement
``get(field)``. Values are plain Python data: ``None`` is NULL, ``bool``/``int``/``float``/
``str`` are scalars, ``list`` is an AMPS array, ``dict`` a nested object. Empty strings and
empty arrays are returned as they are; the evaluator treats them as NULL (spec §5).
"""

from __future__ import annotations

from typing import Any, Protocol

from ampsctl.filter.ast import Field


class Record(Protocol):
    def get(self, field: Field) -> Any:
        """The value at ``field``, or None when the path does not resolve."""
        ...
