"""Per-key folding of message streams: ``delta merge --stream`` and ``delta conflate``.

Pure: no I/O and no printing. The caller parses the messages (so it knows files and line
numbers) and hands them in as ``(tag, document)`` pairs; ``tag`` is opaque here and only comes
back in ``on_error`` so the caller can say where a bad message was.

* Records are grouped by their SOW key (``keys.key_material`` with an empty domain, compared
  through the cheaper ``keys.canon_id``), so keys compare as SOW keys do: JSON 1 and "1" are
  one record, 1 and 1.0 are not.
* ``fold`` (delta publish, spec §6): the first message of a key is stored as it is, each later
  one is merged into it with ``codec.merge``; yields the final record per key in first-seen
  order, or with ``every`` each record as soon as it changes. ``fold_into`` is the same fold
  over a caller's state, for folding one stream in parts.
* ``conflate`` (spec §7.4): the first message of a key is the state before the conflation
  interval; each later one is diffed against its predecessor and the deltas are merged (union
  of fields, last value wins). A key seen once has no update and yields nothing.

Errors: an AmpsctlError from one message (missing or array key field, a merge of mismatched
documents) goes to ``on_error(tag, exc)`` and the message is skipped; without ``on_error`` it
is raised. Whether to stop is the caller's policy (``--keep-going``), not this module's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from ampsctl.errors import AmpsctlError, InputError
from ampsctl.messages.fix import FixDocument
from ampsctl.messages.keys import canon_id, key_values
from ampsctl.messages.paths import split_paths

T = TypeVar("T")
OnError = Callable[[T, AmpsctlError], None]
_MISSING: Any = object()
_SCALARS = frozenset({str, int, float, bool, type(None)})  # exact JSON scalar types: the fast path's values


def record_key_values(codec: Any, doc: Any, key_paths: Sequence[str]) -> tuple[Any, ...]:
    """The key values of one document, as ``keys.key_values`` reads them.

    JSON dicts and FIX pairs are read directly (absent and NULL stay distinct); other
    documents (XML) through ``codec.record``. A FIX document gives its pairs: through its
    record an empty value (``55=``, a present NULL) would read as a missing key field.
    """
    if isinstance(doc, FixDocument):
        doc = doc.fields
    return key_values(doc if isinstance(doc, dict | list | tuple) else codec.record(doc), key_paths)


def key_function(codec: Any, key_paths: Sequence[str]) -> Callable[[Any], Hashable]:
    """A function from a document to the identity of its record in a stream.

    Two documents have equal identities exactly when their SOW keys are equal
    (``key_material("", record_key_values(...))``): the identity is ``keys.canon_id`` of the
    key value, or the tuple of them for a composite key, which is cheaper than the key bytes.
    Streams have millions of messages, so JSON dicts whose key fields are plain scalars skip
    the per-message path splitting of ``key_values``; anything unusual (a missing field, an
    array, another document type, an invalid path) takes the general route, so errors and
    results are exactly those of ``key_values`` and ``keys.canon``.
    """
    composite = len(key_paths) != 1

    def general(doc: Any) -> Hashable:
        values = record_key_values(codec, doc, key_paths)
        return tuple(map(canon_id, values)) if composite else canon_id(values[0])

    try:
        steps = split_paths(key_paths)
    except InputError:
        return general  # reported per message by key_values, as for any other bad key
    if not steps:
        return general
    if len(steps) == 1 and len(steps[0]) == 1:
        (name,), = steps

        def single(doc: Any) -> Hashable:
            if type(doc) is dict:
                value = doc.get(name)
                if type(value) in _SCALARS and (value is not None or name in doc):
                    return canon_id(value)
            return general(doc)

        return single

    def nested(doc: Any) -> Hashable:
        if type(doc) is not dict:
            return general(doc)
        values = []
        for path in steps:
            value = doc
            for step in path:
                if type(value) is not dict:
                    return general(doc)
                value = value.get(step, _MISSING)
            if type(value) not in _SCALARS:
                return general(doc)
            values.append(value)
        # canon only once every field was found: a missing field is reported before a bad value
        return tuple(map(canon_id, values)) if composite else canon_id(values[0])

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
    state: dict[Hashable, Any] = {}
    yield from _folding(state, codec, messages, key_paths, every, on_error, None)
    if not every:
        yield from state.values()


def fold_into(
    state: dict[Hashable, Any],
    codec: Any,
    messages: Iterable[tuple[T, Any]],
    key_paths: Sequence[str],
    *,
    on_error: OnError[T] | None = None,
    tags: dict[Hashable, list[T]] | None = None,
) -> dict[Hashable, Any]:
    """``fold`` in parts: fold ``messages`` into ``state`` and return it.

    ``state`` maps record identities (``key_function``) to records in first-seen order; its
    records are replaced, never modified. With ``tags``, each folded message's tag is also
    appended to ``tags[identity]``, for a caller that folds one stream in several parts and
    must tell which messages made which record.
    """
    for _ in _folding(state, codec, messages, key_paths, False, on_error, tags):
        pass
    return state


def _folding(
    state: dict[Hashable, Any],
    codec: Any,
    messages: Iterable[tuple[T, Any]],
    key_paths: Sequence[str],
    every: bool,
    on_error: OnError[T] | None,
    tags: dict[Hashable, list[T]] | None,
) -> Iterator[Any]:
    """The one fold loop; yields the updated record after each message only with ``every``."""
    key_of = key_function(codec, key_paths)
    merge = codec.merge
    for tag, doc in messages:
        try:
            key = key_of(doc)
            old = state.get(key, _MISSING)
            record = doc if old is _MISSING else merge(old, doc)
        except AmpsctlError as exc:
            _failed(on_error, tag, exc)
            continue
        state[key] = record
        if tags is not None:
            tagged = tags.get(key)
            if tagged is None:
                tags[key] = [tag]
            else:
                tagged.append(tag)
        if every:
            yield record


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
    last: dict[Hashable, Any] = {}
    pending: dict[Hashable, Any] = {}
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
