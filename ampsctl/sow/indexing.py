"""Index values: hash-index tokens and memo-index columns, derived from what the filter sees.

Theory of operation. An index never decides whether a record matches a filter; it only
*narrows* the records the filter (``filter.compiler.compile_filter``, the one semantics) is
then run on. So every index here keeps one invariant:

    a record the filter accepts is always among the candidates the index yields.

Index values are computed from ``record.get(field)``, the very value the filter reads, so the
index and the filter can never disagree about what a message holds.

Hash indexes (``HashIndex``, and the implicit one on the ``Key`` fields) serve exact matches,
``/f = literal`` and ``/f IN (...)``. AMPS compares hash-indexed values as text (seed 003),
but our filter compares ``'01' = 1`` numerically, so a token must put together every pair of
values the filter calls equal (``values.compare_scalars``):

* a value that has a number (int, float, boolean as 1/0, numeric text) -> ``n`` + the number
  in normal form (``1``, ``1.0``, ``"1"``, ``"01"``, ``true`` all give ``n1``);
* other text -> ``s`` + the text;
* NULL (absent, null, ``""``, ``[]``), an object, NaN -> no token: ``=`` is never true;
* a non-empty array -> ``ANY``: ``=`` is true if any element is equal, so it is a candidate
  for every lookup.

A number read keeping its JSON text (``json_numbers.FloatText``/``IntText``, what a delta
merge stores) gives the token and columns of its value, as the same message parsed plainly.
A literal's tokens are found the same way. Candidates whose token matches may still fail
(``'01' = '1'`` compares as text), which the filter settles. A composite index joins its
fields' tokens, each length-prefixed so no two tuples join to the same bytes.

Memo indexes (``Index``) keep each value in two typed columns for SQL pre-filtering in the SOW
file (``sqlfilter.py``): ``num`` (its number, when it has one) and ``txt`` (its text, when it
is text). A value those cannot represent exactly (an array, an object, NaN, an integer beyond
2**53 where SQLite's integer/real comparison stops being exact, text SQLite cannot store)
marks the record ``complex``: complex records are always candidates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import product
from typing import Any

from ampsctl.filter.ast import Field, Step
from ampsctl.filter.values import parse_number
from ampsctl.messages.json_numbers import FloatText, IntText
from ampsctl.messages.paths import split_path

ANY = b"*"  # a token that matches every lookup (an array value)
MAX_LOOKUP_TOKENS = 1024  # IN lists whose product is larger are not worth an index lookup
EXACT_FLOAT_INT = 2**53


def field_of(path: str) -> Field:
    """The filter Field of a plain AMPS path ("/a/b", "/55", "/Order/@id")."""
    return Field(tuple(Step(step) for step in split_path(path)))


def number_token(number: int | float) -> bytes | None:
    if isinstance(number, float):
        if math.isnan(number):
            return None
        if number.is_integer():
            return b"n" + str(int(number)).encode()
        return b"n" + repr(number).encode()
    return b"n" + str(number).encode()


def value_token(value: Any) -> bytes | None:
    """The token of one field value; None when ``=`` can never be true for it."""
    if value is None or value == "":
        return None
    kind = type(value)
    if kind is str:
        number = parse_number(value)
        if number is not None:
            return number_token(number)
        return b"s" + value.encode("utf-8", "surrogateescape")
    if kind is bool:
        return b"n1" if value else b"n0"
    if kind is int or kind is float:
        return number_token(value)
    if kind is FloatText or kind is IntText:  # a number that kept its JSON text: the value the filter reads
        return number_token(_plain(value))
    if kind is list:
        return ANY if value else None
    if kind is dict:
        return None
    return ANY  # anything unforeseen: a candidate for every lookup, never a lost match


def join_tokens(tokens: Sequence[bytes | None]) -> bytes | None:
    """One composite token: None if any part is None, ANY if any part is ANY."""
    if len(tokens) == 1:
        return tokens[0]
    if any(token is None for token in tokens):
        return None
    if any(token == ANY for token in tokens):
        return ANY
    return b"".join(len(token).to_bytes(4, "big") + token for token in tokens)  # type: ignore[union-attr]


def literal_tokens(options: Sequence[Sequence[Any]]) -> list[bytes] | None:
    """The tokens to look up for one literal (or IN list) per index field; None: too many."""
    per_field: list[list[bytes]] = []
    for literals in options:
        tokens = {token for token in map(value_token, literals) if token is not None and token != ANY}
        per_field.append(sorted(tokens))
    if math.prod(len(tokens) for tokens in per_field) > MAX_LOOKUP_TOKENS:
        return None
    found = [join_tokens(combination) for combination in product(*per_field)]
    return [token for token in found if token is not None]


def memo_value(value: Any) -> tuple[int | float | None, str | None, bool]:
    """``(num, txt, complex)`` columns of one memo-indexed value (see the module docstring)."""
    if value is None or value == "":
        return None, None, False
    kind = type(value)
    if kind is str:
        if not _storable(value):
            return None, None, True
        number = parse_number(value)
        if number is None:
            return None, value, False
        if not _exact(number):
            return None, None, True
        return number, value, False
    if kind is bool:
        return (1 if value else 0), None, False
    if kind is FloatText or kind is IntText:  # its value, as a plain number for SQLite
        value = _plain(value)
        kind = type(value)
    if kind is int or kind is float:
        return (value, None, False) if _exact(value) else (None, None, True)
    if kind is list and not value:
        return None, None, False
    return None, None, True  # arrays, objects, anything else


def _plain(number: FloatText | IntText) -> int | float:
    """The plain number a text-keeping one stands for (``json_numbers``): the SOW file stores
    the same index values whether a merge kept a number's text or a parse did not."""
    return float(number) if isinstance(number, float) else int(number)


def _exact(number: int | float) -> bool:
    if isinstance(number, float):
        return not math.isnan(number)
    return -EXACT_FLOAT_INT <= number <= EXACT_FLOAT_INT


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from undecodable FIX bytes
        return False
    return True


class Indexer:
    """The index layout of one topic: hash index 0 is the Key fields (when there are any)."""

    __slots__ = ("hash_paths", "hash_fields", "memo_paths", "memo_fields")

    def __init__(self, key_fields: Sequence[str], hash_indexes: Iterable[Sequence[str]], indexes: Sequence[str]) -> None:
        layouts: list[tuple[str, ...]] = []
        for layout in ([tuple(key_fields)] if key_fields else []) + [tuple(index) for index in hash_indexes]:
            if layout and layout not in layouts:  # the same field set twice is one index
                layouts.append(layout)
        self.hash_paths: tuple[tuple[str, ...], ...] = tuple(layouts)
        self.hash_fields = tuple(tuple(field_of(path) for path in layout) for layout in layouts)
        memo = tuple(dict.fromkeys(path for path in indexes if path))
        self.memo_paths: tuple[str, ...] = memo
        self.memo_fields = tuple(field_of(path) for path in memo)

    def hash_tokens(self, record: Any) -> tuple[bytes | None, ...]:
        """One token per hash index (None: the record cannot match an exact lookup on it)."""
        get = record.get
        return tuple(join_tokens([value_token(get(field)) for field in fields]) for fields in self.hash_fields)

    def memo_columns(self, record: Any) -> tuple[list[int | float | str | None], bool]:
        """The flat ``[num0, txt0, num1, txt1, ...]`` memo columns and the complex flag."""
        columns: list[int | float | str | None] = []
        complex_ = False
        for field in self.memo_fields:
            number, text, odd = memo_value(record.get(field))
            columns += (number, text)
            complex_ = complex_ or odd
        return columns, complex_
