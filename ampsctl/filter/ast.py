"""The one AST of the AMPS filter language (spec/expressions.md §3).

Every backend (the reference evaluator, the compiled Python closure, the Spark compiler)
reads these nodes and nothing else. Nodes are frozen, slotted and hashable, so two parses
of the same text compare equal and the canonical printer can promise
``parse(to_text(ast)) == ast``.

Canonical spellings are stored, not the user's: ``==`` becomes ``=``, ``<>`` becomes ``!=``,
``MOD`` becomes ``%``, function names are upper case. ``And``/``Or`` are n-ary over a chain
written without parentheses, so long chains need no deep recursion; an explicitly
parenthesised inner chain stays a separate node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

# Scalar literal values: None is NULL.
LiteralValue = Union[None, bool, int, float, str]

COMPARISON_OPS = ("=", "!=", "<", "<=", ">", ">=")
ARITHMETIC_OPS = ("+", "-", "*", "/", "%")


@dataclass(frozen=True, slots=True)
class Step:
    """One path step: ``name`` (``@attr`` for an XML attribute) and an optional 0-based subscript."""

    name: str
    index: int | None = None


@dataclass(frozen=True, slots=True)
class Field:
    """A field reference: ``/a/b[0]``, ``/@attr``, ``[/odd name]``, or ``[type].[topic]./x`` in views.

    ``bracketed`` records the ``[/...]`` spelling (one step whose name may hold any
    character but ``]``); ``qualifier`` holds the ``(type, topic)`` or ``(topic,)`` prefix
    used in view definitions.
    """

    steps: tuple[Step, ...]
    bracketed: bool = False
    qualifier: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Literal:
    value: LiteralValue


@dataclass(frozen=True, slots=True)
class Negate:
    """Unary minus (unary plus is dropped by the parser)."""

    operand: Expr


@dataclass(frozen=True, slots=True)
class Arithmetic:
    op: str  # one of ARITHMETIC_OPS
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Comparison:
    op: str  # one of COMPARISON_OPS
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Between:
    value: Expr
    low: Expr
    high: Expr
    negated: bool = False


@dataclass(frozen=True, slots=True)
class In:
    value: Expr
    options: tuple[Expr, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Like:
    """``value LIKE 'pcre'``: the pattern is always a literal string."""

    value: Expr
    pattern: str
    negated: bool = False


@dataclass(frozen=True, slots=True)
class StringMatch:
    """``value BEGINS WITH (...)`` or ``value ENDS WITH (...)``: true when any option matches."""

    kind: str  # "BEGINS" or "ENDS"
    value: Expr
    options: tuple[Expr, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class IsNull:
    value: Expr
    negated: bool = False  # IS NOT NULL


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expr


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[Expr, ...]  # at least two


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[Expr, ...]  # at least two


@dataclass(frozen=True, slots=True)
class Call:
    """A function call; ``name`` is upper case. IF and COALESCE are calls too."""

    name: str
    args: tuple[Expr, ...]


Expr = Union[Field, Literal, Negate, Arithmetic, Comparison, Between, In, Like, StringMatch, IsNull, Not, And, Or, Call]

# Every node class, for isinstance checks (``Expr`` is a Union, which isinstance cannot take).
NODES = (Field, Literal, Negate, Arithmetic, Comparison, Between, In, Like, StringMatch, IsNull, Not, And, Or, Call)
