"""The AMPS filter grammar as data (spec/expressions.md §2.4, §3).

The parser (``parser.py``) and the printer (``printer.py``) both read these tables, so the
precedence the printer assumes when it leaves parentheses out is, by construction, the
precedence the parser applies when it reads the text back. Changing a level here changes
both sides at once.

Keys are the tokenizer's canonical token keys: the upper-cased word for keywords
(``"MOD"``), the exact text for symbols (``"<>"``). Values are canonical AST spellings or
node classes.
"""

from __future__ import annotations

from enum import Enum, IntEnum
from types import MappingProxyType

from ampsctl.filter.ast import And, Negate, Not, Or

# A filter longer than this (in UTF-8 bytes) is refused before tokenizing: 1 MB, read as
# 1024 * 1024 like AMPS byte sizes' binary reading.
MAX_FILTER_BYTES = 1024 * 1024

# Deepest nesting accepted. Every enclosing construct counts one level: a parenthesis group,
# NOT, a unary sign, a function call's argument list, an IN/BEGINS/ENDS list and each operator
# whose operand is another operator. Bounding it keeps the parser and every recursive consumer
# of the AST (evaluator, compiler, printer) far from Python's recursion limit.
MAX_DEPTH = 200


class Prec(IntEnum):
    """Binding power, lowest first (spec §3.1 read bottom-up). A higher level binds tighter."""

    OR = 1
    AND = 2
    NOT = 3
    PREDICATE = 4  # comparisons and every predicate tail; non-associative
    ADDITIVE = 5
    MULTIPLICATIVE = 6
    UNARY = 7
    ATOM = 8  # fields, literals, calls, parenthesised groups


class Predicate(Enum):
    """The predicate tails that may follow a value at the PREDICATE level."""

    COMPARISON = "comparison"
    BETWEEN = "BETWEEN"
    IN = "IN"
    LIKE = "LIKE"
    BEGINS = "BEGINS"
    ENDS = "ENDS"
    IS = "IS"


# One table per level, sqlglot-style: token key -> node class or canonical AST operator.
# n-ary logical levels: a chain without parentheses becomes one node, so a 100,000-term AND
# is a flat tuple, not a 100,000-deep tree.
OR_OPERATORS = MappingProxyType({"OR": Or})
AND_OPERATORS = MappingProxyType({"AND": And})

# Prefix operators. The operand is read at the operator's own level, so ``NOT /a = 1`` is
# ``NOT (/a = 1)`` and ``-/a * 2`` is ``(-/a) * 2``. Unary plus builds no node (the AST has
# none) but still counts as a nesting level.
NOT_OPERATORS = MappingProxyType({"NOT": Not})
UNARY_OPERATORS = MappingProxyType({"-": Negate, "+": None})

# Comparison spelling -> canonical AST operator (``==`` is ``=``, ``<>`` is ``!=``).
COMPARISON_OPERATORS = MappingProxyType({
    "=": "=", "==": "=",
    "!=": "!=", "<>": "!=",
    "<": "<", "<=": "<=",
    ">": ">", ">=": ">=",
})

# Left-associative arithmetic -> canonical AST operator (MOD is ``%``).
ADDITIVE_OPERATORS = MappingProxyType({"+": "+", "-": "-"})
MULTIPLICATIVE_OPERATORS = MappingProxyType({"*": "*", "/": "/", "%": "%", "MOD": "%"})

# The level tables in one place; the lookups below are derived from them.
LOGICAL_LEVELS = ((Prec.OR, OR_OPERATORS), (Prec.AND, AND_OPERATORS))
PREFIX_LEVELS = ((Prec.NOT, NOT_OPERATORS), (Prec.UNARY, UNARY_OPERATORS))
ARITHMETIC_LEVELS = ((Prec.ADDITIVE, ADDITIVE_OPERATORS), (Prec.MULTIPLICATIVE, MULTIPLICATIVE_OPERATORS))

# key -> (level, node class)
LOGICAL_OPERATORS = MappingProxyType({key: (level, node) for level, table in LOGICAL_LEVELS
                                      for key, node in table.items()})
# key -> (level, node class or None)
PREFIX_OPERATORS = MappingProxyType({key: (level, node) for level, table in PREFIX_LEVELS
                                     for key, node in table.items()})
# key -> (level, canonical operator)
ARITHMETIC_OPERATORS = MappingProxyType({key: (level, op) for level, table in ARITHMETIC_LEVELS
                                         for key, op in table.items()})
# canonical operator -> level, for the printer
ARITHMETIC_PRECEDENCE = MappingProxyType({op: level for level, op in ARITHMETIC_OPERATORS.values()})

# Keyword that starts a predicate tail -> which tail. Comparison symbols are looked up in
# COMPARISON_OPERATORS instead.
PREDICATE_KEYWORDS = MappingProxyType({
    "BETWEEN": Predicate.BETWEEN,
    "IN": Predicate.IN,
    "LIKE": Predicate.LIKE,
    "BEGINS": Predicate.BEGINS,
    "ENDS": Predicate.ENDS,
    "IS": Predicate.IS,
})

# Tails that accept a NOT in front (``/a NOT IN (...)``); IS takes its NOT after (IS NOT NULL).
NEGATABLE_PREDICATES = frozenset({
    Predicate.BETWEEN, Predicate.IN, Predicate.LIKE, Predicate.BEGINS, Predicate.ENDS,
})

# Keywords that are values.
LITERAL_KEYWORDS = MappingProxyType({"TRUE": True, "FALSE": False, "NULL": None})

# Words that belong to the wider AMPS expression syntax but never to a filter expression:
# they are reserved so that the error can say what they are instead of "unknown name".
RESERVED_WORDS = MappingProxyType({
    "AS": "AS names a projected field in a view or enrichment <Field>; it is not part of a filter",
    "HINT": "HINT belongs to a projection's field definition, not to a filter",
    "TOPIC_MATCH": "TOPIC_MATCH is not supported (newest AMPS releases only); use LIKE with a regex",
})

# Every word the tokenizer reports as a keyword rather than a (function) name. Matched
# case-insensitively: the tokenizer upper-cases words before looking them up.
_WORDS = (LOGICAL_OPERATORS, PREFIX_OPERATORS, ARITHMETIC_OPERATORS, PREDICATE_KEYWORDS, LITERAL_KEYWORDS,
          RESERVED_WORDS)
KEYWORDS = frozenset(key for table in _WORDS for key in table if key[:1].isalpha()) | {"WITH"}

# Hints for names that look like SQL from other dialects.
FOREIGN_HINTS = MappingProxyType({
    "CASE": "CASE is not part of the AMPS language; use IF(condition, value_if_true, value_if_false)",
    "NOW": "NOW() is not an AMPS function; UNIX_TIMESTAMP() returns the current time",
})
