"""Record selection for ``journal dump``: a topic regex and an AMPS filter on the payload.

The filter is THE filter language (``ampsctl.filter``: parse, then the compiled predicate)
applied to the message through its type's codec (``ampsctl.messages``), so a journal dump
selects exactly what a subscription with that filter would receive. Only publish and
delta_publish records carry a message to test; sow_delete and expire records never match a
filter. A message that cannot be parsed (a type ampsctl has no codec for, such as bflat, or
an invalid message) does not match and is counted in ``untested`` so the caller can say so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from ampsctl.errors import AmpsctlError
from ampsctl.journal.record import Command, JournalRecord

_MESSAGES = (Command.PUBLISH, Command.DELTA_PUBLISH)


def topic_matcher(pattern: str) -> Callable[[str], bool]:
    """An unanchored PCRE-like search on the topic name, as AMPS topic regexes are."""
    from ampsctl.filter.regexes import compile_pattern, search_compiled

    compiled = compile_pattern(pattern)
    return lambda topic: search_compiled(compiled, topic)


class PayloadFilter:
    """``filter(record) -> bool``: whether a record's message matches an AMPS filter."""

    def __init__(self, expression: str) -> None:
        from ampsctl.filter.compiler import compile_filter
        from ampsctl.filter.parser import parse

        self.expression = expression
        self._predicate = compile_filter(parse(expression))
        self._codecs: dict[str, Any] = {}
        self.untested: Counter[str] = Counter()  # why -> how many records could not be tested

    def __call__(self, record: JournalRecord) -> bool:
        if record.command not in _MESSAGES:
            return False
        codec = self._codec(record.message_type)
        if codec is None:
            self.untested[f"message type '{record.message_type}' has no codec"] += 1
            return False
        try:
            doc = codec.parse(record.payload)
        except AmpsctlError:
            self.untested[f"invalid {codec.name} message"] += 1
            return False
        return bool(self._predicate(codec.record(doc)))

    def _codec(self, message_type: str) -> Any:
        if message_type not in self._codecs:
            from ampsctl.messages import types

            try:
                self._codecs[message_type] = types.codec(message_type)
            except AmpsctlError:
                self._codecs[message_type] = None
        return self._codecs[message_type]
