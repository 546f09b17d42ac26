"""The AMPS value model (spec/expressions.md §4–§7): NULL, coercion, comparison, 3VL, arithmetic.

Every backend that runs a filter in Python (the reference evaluator and the compiled closures)
calls these functions, so the semantics exist exactly once.

Theory of operation -- the invariants every function here keeps:

* NULL is ``None``. An empty string, an empty array and a nested object used as a scalar are
  NULL too (§5); ``is_null`` is the one test.
* Booleans are 1/0 wherever a number is needed (§4.5); the text form of a boolean is
  ``"true"``/``"false"`` (the JSON text, and what Spark's ``cast(b AS STRING)`` gives).
* A string is a number only if the WHOLE string matches the numeric-literal grammar of §2.3,
  with an optional leading ``-`` (§4.4 [ASSUME]): ``'007'`` is 7, ``' 12'``, ``'+1'``,
  ``'12abc'``, ``'NaN'`` and ``'1,000'`` are not numbers.
* Comparisons of a convertible string with a number are numeric; a non-convertible string is
  greater than every number; two strings compare by code point, which is the byte order of
  their UTF-8 encoding (§4.4). Any comparison involving NaN is false, never NULL (§5).
* Three-valued logic uses ``True``/``False``/``None``. ``or3``/``and3`` take iterables of those.
* Array-aware operators (comparisons, LIKE, IN, BETWEEN, BEGINS/ENDS WITH) go through
  ``elements``: a scalar is a one-element sequence, an array is its elements (nested arrays
  flattened), an empty array is no elements at all, which makes the predicate NULL.
  Arithmetic, functions and every other scalar use go through ``scalar``: the first element.
* Integers stay integers while they fit in 64 bits (signed, or unsigned above LONG_MAX);
  beyond that they become floats (§6.8 [ASSUME] "promote to float").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from ampsctl.messages.json_record import flatten

Number = int | float

INT_MIN = -(2**63)
UINT_MAX = 2**64 - 1

# §2.3 numeric literal, plus the optional minus sign numbers carry in message text.
_NUMBER_RE = re.compile(r"-?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")
# Beyond this many digits ``int()`` is slow (and capped by Python); the value is a float anyway.
_MAX_INT_DIGITS = 40


def is_null(value: Any) -> bool:
    """NULL in the AMPS sense: None, the empty string or the empty array (§5)."""
    if value is None:
        return True
    if isinstance(value, (str, list)):
        return not value
    return False


def fit_int(value: int) -> Number:
    """An integer result, or its float when it leaves the signed/unsigned 64-bit range."""
    if INT_MIN <= value <= UINT_MAX:
        return value
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def parse_number(text: str) -> Number | None:
    """The number a string denotes under §4.4 [ASSUME], or None when it is not a number."""
    if not _NUMBER_RE.fullmatch(text):
        return None
    if "." in text or "e" in text or "E" in text:
        return float(text)
    sign, digits = ("-", text[1:]) if text[0] == "-" else ("", text)
    digits = digits.lstrip("0") or "0"  # zero padding ('0...07') keeps an integer an integer
    if len(digits) > _MAX_INT_DIGITS:
        return float(text)
    return fit_int(int(sign + digits))


def scalar(value: Any) -> Any:
    """The value a scalar context sees: the first element of an array, NULL for ''/[]/objects."""
    while isinstance(value, list):
        if not value:
            return None
        value = value[0]
    if isinstance(value, dict) or value == "":
        return None
    return value


def elements(value: Any) -> list[Any]:
    """The values an array-aware operator tests: [] for NULL/empty, nested arrays flattened."""
    if not isinstance(value, list):
        return [] if value is None or value == "" else [value]
    return flatten(value)


def to_number(value: Any) -> Number | None:
    """The numeric value of ``value`` (first element of an array), or None if it has none."""
    value = scalar(value)
    if value is None:
        return None
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        return parse_number(value)
    return None


def to_text(value: Any) -> str | None:
    """The text form used by LIKE, BEGINS/ENDS WITH and string functions (A8), or None for NULL.

    Integers print as digits; floats keep Python ``repr`` (``24.0`` -> ``"24.0"``, the brief's
    decision for A8); booleans print as ``true``/``false``.
    """
    value = scalar(value)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return None


def truth(value: Any) -> bool | None:
    """The 3VL truth of a value used as a condition: non-zero numbers are true, NaN is false.

    A string counts through its numeric value; a string that is not a number is unknown (None).
    """
    if value is True or value is False:
        return value
    number = to_number(value)
    if number is None:
        return None
    if isinstance(number, float) and math.isnan(number):
        return False
    return number != 0


def is_match(value: Any) -> bool:
    """Whether a filter's top-level value selects the message (§4.6): true or non-zero only."""
    return truth(value) is True


def not3(value: bool | None) -> bool | None:
    return None if value is None else not value


def and3(values: Iterable[bool | None]) -> bool | None:
    """SQL AND over already-computed truth values: False wins, then NULL, then True."""
    unknown = False
    for value in values:
        if value is False:
            return False
        if value is None:
            unknown = True
    return None if unknown else True


def or3(values: Iterable[bool | None]) -> bool | None:
    """SQL OR over already-computed truth values: True wins, then NULL, then False."""
    unknown = False
    for value in values:
        if value is True:
            return True
        if value is None:
            unknown = True
    return None if unknown else False


def _as_comparable(value: Any) -> Any:
    """A scalar element ready for comparison: booleans become 1/0, objects become NULL."""
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, (dict, list)) or value == "":
        return None
    return value


def _order(op: str, sign: int) -> bool:
    if op == "=":
        return sign == 0
    if op == "!=":
        return sign != 0
    if op == "<":
        return sign < 0
    if op == "<=":
        return sign <= 0
    if op == ">":
        return sign > 0
    if op == ">=":
        return sign >= 0
    raise ValueError(f"unknown comparison operator {op!r}")


def compare_scalars(op: str, left: Any, right: Any) -> bool | None:
    """One comparison between two scalar elements (§4.3–§4.5, §5): True, False or NULL."""
    a = _as_comparable(left)
    b = _as_comparable(right)
    if a is None or b is None:
        return None
    a_is_text = isinstance(a, str)
    b_is_text = isinstance(b, str)
    if a_is_text and b_is_text:
        return _order(op, (a > b) - (a < b))
    if a_is_text:
        converted = parse_number(a)
        if converted is None:
            return _order(op, 1)  # a non-numeric string is greater than every number
        a = converted
    elif b_is_text:
        converted = parse_number(b)
        if converted is None:
            return _order(op, -1)
        b = converted
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return None
    if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return False  # §5 [ASSUME]: every comparison with NaN is false, `!=` included
    return _order(op, (a > b) - (a < b))


def compare(op: str, left: Any, right: Any) -> bool | None:
    """An array-aware comparison: true if any pair of elements satisfies ``op`` (§7).

    ``/arr != v`` is therefore existential (some element differs), not ``NOT (/arr = v)``.
    Two large arrays are decided from a summary of each side (``_Side``) instead of pair by
    pair: 20,000 elements a side took minutes.
    """
    lefts, rights = elements(left), elements(right)
    if not lefts or not rights:
        return None
    if len(lefts) * len(rights) > _PAIRWISE:
        found = _compare_sides(op, _Side.of(lefts), _Side.of(rights))
        if found is not _UNDECIDED:
            return found  # type: ignore[return-value]
    return or3(compare_scalars(op, a, b) for a in lefts for b in rights)


_PAIRWISE = 4096  # pairs compared one by one; above this, both sides are summarised
_UNDECIDED = object()


def member(value: Any, options: list[Any]) -> bool | None:
    """``value IN (options...)``: the OR of ``compare("=", value, option)`` (§6.4), with a large
    array summarised once rather than once per option."""
    lefts = elements(value)
    if lefts and len(lefts) * len(options) > _PAIRWISE and (side := _Side.of(lefts)) is not None:
        found = [_equal_option(side, option) for option in options]
        if _UNDECIDED not in found:
            return or3(found)  # type: ignore[arg-type]
    return or3(compare("=", value, option) for option in options)


def _equal_option(side: _Side, option: Any) -> object:
    rights = elements(option)
    return _compare_sides("=", side, _Side.of(rights)) if rights else None


def within(value: Any, low: Any, high: Any) -> bool | None:
    """``value BETWEEN low AND high``: some element e with ``e >= low`` and ``e <= high`` (each
    array-aware), with large array bounds summarised once rather than once per element."""
    items, lows, highs = elements(value), elements(low), elements(high)
    if items and lows and highs and len(items) * (len(lows) + len(highs)) > _PAIRWISE:
        low_side, high_side = _Side.of(lows), _Side.of(highs)
        if low_side is not None and high_side is not None:
            found = [_between_sides(item, low_side, high_side) for item in items]
            if _UNDECIDED not in found:
                return or3(found)  # type: ignore[arg-type]
    return any_element(value, lambda e: and3((compare(">=", e, low), compare("<=", e, high))))


def _between_sides(item: Any, low: _Side, high: _Side) -> object:
    side = _Side.of([item])
    above, below = _compare_sides(">=", side, low), _compare_sides("<=", side, high)
    return _UNDECIDED if _UNDECIDED in (above, below) else and3((above, below))  # type: ignore[arg-type]


class _Values:
    """A set of values of one total order (numbers, or strings) with its bounds."""

    __slots__ = ("items", "low", "high")

    def __init__(self, items: set[Any]) -> None:
        self.items = items
        self.low, self.high = (min(items), max(items)) if items else (None, None)


class _Side:
    """One side's elements sorted into what ``compare_scalars`` tells apart: numbers (booleans
    as 1/0; NaN set aside, it compares false), strings, the numbers of the numeric strings,
    whether a non-numeric string, a number of any kind (NaN too) or a NULL element is there."""

    __slots__ = ("numbers", "texts", "text_numbers", "plain_text", "any_number", "null")

    @classmethod
    def of(cls, items: list[Any]) -> _Side | None:
        numbers: set[Number] = set()
        texts: set[str] = set()
        text_numbers: set[Number] = set()
        side = cls()
        side.plain_text = side.any_number = side.null = False
        for item in items:
            value = _as_comparable(item)
            if value is None:
                side.null = True
            elif type(value) is str:
                texts.add(value)
                number = parse_number(value)
                if number is None:
                    side.plain_text = True
                elif number == number:
                    text_numbers.add(number)
            elif isinstance(value, (int, float)):
                side.any_number = True
                if value == value:
                    numbers.add(value)
            else:
                return None  # a kind compare_scalars has no rule for: pair by pair
        side.numbers, side.texts, side.text_numbers = _Values(numbers), _Values(texts), _Values(text_numbers)
        return side


def _exists(op: str, xs: _Values, ys: _Values) -> bool:
    """Whether some x in xs and y in ys satisfy ``x op y`` (one total order: numbers or strings)."""
    if not xs.items or not ys.items:
        return False
    if op == "=":
        return not xs.items.isdisjoint(ys.items)
    if op == "!=":
        return len(xs.items) > 1 or len(ys.items) > 1 or xs.low != ys.low
    if op == "<":
        return xs.low < ys.high
    if op == "<=":
        return xs.low <= ys.high
    if op == ">":
        return xs.high > ys.low
    return xs.high >= ys.low


def _compare_sides(op: str, left: _Side | None, right: _Side | None) -> object:
    """``or3`` over every pair, from the two summaries (``_UNDECIDED`` when one is missing)."""
    if left is None or right is None:
        return _UNDECIDED
    if (_exists(op, left.numbers, right.numbers) or _exists(op, left.texts, right.texts)
            or _exists(op, left.text_numbers, right.numbers) or _exists(op, left.numbers, right.text_numbers)
            or (left.plain_text and right.any_number and _order(op, 1))
            or (left.any_number and right.plain_text and _order(op, -1))):
        return True
    return None if left.null or right.null else False


def any_element(value: Any, test: Any) -> bool | None:
    """3VL OR of ``test(element)`` over the elements of ``value``; NULL when there are none."""
    items = elements(value)
    return or3(test(element) for element in items) if items else None


def _trunc_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def arithmetic(op: str, left: Any, right: Any) -> Number | None:
    """``left op right`` on the numeric values of the first elements (§6.8).

    NULL or a non-numeric string on either side gives NULL; int/int stays integral with
    division truncating toward zero (A5); ``%`` keeps the sign of the left operand; a zero
    divisor gives NULL (A6).
    """
    a = to_number(left)
    if a is None:
        return None
    b = to_number(right)
    if b is None:
        return None
    both_int = isinstance(a, int) and isinstance(b, int)
    if op == "+":
        return fit_int(a + b) if both_int else float(a) + float(b)
    if op == "-":
        return fit_int(a - b) if both_int else float(a) - float(b)
    if op == "*":
        return fit_int(a * b) if both_int else float(a) * float(b)
    if op in ("/", "%"):
        if b == 0:
            return None
        if both_int:
            quotient = _trunc_div(a, b)  # type: ignore[arg-type]
            return fit_int(quotient) if op == "/" else fit_int(a - b * quotient)
        if op == "/":
            return float(a) / float(b)
        try:
            return math.fmod(float(a), float(b))
        except ValueError:  # fmod(inf, x) is a domain error in Python, NaN in C
            return math.nan
    raise ValueError(f"unknown arithmetic operator {op!r}")


def negate(value: Any) -> Number | None:
    """Unary minus on the numeric value of the first element; NULL stays NULL."""
    number = to_number(value)
    if number is None:
        return None
    return fit_int(-number) if isinstance(number, int) else -number
