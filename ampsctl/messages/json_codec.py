"""The JSON codec: orjson documents, filter records, delta merge and delta diff (spec/messages.md §2.1, §6, §7).

Theory of operation. A document is what orjson builds: a dict at the top (spec §2.1: the top
level must be an object), then dicts, lists and scalars. Documents are treated as immutable
values: merge and diff never modify their inputs, and their results may share unchanged
subtrees with the inputs instead of copying them (folding a million deltas must not deep-copy
a million records). Whoever wants to edit a document in place must copy it first.

* merge (delta publish, §6.3): for each key of the delta, two objects merge recursively;
  anything else (scalars, arrays, type changes, null, "") replaces the stored value. Keys of
  the base keep their order; new keys follow in the delta's order.
* diff (delta subscribe, §7.5): walk ``new`` in its own key order; a key field is copied when
  ``send_keys``; an object present on both sides is diffed recursively (D7: only the changed
  leaves of a nested object are sent); any other value is sent whole if it differs from the
  old one (arrays are leaves, R2). Equality is typed (A-D4): 1, 1.0, "1" and true all differ,
  as their text differs and SOW keys (K6/K7) treat them differently. Fields that disappeared
  from ``new`` are not expressible in a delta and are left out (§7.2 ASSUME).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson

from ampsctl.errors import InputError
from ampsctl.messages import json_numbers
from ampsctl.messages.json_numbers import FloatText, IntText, loads_keeping_text, rewritten_numbers, typed_number
from ampsctl.messages.json_record import JsonRecord
from ampsctl.messages.paths import selection, split_path

_MISSING: Any = object()
_Path = tuple[str, ...]


class JsonCodec:
    """The Codec for ``json`` (see ampsctl.messages.codec). Stateless: one instance serves all."""

    __slots__ = ()
    name = "json"

    def parse(self, raw: bytes | bytearray | memoryview | str) -> dict[str, Any]:
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _decode_error(raw, exc) from None
        if not isinstance(doc, dict):
            raise InputError(
                f"JSON message is {type(doc).__name__ if doc is not None else 'null'}, not an object",
                code="JSON",
                hint='an AMPS JSON message is one object, such as {"id": 1}',
            )
        return doc

    def serialize(self, doc: Any) -> bytes:
        try:
            return json_numbers.dumps(doc)  # numbers that kept their text (TextJsonCodec) write it
        except (orjson.JSONEncodeError, TypeError) as exc:
            if "Recursion limit" in str(exc):  # deeper than orjson writes, not deeper than it reads
                return _dumps_in_layers(doc)
            raise InputError(f"cannot write JSON message: {exc}", code="JSON") from None

    def record(self, doc: Any) -> JsonRecord:
        return JsonRecord(doc)

    def merge(self, base: Any, delta: Any) -> dict[str, Any]:
        """Delta publish: ``base`` updated by ``delta``; ``base`` None is an insert (V6)."""
        if type(base) is not dict or type(delta) is not dict:  # checked inline: called per stream message
            _need_object(delta, "delta")
            if base is None:
                return delta
            _need_object(base, "stored message")
        try:
            return _merge(base, delta)
        except RecursionError:
            return _merge_in_a_loop(base, delta)  # rare: the recursion is the fast common case

    def diff(
        self,
        old: Any,
        new: Any,
        keys: Sequence[str],
        *,
        no_empties: bool = False,
        send_keys: bool = True,
        select: Sequence[str] | None = None,
    ) -> dict[str, Any] | None:
        _need_object(new, "new message")
        key_paths = frozenset(split_path(key) for key in keys)
        selected = None if select is None else tuple(split_path(path) for path in select)
        walk = _Diff(key_paths, send_keys, selected)
        if old is not None:
            _need_object(old, "old message")
        try:
            out, changed = walk.object(old if old is not None else _MISSING, new, ())
        except RecursionError:  # rare: the recursion is the fast common case
            out, changed = walk.object_in_a_loop(old if old is not None else _MISSING, new)
        if no_empties and not changed:
            return None
        return out


# ----------------------------------------------------- number text (json_numbers)


def loads_as_written(raw: bytes | bytearray | memoryview | str, doc: Any = None) -> Any:
    """JSON text read by orjson (its checks and errors) with every number that orjson would write
    with other text (``1E5``, ``1.50``, ``-0``, an integer beyond 64 bits, which orjson reads as a
    float) held as it was written, the integer exact (``JSON_EXACT``'s reading): for documents
    nested in output (journal JSONL, ``sow query``, ``client --format json``), which
    ``dumps_exact`` writes back with that text (docs/messages.md, "Number text"). ``doc``:
    orjson's reading of ``raw`` when the caller has it. Text nested beyond the standard
    library's recursion gets room for it (``allowing_deep_nesting``)."""
    return JSON_EXACT.keeping_text(raw, orjson.loads(raw) if doc is None else doc)


def dumps_exact(value: Any) -> bytes:
    """``orjson.dumps`` (numbers that kept their text write it), or for a document with a plain
    integer beyond 64 bits (which orjson refuses) the standard library's compact form, which
    writes it exactly."""
    try:
        return json_numbers.dumps(value)
    except orjson.JSONEncodeError:
        text = allowing_deep_nesting(
            lambda doc: json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False), value)
        return text.encode("utf-8")


def allowing_deep_nesting(function: Callable[[Any], Any], argument: Any) -> Any:
    """``function(argument)`` for a standard-library read or write of JSON that orjson accepts:
    orjson reads 1024 levels of nesting, more than the standard library's recursion allows, so a
    RecursionError is retried with room for that (InputError beyond it). The limit is
    process-wide; raising it for one call is safe in the CLI and in the broker, which parses on
    its one event-loop thread (its other thread only fsyncs)."""
    try:
        return function(argument)
    except RecursionError:
        pass
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 3000)  # orjson's 1024 levels, a few frames each
    try:
        return function(argument)
    except RecursionError:
        raise InputError("JSON document nested too deeply", code="JSON", hint="nest objects and arrays less than 1000 levels deep") from None
    finally:
        sys.setrecursionlimit(limit)


def _decode_error(raw: bytes | bytearray | memoryview | str, exc: orjson.JSONDecodeError) -> InputError:
    """The InputError for text orjson refused; orjson reports bytes that are not UTF-8 as
    "str is not valid UTF-8: surrogates not allowed" at char 0, so those get their own message."""
    if not isinstance(raw, str):
        try:
            bytes(raw).decode("utf-8")
        except UnicodeDecodeError as bad:
            wide = bad.object[:2] in (b"\xff\xfe", b"\xfe\xff")  # a UTF-16 byte order mark
            return InputError(
                f"invalid JSON message: not UTF-8 text: byte 0x{bad.object[bad.start]:02x} at byte offset {bad.start}"
                + (" (the text is UTF-16)" if wide else ""),
                code="JSON",
                hint=f"JSON messages are UTF-8; convert the file (for example iconv -f {'utf-16' if wide else 'latin1'} -t utf-8)",
            )
    hint = "each message must be one complete JSON object (one per line in a stream)"
    if "surrogate" in str(exc):
        hint = r"an escape in \uD800-\uDFFF must be one half of a surrogate pair, such as \ud83d\ude00"
    elif "infinity" in str(exc):
        hint = "a JSON number must fit a double (at most about 1.8e308); write a larger one as a string"
    elif _NON_NUMBER.match(raw if isinstance(raw, str) else bytes(raw).decode(), exc.pos):  # pos counts characters
        hint = "NaN and Infinity are not JSON numbers; write null or a string instead"
    return InputError(f"invalid JSON message: {exc}", code="JSON", hint=hint)


_NON_NUMBER = re.compile(r"-?(?:nan|inf)", re.IGNORECASE)


_LAYER = 128  # levels orjson writes at a time in _dumps_in_layers, well under its 255


def _dumps_in_layers(doc: Any) -> bytes:
    """``orjson.dumps`` for a document nested deeper than orjson writes (255 levels, while it
    reads 1024): the subtrees that start every ``_LAYER`` levels are written first and put in
    as ``orjson.Fragment`` s, bottom up, in a loop rather than recursion. Same bytes as dumps."""
    frames: list[list[Any]] = [[_entries(doc), type(doc)(), 0, None]]  # entries, copy, depth, key in parent
    while True:
        frame = frames[-1]
        entries, built, depth, _ = frame
        for key, value in entries:
            if type(value) in (dict, list) and value:
                frames.append([_entries(value), type(value)(), depth + 1, key])
                break
            _put(built, key, value)
        else:
            frames.pop()
            if not frames:
                return json_numbers.dumps(built)
            done = orjson.Fragment(json_numbers.dumps(built)) if depth % _LAYER == 0 else built
            _put(frames[-1][1], frame[3], done)


def _entries(container: dict[str, Any] | list[Any]) -> Iterator[tuple[Any, Any]]:
    return iter(container.items()) if type(container) is dict else iter(enumerate(container))


def _put(container: dict[str, Any] | list[Any], key: Any, value: Any) -> None:
    if type(container) is dict:
        container[key] = value
    else:
        container.append(value)


def _need_object(doc: Any, what: str) -> None:
    if not isinstance(doc, dict):
        raise InputError(f"the {what} is not a JSON object", code="JSON", hint="delta operations take JSON objects")


def _merge(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)  # shallow: untouched subtrees are shared, never modified (module docstring)
    for key, value in delta.items():
        old = out.get(key, _MISSING)
        if type(value) is dict and type(old) is dict:
            out[key] = _merge(old, value)
        else:
            out[key] = value  # scalars, arrays (R2), type changes, null and "" replace
    return out


def _merge_in_a_loop(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """``_merge`` without recursion, for objects nested as deep as orjson reads (1024)."""
    out = dict(base)
    pending = [(out, delta)]
    while pending:
        target, changes = pending.pop()
        for key, value in changes.items():
            old = target.get(key, _MISSING)
            if type(value) is dict and type(old) is dict:
                target[key] = merged = dict(old)  # placed now: the key keeps its position
                pending.append((merged, value))
            else:
                target[key] = value
    return out


def same(a: Any, b: Any) -> bool:
    """Typed equality: like ==, except that 1, 1.0 and True differ (A-D4), and so do 0.0 and
    -0.0 (other text, other SOW keys), at any depth; a loop, not recursion, against nesting.
    A number that kept its text compares by its value and kind, not its text: 1E5 and 100000.0
    are the same float (``json_numbers.typed_number``)."""
    kind = type(a)
    if kind is not dict and kind is not list:  # the common case, called for every field of a diff
        if kind is type(b) and kind is not FloatText and kind is not IntText:
            return a == b and not (kind is float and a == 0.0 and str(a) != str(b))
        return _same_number(a, b)
    pairs = [(a, b)]
    while pairs:
        a, b = pairs.pop()
        kind = type(a)
        if kind is not type(b) or kind is FloatText or kind is IntText:
            if kind is dict or kind is list or not _same_number(a, b):
                return False
            continue
        if kind is dict:
            if a.keys() != b.keys():
                return False
            pairs.extend((value, b[key]) for key, value in a.items())
        elif kind is list:
            if len(a) != len(b):
                return False
            pairs.extend(zip(a, b, strict=True))
        elif a != b or (kind is float and a == 0.0 and str(a) != str(b)):
            return False
    return True


def _same_number(a: Any, b: Any) -> bool:
    """``same`` for two scalars of which one may be a number that kept its text."""
    left, right = typed_number(a), typed_number(b)
    if left is None and right is None:
        return False  # two plain scalars of different types
    left = left or _plain_number(a)
    right = right or _plain_number(b)
    if left is None or right is None or left[0] is not right[0] or left[1] != right[1]:
        return False
    return left[0] is not float or left[1] != 0.0 or str(left[1]) == str(right[1])  # 0.0 and -0.0 differ


def _plain_number(value: Any) -> tuple[type, Any] | None:
    kind = type(value)
    return (kind, value) if kind is int or kind is float else None


class _Diff:
    """One diff's settings; ``object`` returns (delta for this level, whether a data field changed)."""

    __slots__ = ("keys", "key_prefixes", "send_keys", "select")

    def __init__(self, keys: frozenset[_Path], send_keys: bool, select: tuple[_Path, ...] | None) -> None:
        self.keys = keys
        # Proper prefixes of key paths: objects that hold a nested key field (/order/id).
        self.key_prefixes = frozenset(path[:n] for path in keys for n in range(1, len(path)))
        self.send_keys = send_keys
        self.select = select

    def _selected(self, path: _Path) -> tuple[bool, bool]:
        return selection(path, self.select)

    def object(self, old: Any, new: dict[str, Any], prefix: _Path) -> tuple[dict[str, Any], bool]:
        out: dict[str, Any] = {}
        changed = False
        old_is_object = type(old) is dict
        for key, value in new.items():
            path = (*prefix, key)
            if path in self.keys:
                if self.send_keys:
                    out[key] = value
                continue
            whole, below = self._selected(path)
            if not below and path not in self.key_prefixes:  # an unselected object still carries its key fields
                continue
            before = old.get(key, _MISSING) if old_is_object else _MISSING
            if type(value) is dict and (
                type(before) is dict or not whole or path in self.key_prefixes
            ):
                # Recurse: both sides are objects (leaf-level diff, D7), or only part of this
                # object is selected, or it holds a key field that must be placed inside it.
                sub, sub_changed = self.object(before, value, path)
                if sub or sub_changed:
                    out[key] = sub
                changed = changed or sub_changed
            elif whole and (before is _MISSING or not same(before, value)):
                out[key] = value
                changed = True
        return out, changed

    def object_in_a_loop(self, old: Any, new: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """``object`` without recursion, for objects nested as deep as orjson reads (1024)."""
        # A frame: old object, new entries left, path, delta so far, changed, key in the parent.
        frames: list[list[Any]] = [[old, iter(new.items()), (), {}, False, None]]
        while True:
            frame = frames[-1]
            before_object, entries, prefix, out, _, _ = frame
            for key, value in entries:
                path = (*prefix, key)
                if path in self.keys:
                    if self.send_keys:
                        out[key] = value
                    continue
                whole, below = self._selected(path)
                if not below and path not in self.key_prefixes:
                    continue
                before = before_object.get(key, _MISSING) if type(before_object) is dict else _MISSING
                if type(value) is dict and (type(before) is dict or not whole or path in self.key_prefixes):
                    frames.append([before, iter(value.items()), path, {}, False, key])
                    break
                if whole and (before is _MISSING or not same(before, value)):
                    out[key] = value
                    frame[4] = True
            else:
                frames.pop()
                if not frames:
                    return out, frame[4]
                parent = frames[-1]
                if out or frame[4]:
                    parent[3][frame[5]] = out
                parent[4] = parent[4] or frame[4]


JSON = JsonCodec()


class TextJsonCodec(JsonCodec):
    """``JsonCodec`` whose documents keep each number's text where orjson would write other text.

    ``1E5``, ``1.50``, ``-0`` and numbers with more digits than a double holds come out of
    serialize as they went into parse, so a merge writes the fields a delta did not touch as they
    were published and the fields it set as the delta wrote them (docs/messages.md, "Number
    text"). Such a number is a ``json_numbers.FloatText`` or ``IntText``: its value is the one
    ``JsonCodec`` reads (an integer beyond 64 bits stays orjson's float, so SOW keys do not
    change), and diff compares values, not text. Messages without such a number (a byte screen
    decides, ``json_numbers.rewritten_numbers``) are read by orjson alone, as by ``JsonCodec``."""

    __slots__ = ()
    exact_integers = False

    def parse(self, raw: bytes | bytearray | memoryview | str) -> dict[str, Any]:
        # orjson's checks and errors: what is refused does not change
        return self.keeping_text(raw, super().parse(raw))

    def keeping_text(self, raw: bytes | bytearray | memoryview | str, doc: Any) -> Any:
        """``doc``, a reading of ``raw`` (which orjson accepted), when orjson writes every number
        of ``raw`` with the text it has there; else ``raw`` read again keeping that text (also
        when ``doc`` already keeps it: the check cannot tell, and such messages are the rare,
        slower case). InputError for text nested beyond what the standard library reads."""
        found = rewritten_numbers(raw, doc)
        if not found:
            return doc
        exact = self.exact_integers
        return allowing_deep_nesting(lambda text: loads_keeping_text(text, found, exact_integers=exact), raw)


class ExactJsonCodec(TextJsonCodec):
    """``TextJsonCodec`` that also reads integers beyond 64 bits exactly: the delta commands' codec.

    orjson reads such an integer as a float (123456789012345678901234567890 became
    1.2345678901234568e+29); here it is an exact ``IntText``, which compares exactly and is
    written as it was read. Not the broker's codec: SOW keys are generated from parsed
    values (such an integer keys as its float's text, docs/formats.md "SOW keys"), so reading
    it exactly there would change the keys of records already stored in SOW files."""

    __slots__ = ()
    exact_integers = True

    def serialize(self, doc: Any) -> bytes:
        try:
            return super().serialize(doc)
        except (InputError, orjson.JSONEncodeError):
            pass  # a plain integer beyond 64 bits, in a document that parse did not make
        try:
            return dumps_exact(doc)
        except (TypeError, ValueError) as exc:
            raise InputError(f"cannot write JSON message: {exc}", code="JSON") from None


JSON_TEXT = TextJsonCodec()
JSON_EXACT = ExactJsonCodec()
