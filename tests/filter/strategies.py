"""Hypothesis strategies for filter ASTs, shared by the parser, evaluator and compiler tests.

``exprs()`` generates every node kind in the parser's canonical form (what ``parse`` can
return), so ``parse(to_text(e)) == e`` is expected to hold for each example:

- numbers are never negative inside a Literal; a negative number is ``Negate(Literal(n))``;
- And/Or have two or more operands (an inner And/Or is an explicitly parenthesised group);
- function names come from the catalog, with an argument count the catalog accepts;
- identifiers include plain paths (unicode letters, ``-``, ``.``, digits, ``@attr``,
  subscripts), bracketed names with spaces and punctuation, and view qualifiers;
- strings include quotes, backslashes, escapes-lookalikes, control characters and unicode.

Differential tests that need fields resolving in a generated record pass their own
``field_strategy`` (e.g. ``st.sampled_from([...])`` of ``Field`` nodes).
"""

from __future__ import annotations

import math

import regex
from hypothesis import strategies as st

from ampsctl.filter.ast import (
    COMPARISON_OPS, And, Arithmetic, Between, Call, Comparison, Field, In, IsNull, Like, Literal, Negate, Not, Or,
    Step, StringMatch,
)
from ampsctl.filter.catalog import FUNCTIONS

_FIRST = "abcxyzABCXYZ019_éßЖ中"
_REST = _FIRST + ".-"

# Step names that fit the plain /name form: a step-start character, then name characters.
step_names = st.builds(
    lambda at, first, rest: at + first + rest,
    st.sampled_from(["", "", "", "@"]),
    st.sampled_from(_FIRST),
    st.text(_REST, max_size=6),
)

# Anything but "]" (which would close the bracket); spaces and quotes welcome.
bracket_names = (
    st.text(st.characters(exclude_characters="]", exclude_categories=("Cs",)), min_size=1, max_size=12)
    | st.sampled_from(["Not Xpath Name", "a b", " ", "it's", 'say "x"', "a/b", "@x", "a[0", "Fits&Starts", "tab\there"])
)
qualifier_parts = bracket_names.filter(lambda part: not part.startswith("/"))
indexes = st.none() | st.integers(min_value=0, max_value=40)


@st.composite
def fields(draw: st.DrawFn) -> Field:
    qualifier = tuple(draw(st.lists(qualifier_parts, max_size=2))) if draw(st.integers(0, 4)) == 0 else ()
    if draw(st.integers(0, 3)) == 0:
        return Field((Step(draw(bracket_names), draw(indexes)),), bracketed=True, qualifier=qualifier)
    steps = draw(st.lists(st.builds(Step, step_names, indexes), min_size=1, max_size=3))
    return Field(tuple(steps), qualifier=qualifier)


def _non_negative(value: float) -> bool:
    return math.copysign(1.0, value) > 0


strings = st.text(max_size=12) | st.sampled_from(
    ["", "'", '"', "\\", "\\x41", "\\q", "it's", '"q"', "(.)\\1", "\x01\n\t"])
integers = st.integers(min_value=0, max_value=2**64 - 1) | st.integers(min_value=0, max_value=1000)
floats = st.floats(min_value=0.0, allow_nan=False, allow_infinity=False).filter(_non_negative)


def literals() -> st.SearchStrategy[Literal]:
    return st.builds(Literal, st.none() | st.booleans() | integers | floats | strings)


def numbers() -> st.SearchStrategy:
    """Number literals, negative ones as Negate(Literal(n)) like the parser builds them."""
    positive = st.builds(Literal, integers | floats)
    return positive | st.builds(Negate, positive)


def _calls(children: st.SearchStrategy, *, aggregates: bool, nondeterministic: bool) -> st.SearchStrategy[Call]:
    specs = [spec for spec in FUNCTIONS.values()
             if (aggregates or not spec.aggregate) and (nondeterministic or spec.deterministic)]

    @st.composite
    def build(draw: st.DrawFn) -> Call:
        spec = draw(st.sampled_from(specs))
        high = spec.max_args if spec.max_args is not None else spec.min_args + 3
        args = draw(st.lists(children, min_size=spec.min_args, max_size=high))
        return Call(spec.name, tuple(args))

    return build()


def exprs(max_depth: int = 3, *, field_strategy: st.SearchStrategy | None = None, aggregates: bool = True,
          nondeterministic: bool = True) -> st.SearchStrategy:
    """Canonical filter ASTs at most ``max_depth`` nodes deep above the leaves.

    ``field_strategy`` replaces the default ``fields()``; ``aggregates=False`` and
    ``nondeterministic=False`` leave out calls a filter evaluator would refuse.
    """
    leaves = st.one_of(field_strategy if field_strategy is not None else fields(), literals(), numbers())
    strategy = leaves
    for _ in range(max_depth):
        strategy = leaves | _composites(strategy, aggregates=aggregates, nondeterministic=nondeterministic)
    return strategy


def _valid_regex(text: str) -> bool:
    try:
        regex.compile(text)
    except regex.error:
        return False
    return True


# LIKE patterns: the parser rejects an invalid regex, so only valid ones make a printable AST.
patterns = strings.filter(_valid_regex)


def _composites(child: st.SearchStrategy, *, aggregates: bool, nondeterministic: bool) -> st.SearchStrategy:
    options = st.lists(child, min_size=1, max_size=3).map(tuple)
    operands = st.lists(child, min_size=2, max_size=4).map(tuple)
    negated = st.booleans()
    return st.one_of(
        st.builds(Negate, child),
        st.builds(Arithmetic, st.sampled_from(["+", "-", "*", "/", "%"]), child, child),
        st.builds(Comparison, st.sampled_from(COMPARISON_OPS), child, child),
        st.builds(Between, child, child, child, negated),
        st.builds(In, child, options, negated),
        st.builds(Like, child, patterns, negated),
        st.builds(StringMatch, st.sampled_from(["BEGINS", "ENDS"]), child, options, negated),
        st.builds(IsNull, child, negated),
        st.builds(Not, child),
        st.builds(And, operands),
        st.builds(Or, operands),
        _calls(child, aggregates=aggregates, nondeterministic=nondeterministic),
    )
