"""The canonical printer: AST -> filter text that parses back to the same AST.

Promises, for every AST the parser can produce: ``parse(to_text(ast)) == ast`` and
``to_text(parse(to_text(ast))) == to_text(ast)``. Choices that make the form canonical:

- parentheses only where the precedence table in ``grammar.py`` (the parser's own) needs
  them, plus two kinds kept on purpose: an AND inside an AND (or OR inside OR) stays a
  parenthesised group, because the AST keeps explicit nesting apart from a flat chain; and
  NOT over a comparison or predicate is written ``NOT (/a = 1)`` so nobody reads it as
  ``(NOT /a) = 1``;
- every binary operator has a space on each side: ``/a / 2`` and ``/a - 1`` must not touch
  the field, or they would become part of its name (spec §2.1);
- keywords and function names upper case, ``=``/``!=``/``%`` as stored in the AST;
- strings in single quotes; ``'`` escaped, control characters as ``\\xHH``, a backslash
  doubled only where it would otherwise start an escape (regex escapes stay readable);
- floats as ``repr`` (shortest text that reads back as the same double), integers as digits.

ASTs the parser cannot produce (an And with one operand, a step name with a space outside
the bracketed form, a non-finite float) raise ValueError rather than print a lie. A negative
number literal prints as ``-5``, which reads back as ``Negate(5)``: the parser's own form.
"""

from __future__ import annotations

import math
import re

from ampsctl.filter.ast import (
    COMPARISON_OPS, And, Arithmetic, Between, Call, Comparison, Expr, Field, In, IsNull, Like, Literal, Negate,
    Not, Or, StringMatch,
)
from ampsctl.filter.grammar import ARITHMETIC_PRECEDENCE, Prec
from ampsctl.filter.tokens import is_plain_step

_PREDICATES = (Comparison, Between, In, Like, StringMatch, IsNull)
# A quote, a control character, or a backslash that would otherwise be read as the start of
# an escape (before \ ' " a control character or xHH, or at the very end). Any other
# backslash is printed as is: the reader keeps an unknown \c, so '(.)\1' stays readable.
_NEEDS_ESCAPE = re.compile(r"""'|[\x00-\x1f\x7f]|\\(?=[\\'"\x00-\x1f\x7f]|x[0-9A-Fa-f]{2}|\Z)""")


def to_text(expr: Expr) -> str:
    """The canonical text of ``expr``."""
    return _text(expr)


def precedence(expr: Expr) -> int:
    """The level at which ``expr``'s top operator binds (grammar.Prec)."""
    if isinstance(expr, Or):
        return Prec.OR
    if isinstance(expr, And):
        return Prec.AND
    if isinstance(expr, Not):
        return Prec.NOT
    if isinstance(expr, _PREDICATES):
        return Prec.PREDICATE
    if isinstance(expr, Arithmetic):
        return ARITHMETIC_PRECEDENCE[expr.op]
    if isinstance(expr, Negate):
        return Prec.UNARY
    if isinstance(expr, Literal) and _is_negative_number(expr.value):
        return Prec.UNARY  # prints with a leading minus, so it binds like one
    return Prec.ATOM


def _is_negative_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.copysign(1, value) < 0


def _wrap(expr: Expr, level: int) -> str:
    """``expr`` as an operand that must bind at least at ``level``."""
    text = _text(expr)
    return f"({text})" if precedence(expr) < level else text


def _text(expr: Expr) -> str:
    if isinstance(expr, Field):
        return field_text(expr)
    if isinstance(expr, Literal):
        return literal_text(expr.value)
    if isinstance(expr, (And, Or)):
        if len(expr.operands) < 2:
            raise ValueError(f"{type(expr).__name__} needs at least two operands")
        keyword = " AND " if isinstance(expr, And) else " OR "
        # An operand at the same level is an explicit inner group: keep its parentheses.
        return keyword.join(_wrap(operand, precedence(expr) + 1) for operand in expr.operands)
    if isinstance(expr, Not):
        operand = expr.operand
        return f"NOT ({_text(operand)})" if isinstance(operand, _PREDICATES) else f"NOT {_wrap(operand, Prec.NOT)}"
    if isinstance(expr, Negate):
        operand = _wrap(expr.operand, Prec.UNARY)
        return f"- {operand}" if operand[0] in "-+" else f"-{operand}"
    if isinstance(expr, Arithmetic):
        level = ARITHMETIC_PRECEDENCE[expr.op]  # KeyError for an unknown operator
        return f"{_wrap(expr.left, level)} {expr.op} {_wrap(expr.right, level + 1)}"
    if isinstance(expr, Comparison):
        if expr.op not in COMPARISON_OPS:
            raise ValueError(f"unknown comparison operator {expr.op!r}")
        return f"{_wrap(expr.left, Prec.ADDITIVE)} {expr.op} {_wrap(expr.right, Prec.ADDITIVE)}"
    if isinstance(expr, Call):
        return f"{expr.name.upper()}({', '.join(_text(arg) for arg in expr.args)})"
    if not isinstance(expr, _PREDICATES):
        raise ValueError(f"not a filter AST node: {expr!r}")
    value = _wrap(expr.value, Prec.ADDITIVE)  # the predicates: their subject binds like an operand
    not_ = "NOT " if expr.negated else ""
    if isinstance(expr, IsNull):
        return f"{value} IS {not_}NULL"
    if isinstance(expr, Like):
        return f"{value} {not_}LIKE {string_text(expr.pattern)}"
    if isinstance(expr, Between):
        return f"{value} {not_}BETWEEN {_wrap(expr.low, Prec.ADDITIVE)} AND {_wrap(expr.high, Prec.ADDITIVE)}"
    if not expr.options:
        raise ValueError(f"{type(expr).__name__} needs at least one option")
    options = ", ".join(_text(option) for option in expr.options)
    if isinstance(expr, In):
        return f"{value} {not_}IN ({options})"
    if expr.kind not in ("BEGINS", "ENDS"):
        raise ValueError(f"unknown string match kind {expr.kind!r}")
    return f"{value} {not_}{expr.kind} WITH ({options})"


def field_text(field: Field) -> str:
    """``/a/b[0]``, ``/@attr``, ``[/odd name]``, ``[type].[topic]./x``."""
    if not field.steps:
        raise ValueError("a field needs at least one step")
    prefix = ""
    for part in field.qualifier:
        if not part or "]" in part or part.startswith("/"):
            raise ValueError(f"qualifier {part!r} cannot be written in brackets")
        prefix += f"[{part}]."
    if field.bracketed:
        if len(field.steps) != 1:
            raise ValueError("a bracketed field has exactly one step")
        step = field.steps[0]
        if not step.name or "]" in step.name:
            raise ValueError(f"field name {step.name!r} cannot be written in brackets")
        return f"{prefix}[/{step.name}]{_subscript(step.index)}"
    parts = []
    for step in field.steps:
        if not is_plain_step(step.name):
            raise ValueError(f"step name {step.name!r} needs the bracketed form [/name]")
        parts.append(f"/{step.name}{_subscript(step.index)}")
    return prefix + "".join(parts)


def _subscript(index: int | None) -> str:
    if index is None:
        return ""
    if index < 0:
        raise ValueError("negative subscripts do not exist in the filter language")
    return f"[{index}]"


def literal_text(value: object) -> str:
    if value is None:
        return "NULL"
    if value is True:
        return "TRUE"
    if value is False:
        return "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no literal form (use NAN_VALUE() for NaN)")
        return repr(value)
    if isinstance(value, str):
        return string_text(value)
    raise ValueError(f"not a literal value: {value!r}")


def string_text(value: str) -> str:
    """``value`` single-quoted so that it reads back unchanged."""
    if _NEEDS_ESCAPE.search(value):
        value = _NEEDS_ESCAPE.sub(_escape, value)
    return f"'{value}'"


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in "\\'":
        return "\\" + char
    return f"\\x{ord(char):02x}"
