"""Per-key folding of message streams: ``delta merge --stream`` and ``delta conflate``.

Pure: no I/O and no printing. The caller parses the messages (so it knows files and line
numbers) and hands them in as ``(tag, document)`` pairs; ``tag`` is opaque here and only comes
back in ``on_error`` so the caller can say where a bad message was.

* Records are grouped by the bytes of their SOW key (``keys.key_material`` with an empty
  domain), so keys compare as SOW keys do: JSON 1 and "1" are one record, 1 and 1.0 are not.
* ``fold`` (delta publish, spec §6): the first message of a key is stored as it is, each later
  one is merged into it with ``codec.merge``; yields the final record per key in first-seen
  order, or with ``every`` each record as soon as it changes.
* ``conflate`` (spec §7.4): the first message of a key is the state before the conflation
  interval; each later one is diffed against its predecessor and the deltas are merged (union
  of fields, last value wins). A key seen once has no update and yields nothing.

Errors: an AmpsctlError from one message (missing or array key field, a merge of mismatched
documents) goes to ``on_error(tag, exc)`` and the message is skipped; without ``on_error`` it
is raised. Whether to stop is the caller's policy (``--keep-going``), not this module's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from ampsctl.errors import AmpsctlError, InputError
from ampsctl.messages.keys import key_material, key_values
from ampsctl.messages.paths import split_paths

T = TypeVar("T")
OnError = Callable[[T, AmpsctlError], None]
_MISSING: Any = object()


def record_key_values(codec: Any, doc: Any, key_paths: Sequence[str]) -> tuple[Any, ...]:
    """The key values of one document, as ``keys.key_values`` reads them.

    JSON dicts and FIX pairs are read directly (absent and NULL stay distinct); other
    documents (XML) through ``codec.record``.
    """
    return key_values(doc if isinstance(doc, dict | list | tuple) else codec.record(doc), key_paths)


def key_function(codec: Any, key_paths: Sequence[str]) -> Callable[[Any], bytes]:
    """A function from a document to its SOW key bytes, equal to ``key_material("", record_key_values(...))``.

    Streams have millions of messages, so JSON dicts whose key fields are plain scalars skip
    the per-message path splitting of ``key_values``; anything unusual (a missing field, an
    array, another document type, an invalid path) takes the general route, so errors and
    results are exactly those of ``key_values`` and ``keys.canon``.
    """

    def general(doc: Any) -> bytes:
        return key_material("", record_key_values(codec, doc, key_paths))

    try:
        steps = split_paths(key_paths)
    except InputError:
        return general  # reported per message by key_values, as for any other bad key
    if not steps:
        return general
    if len(steps) == 1 and len(steps[0]) == 1:
        (name,), = steps

        def single(doc: Any) -> bytes:
            if type(doc) is dict:
                value = doc.get(name, _MISSING)
                if value is not _MISSING and type(value) is not dict and type(value) is not list:
                    return key_material("", (value,))
            return general(doc)

        return single

    def nested(doc: Any) -> bytes:
        if type(doc) is not dict:
            return general(doc)
        values = []
        for path in steps:
            value = doc
            for step in path:
                if type(value) is not dict:
                    return general(doc)
                value = value.get(step, _MISSING)
                if value is _MISSING:
                    return general(doc)
            if type(value) is dict or type(value) is list:
                return general(doc)
            values.append(value)
        return key_material("", values)

    return nested


def fold(
    codec: Any,
    messages: Iterable[tuple[T, Any]],
    key_paths: Sequence[str],
    *,
    every: bool = False,
    on_error: OnError[T] | None = None,
) -> Iterator[Any]:
    """Fold each key's updates in order with ``codec.merge`` (delta publish).

    Yields the final record per key (first-seen order) after the last message, or with
    ``every`` the updated record after each message. Inputs are never modified.
    """
    key_of = key_function(codec, key_paths)
    merge = codec.merge
    state: dict[bytes, Any] = {}
    for tag, doc in messages:
        try:
            key = key_of(doc)
            old = state.get(key, _MISSING)
            record = doc if old is _MISSING else merge(old, doc)
        except AmpsctlError as exc:
            _failed(on_error, tag, exc)
            continue
        state[key] = record
        if every:
            yield record
    if not every:
        yield from state.values()


def conflate(
    codec: Any,
    messages: Iterable[tuple[T, Any]],
    key_paths: Sequence[str],
    *,
    no_empties: bool = False,
    on_error: OnError[T] | None = None,
) -> Iterator[Any]:
    """The conflated delta per key (first-seen order) of a sequence of full updates."""
    key_of = key_function(codec, key_paths)
    last: dict[bytes, Any] = {}
    pending: dict[bytes, Any] = {}
    for tag, doc in messages:
        try:
            key = key_of(doc)
            if key in last:
                delta = codec.diff(last[key], doc, key_paths, no_empties=no_empties)
                if delta is not None:
                    pending[key] = delta if key not in pending else codec.merge(pending[key], delta)
            last[key] = doc
        except AmpsctlError as exc:
            _failed(on_error, tag, exc)
    yield from pending.values()


def _failed(on_error: OnError[T] | None, tag: T, exc: AmpsctlError) -> None:
    if on_error is None:
        raise exc
    on_error(tag, exc)
