"""Select lists (``select=[...]``, §8.2): which fields of a JSON message a subscriber receives.

``CommandOptions.select`` holds entries normalised to ``+/path`` or ``-/path`` (``+/`` and
``-/`` name the whole message). The codecs' ``diff(select=...)`` takes inclusions only, so this
module gives the signed list its meaning and hands the codec plain documents:

* entries apply left to right (§8.2 [INF]);
* the starting point is *nothing* when the first entry includes and *everything* when it
  excludes: ``[/a,/b]`` sends only ``a`` and ``b``, ``[-/secret]`` sends all but ``secret``,
  and ``[-/,+/a]`` sends only ``a`` (the blog's spelling). This is the reading under which
  every example in the docs means what its text says; it is written down in docs/broker.md;
* a path that is absent from the message is ignored; nested objects are walked, arrays are
  leaves (as in the delta rules, spec/messages.md §7.2).

Documents are values (messages/codec.py): nothing here modifies its input.
"""

from __future__ import annotations

from typing import Any

from ampsctl.messages.paths import split_path

_WHOLE: tuple[str, ...] = ()


class SelectList:
    """A parsed signed select list; ``apply(doc)`` returns the reduced document."""

    __slots__ = ("entries", "start_full")

    def __init__(self, entries: tuple[str, ...]) -> None:
        parsed: list[tuple[bool, tuple[str, ...]]] = []
        for entry in entries:
            include, path = entry[0] == "+", entry[1:].strip()
            parsed.append((include, _WHOLE if path == "/" else split_path(path)))
        self.entries = tuple(parsed)
        self.start_full = bool(parsed) and not parsed[0][0]

    def apply(self, doc: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = dict(doc) if self.start_full else {}
        for include, path in self.entries:
            if path == _WHOLE:
                out = dict(doc) if include else {}
            elif include:
                out = _with(out, doc, path)
            else:
                out = _without(out, path)
        return out


def _with(out: dict[str, Any], doc: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """``out`` plus the value at ``path`` in ``doc`` (parents created, siblings kept)."""
    head, rest = path[0], path[1:]
    if head not in doc:
        return out
    value = doc[head]
    result = dict(out)
    if not rest:
        result[head] = value
    elif isinstance(value, dict):
        current = out.get(head)
        result[head] = _with(current if isinstance(current, dict) else {}, value, rest)
        if not result[head]:
            del result[head]  # nothing below was present: do not invent an empty object
    return result


def _without(out: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    head, rest = path[0], path[1:]
    if head not in out:
        return out
    result = dict(out)
    if not rest:
        del result[head]
    elif isinstance(out[head], dict):
        result[head] = _without(out[head], rest)
    return result
