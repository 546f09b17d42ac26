"""The filter parser: text -> AST (spec/expressions.md §3), precedence from ``grammar.py``.

Theory of operation: a Pratt (precedence-climbing) parser over the token list.
``_expr(min_level, depth)`` reads prefix operators iteratively, one operand, then the infix
operators that bind at least as tightly as ``min_level``. Invariants:

- recursion happens only where the text nests (parentheses, call arguments, lists, right
  operands), never per term of a chain: ``a AND b AND ...`` and ``1 + 1 + ...`` are loops,
  and 10,000 ``NOT``s are counted in a loop;
- ``depth`` counts the constructs enclosing the current point; every node built checks
  ``depth + height <= MAX_DEPTH``. This bounds both this parser's recursion (a few frames
  per level) and the height of the AST every recursive consumer walks, so no input can
  reach a RecursionError;
- AND/OR chains become one n-ary node; a parenthesised inner chain stays its own node;
- the comparison level is non-associative: ``a = b = c`` is an error, not a guess;
- every error is a FilterSyntaxError with the offset of the offending character and a hint.
"""

from __future__ import annotations

import difflib

from ampsctl.filter.ast import (
    Arithmetic, Between, Call, Comparison, Expr, In, IsNull, Like, Literal, StringMatch,
)
from ampsctl.filter.catalog import AGGREGATES, FUNCTIONS, FunctionSpec
from ampsctl.filter.errors import FilterError, FilterSyntaxError
from ampsctl.filter.regexes import check_replacement, compile_pattern
from ampsctl.filter.grammar import (
    ARITHMETIC_OPERATORS, COMPARISON_OPERATORS, FOREIGN_HINTS, LITERAL_KEYWORDS, LOGICAL_OPERATORS,
    MAX_DEPTH, MAX_FILTER_BYTES, NEGATABLE_PREDICATES, PREDICATE_KEYWORDS, PREFIX_OPERATORS,
    RESERVED_WORDS, Predicate, Prec,
)
from ampsctl.filter.tokens import Kind, Token, tokenize

_VALUE_HINT = "expected a value: a field (/name), a literal ('text', 42, TRUE, NULL), a function call or ("
_REGEX_FUNCTIONS = frozenset(("REGEXP_MATCH", "REGEXP_REPLACE"))
_NESTING_HINT = f"filters may nest at most {MAX_DEPTH} levels (parentheses, NOT, signs, calls, operators)"


def parse(text: str | bytes) -> Expr:
    """The AST of ``text`` (bytes must be UTF-8); raises FilterSyntaxError."""
    source = _source(text)
    return _Parser(source, tokenize(source)).parse()


def with_position(error: FilterError, text: str) -> FilterError:
    """``error`` pointing into ``text`` when it came without a position: the compiler finds an
    aggregate call in the AST, which keeps no offsets, so the call it names (its hint starts
    with "SUM()") is looked up again among the tokens of ``text``."""
    if error.position is not None or error.code != "FILTER_AGGREGATE":
        return error
    try:
        tokens = tokenize(text)
    except FilterSyntaxError:
        return error
    named = (error.hint or "").partition("(")[0]
    for token, after in zip(tokens, tokens[1:]):
        if token.kind is Kind.NAME and token.key in AGGREGATES and after.key == "(" and (not named or token.key == named):
            return FilterError(error.message, expression=text, position=token.pos, hint=error.hint, code=error.code)
    return error


def _source(raw: str | bytes) -> str:
    """``raw`` as text, refusing more than MAX_FILTER_BYTES before any other work."""
    if isinstance(raw, bytes | bytearray | memoryview):
        data = bytes(raw)
        if len(data) > MAX_FILTER_BYTES:
            raise _too_long(len(data), MAX_FILTER_BYTES)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            # The caret is drawn only when character and byte offsets agree (ASCII before it).
            shown = data.decode("utf-8", "replace") if data[: exc.start].isascii() else ""
            raise FilterSyntaxError(
                f"invalid UTF-8 (byte 0x{data[exc.start]:02x} at byte offset {exc.start})",
                expression=shown, position=exc.start, hint="filters are UTF-8 text; re-encode the input",
            ) from None
    text = str(raw)
    if len(text) * 4 <= MAX_FILTER_BYTES:  # even 4 bytes per character would fit
        return text
    if text.isascii():  # O(1) in CPython: one byte per character
        size, position = len(text), MAX_FILTER_BYTES
    else:
        data = text.encode("utf-8", "surrogatepass")
        size = len(data)
        # The character that holds the first byte past the limit.
        position = len(data[:MAX_FILTER_BYTES].decode("utf-8", "ignore"))
    if size > MAX_FILTER_BYTES:
        raise _too_long(size, position)
    return text


def _too_long(size: int, position: int) -> FilterSyntaxError:
    return FilterSyntaxError(
        f"filter too long ({size} bytes; the limit is {MAX_FILTER_BYTES})",
        position=position, hint="split the condition, or match on fewer values (IN lists are the usual culprit)",
    )


class _Parser:
    __slots__ = ("text", "tokens", "i")

    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0

    # -- helpers ------------------------------------------------------------------------

    def _error(self, token: Token | int, message: str, hint: str) -> FilterSyntaxError:
        pos = token if isinstance(token, int) else token.pos
        return FilterSyntaxError(message, expression=self.text, position=pos, hint=hint)

    def _describe(self, token: Token) -> str:
        if token.kind is Kind.END:
            return "end of filter"
        shown = self.text[token.pos : token.end]
        if len(shown) > 40:
            shown = shown[:37] + "..."
        return f"{token.kind.value} {shown}"

    def _check(self, token: Token, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self._error(token, "filter nested too deeply", _NESTING_HINT)

    def _expect_symbol(self, key: str, hint: str) -> Token:
        token = self.tokens[self.i]
        if token.kind is not Kind.SYMBOL or token.key != key:
            raise self._error(token, f"expected {key!r}, found {self._describe(token)}", hint)
        self.i += 1
        return token

    def _expect_keyword(self, key: str, hint: str) -> Token:
        token = self.tokens[self.i]
        if token.kind is not Kind.KEYWORD or token.key != key:
            raise self._error(token, f"expected {key}, found {self._describe(token)}", hint)
        self.i += 1
        return token

    # -- entry --------------------------------------------------------------------------

    def parse(self) -> Expr:
        first = self.tokens[0]
        if first.kind is Kind.END:
            raise self._error(0, "empty filter", "write a condition such as /symbol = 'IBM' (1=1 matches everything)")
        node, _ = self._expr(0, 0)
        token = self.tokens[self.i]
        if token.kind is not Kind.END:
            raise self._error(token, f"unexpected {self._describe(token)}", self._trailing_hint(token))
        return node

    def _trailing_hint(self, token: Token) -> str:
        before = self.tokens[self.i - 1]
        if token.kind is Kind.SYMBOL and token.key == ")":
            return "this ) closes nothing"
        if token.kind is Kind.FIELD and token.pos == before.end and self.text[token.pos] == "/":
            return "to divide, put spaces around the /: /a / 2 (a / that touches a name starts a field)"
        if before.kind is Kind.FIELD and self.text[before.end - 1] == "-":
            return "to subtract, put spaces around the -: /a - 1 (a - inside a name is part of it)"
        if token.kind is Kind.STRING and before.kind is Kind.STRING and token.pos == before.end:
            return "to put a quote inside a string, escape it: 'it\\'s'"
        if token.kind is Kind.KEYWORD and token.key in RESERVED_WORDS:
            return RESERVED_WORDS[token.key]
        return "expected an operator, AND, OR or the end of the filter"

    # -- expressions --------------------------------------------------------------------

    def _expr(self, min_level: int, depth: int) -> tuple[Expr, int]:
        """An expression whose operators bind at least at ``min_level``: (node, height)."""
        tokens = self.tokens
        pending: list[tuple[int, type | None]] = []
        level = min_level
        while True:
            token = tokens[self.i]
            entry = PREFIX_OPERATORS.get(token.key) if token.kind in (Kind.KEYWORD, Kind.SYMBOL) else None
            if entry is None:
                break
            if entry[0] < level:
                raise self._error(token, f"{token.key} cannot stand here",
                                  f"parenthesise it: ({token.key} ...)")
            depth += 1
            self._check(token, depth)
            pending.append(entry)
            level = entry[0]
            self.i += 1
        node, height = self._primary(depth)
        node, height = self._infix(node, height, level, depth)
        while pending:
            _, factory = pending.pop()
            depth -= 1
            if factory is not None:
                node = factory(node)
                height += 1
            level = pending[-1][0] if pending else min_level
            node, height = self._infix(node, height, level, depth)
        return node, height

    def _infix(self, left: Expr, height: int, min_level: int, depth: int) -> tuple[Expr, int]:
        # Recursion budget: _expr -> _infix -> (_expr | _chain | _list) -> _expr is at most three
        # frames per nesting level, so the operand parsing stays in this frame.
        tokens = self.tokens
        after_predicate: Token | None = None
        while True:
            token = tokens[self.i]
            kind, key = token.kind, token.key
            if kind is not Kind.SYMBOL and kind is not Kind.KEYWORD:
                return left, height
            if key in ARITHMETIC_OPERATORS:
                op_level, op = ARITHMETIC_OPERATORS[key]
            elif key in COMPARISON_OPERATORS or key in PREDICATE_KEYWORDS or key == "NOT":
                op_level, op = Prec.PREDICATE, None  # infix NOT only negates a predicate tail
            elif key in LOGICAL_OPERATORS:
                op_level, op = LOGICAL_OPERATORS[key][0], None
            else:
                return left, height
            if op_level < min_level:
                return left, height
            if key == "NOT":
                self._negatable(tokens[self.i + 1])
            if after_predicate is not None and op_level > Prec.PREDICATE:
                raise self._error(token, f"{key} cannot apply to a condition",
                                  "parenthesise: (/a IS NULL) + 1, or move the arithmetic into the operand")
            inner = depth + 1
            if op_level == Prec.PREDICATE:
                if after_predicate is not None:
                    raise self._error(token, "comparisons do not chain",
                                      "combine conditions with AND/OR, or parenthesise one side: (/a = 1) = 1")
                after_predicate = token
                predicate, negated, anchor = self._predicate_head()
                if predicate is Predicate.COMPARISON:
                    right, right_height = self._expr(Prec.ADDITIVE, inner)
                    left = Comparison(COMPARISON_OPERATORS[key], left, right)
                    height = max(height, right_height)
                elif predicate is Predicate.BETWEEN:
                    low, low_height = self._expr(Prec.ADDITIVE, inner)
                    self._expect_keyword("AND", "write value BETWEEN low AND high")
                    high, high_height = self._expr(Prec.ADDITIVE, inner)
                    left = Between(left, low, high, negated)
                    height = max(height, low_height, high_height)
                elif predicate is Predicate.IS:
                    left = IsNull(left, negated)
                elif predicate is Predicate.LIKE:
                    left = Like(left, anchor.value, negated)  # type: ignore[arg-type]
                else:
                    options, options_height = self._list(anchor, inner, allow_empty=False)
                    height = max(height, options_height)
                    if predicate is Predicate.IN:
                        left = In(left, options, negated)
                    else:
                        left = StringMatch(predicate.value, left, options, negated)
                height += 1
            elif op is None:
                left, height = self._chain(left, height, token, depth)
            else:
                self.i += 1
                right, right_height = self._expr(op_level + 1, inner)
                left, height = Arithmetic(op, left, right), max(height, right_height) + 1
            self._check(token, depth + height)

    def _chain(self, left: Expr, height: int, token: Token, depth: int) -> tuple[Expr, int]:
        """An n-ary AND/OR chain: one node however long, operands read in a loop."""
        level, node_class = LOGICAL_OPERATORS[token.key]
        operands = [left]
        tokens = self.tokens
        self._check(token, depth + 1)
        while tokens[self.i].kind is Kind.KEYWORD and tokens[self.i].key == token.key:
            self.i += 1
            operand, operand_height = self._expr(level + 1, depth + 1)
            operands.append(operand)
            height = max(height, operand_height)
        return node_class(tuple(operands)), height + 1

    def _negatable(self, token: Token) -> None:
        """Refuse ``token`` after an infix NOT unless it starts a negatable predicate."""
        if token.kind is not Kind.KEYWORD or PREDICATE_KEYWORDS.get(token.key) not in NEGATABLE_PREDICATES:
            raise self._error(token, f"expected IN, LIKE, BETWEEN, BEGINS WITH or ENDS WITH after NOT, "
                              f"found {self._describe(token)}",
                              "to negate a whole condition put NOT in front of it: NOT (/a = 1)")

    def _predicate_head(self) -> tuple[Predicate, bool, Token]:
        """Consume a predicate's keywords: ``=``, ``NOT IN (``, ``BEGINS WITH (``, ``IS NOT NULL``,
        ``LIKE 'p'``... Returns the tail kind, whether it is negated, and the token the caller
        needs next: the ``(`` that opens a list, LIKE's pattern, or the operator itself."""
        tokens = self.tokens
        token = tokens[self.i]
        self.i += 1
        if token.kind is Kind.SYMBOL:
            return Predicate.COMPARISON, False, token
        negated = token.key == "NOT"
        if negated:
            token = tokens[self.i]
            self._negatable(token)
            self.i += 1
        predicate = PREDICATE_KEYWORDS[token.key]
        if predicate is Predicate.IS:
            following = tokens[self.i]
            negated = following.kind is Kind.KEYWORD and following.key == "NOT"
            self.i += negated
            return predicate, negated, self._expect_keyword("NULL", "write IS NULL or IS NOT NULL")
        if predicate is Predicate.LIKE:
            pattern = tokens[self.i]
            if pattern.kind is not Kind.STRING:
                raise self._error(pattern, f"LIKE needs a quoted pattern, found {self._describe(pattern)}",
                                  "the pattern must be a string literal: /symbol LIKE '^MS'")
            self.i += 1
            # A bad regex is a syntax error of the filter, reported with a caret at the pattern.
            compile_pattern(pattern.value, expression=self.text, position=pattern.pos)  # type: ignore[arg-type]
            return predicate, negated, pattern
        if predicate is Predicate.BETWEEN:
            return predicate, negated, token
        with_ = "" if predicate is Predicate.IN else " WITH"
        if with_:
            self._expect_keyword("WITH", f"write {token.key} WITH ('text', ...)")
        opening = self._expect_symbol("(", f"the values go in parentheses: {token.key}{with_} ('a', 'b')")
        return predicate, negated, opening

    def _list(self, opening: Token, depth: int, *, allow_empty: bool,
              starts: list[int] | None = None) -> tuple[tuple[Expr, ...], int]:
        """Comma-separated expressions up to the ``)`` that closes ``opening``; ``starts``
        receives the offset where each item begins (for arity errors)."""
        self._check(opening, depth)
        tokens = self.tokens
        items: list[Expr] = []
        height = 0
        if tokens[self.i].kind is Kind.SYMBOL and tokens[self.i].key == ")":
            if not allow_empty:
                raise self._error(tokens[self.i], "empty list", "write at least one value: IN ('a')")
            self.i += 1
            return (), 0
        while True:
            if starts is not None:
                starts.append(tokens[self.i].pos)
            item, item_height = self._expr(0, depth)
            items.append(item)
            height = max(height, item_height)
            token = tokens[self.i]
            self.i += 1
            if token.kind is Kind.SYMBOL and token.key == ",":
                continue
            if token.kind is Kind.SYMBOL and token.key == ")":
                return tuple(items), height
            self.i -= 1
            raise self._error(token, f"expected ',' or ')', found {self._describe(token)}",
                              f"the list opened at offset {opening.pos} is not closed")

    def _check_regex_arguments(self, name: str, args: list[Expr], starts: list[int]) -> None:
        """A pattern (and a replacement) written as a string literal is checked here, like a
        LIKE pattern, with a caret at it; one that comes from a field is checked when run."""
        pattern = args[1]
        if not isinstance(pattern, Literal) or not isinstance(pattern.value, str) or not pattern.value:
            return  # '' is NULL: the call gives NULL
        compile_pattern(pattern.value, expression=self.text, position=starts[1],
                        hint=f"{name} takes a PCRE pattern: escape literal metacharacters such as ( [ . * + ? with a backslash")
        if len(args) > 2 and isinstance(args[2], Literal) and isinstance(args[2].value, str) and args[2].value:
            check_replacement(pattern.value, args[2].value, expression=self.text, position=starts[2])

    def _primary(self, depth: int) -> tuple[Expr, int]:
        token = self.tokens[self.i]
        kind = token.kind
        if kind is Kind.FIELD or kind is Kind.STRING or kind is Kind.NUMBER:
            self.i += 1
            return (token.value if kind is Kind.FIELD else Literal(token.value)), 0  # type: ignore[return-value]
        if kind is Kind.KEYWORD and token.key in LITERAL_KEYWORDS:
            self.i += 1
            return Literal(LITERAL_KEYWORDS[token.key]), 0
        if kind is Kind.SYMBOL and token.key == "(":
            self.i += 1
            self._check(token, depth + 1)
            node, height = self._expr(0, depth + 1)
            closing = self.tokens[self.i]
            if closing.kind is not Kind.SYMBOL or closing.key != ")":
                raise self._error(closing, f"expected ')', found {self._describe(closing)}",
                                  f"close the ( at offset {token.pos}, or join conditions with AND/OR")
            self.i += 1
            return node, height
        if kind is Kind.NAME:
            spec = self._function(token)
            opening = self.tokens[self.i + 1]
            self.i += 2
            starts: list[int] = []
            args, height = self._list(opening, depth + 1, allow_empty=True, starts=starts)
            if not spec.accepts(len(args)):
                many = spec.max_args is not None and len(args) > spec.max_args
                # Blame the first argument too many, or the ) where one is missing.
                position = starts[spec.max_args] if many else self.tokens[self.i - 1].pos  # type: ignore[index]
                raise self._error(position, f"{spec.name} takes {spec.arity_text()}, got {len(args)}",
                                  f"write {spec.signature}")
            if spec.name in _REGEX_FUNCTIONS:
                self._check_regex_arguments(spec.name, args, starts)
            return Call(spec.name, args), height + 1
        raise self._error(token, f"unexpected {self._describe(token)}", self._value_hint(token))

    def _value_hint(self, token: Token) -> str:
        if token.kind is Kind.KEYWORD and token.key in RESERVED_WORDS:
            return RESERVED_WORDS[token.key]
        if token.kind is Kind.SYMBOL and token.key == "/":
            return "a field is /name with no space after the /; division needs a value on both sides"
        return _VALUE_HINT

    def _function(self, token: Token) -> FunctionSpec:
        """The catalog entry of the NAME ``token``, which must be followed by ``(``."""
        following = self.tokens[self.i + 1]
        is_call = following.kind is Kind.SYMBOL and following.key == "("
        spec = FUNCTIONS.get(token.key)
        if spec is None:
            if token.key in FOREIGN_HINTS:
                hint = FOREIGN_HINTS[token.key]
            elif not is_call:
                hint = f"a field name starts with a slash: /{token.value}; a string needs quotes: '{token.value}'"
            else:
                close = difflib.get_close_matches(token.key, list(FUNCTIONS), n=3, cutoff=0.6)
                hint = (f"did you mean {' or '.join(close)}?" if close
                        else "see docs/filter-language.md for the functions AMPS documents")
            what = "unknown function" if is_call else "unexpected name"
            raise self._error(token, f"{what} {token.value}", hint)
        if not is_call:
            raise self._error(token, f"{spec.name} is a function and needs parentheses", f"write {spec.signature}")
        return spec
