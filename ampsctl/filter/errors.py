"""Filter errors carry the expression and the 0-based offset of the offending character."""

from __future__ import annotations

from ampsctl.errors import InputError, Location


class FilterError(InputError):
    """A filter that cannot be evaluated: unknown function, wrong arity, bad regex, timeout..."""

    def __init__(self, message: str, *, expression: str = "", position: int | None = None, hint: str | None = None, code: str = "FILTER") -> None:
        location = Location("<filter>", 1, position + 1) if position is not None else None
        super().__init__(message, code=code, hint=hint, location=location)
        self.expression = expression
        self.position = position

    def caret(self) -> str:
        """The expression with a caret under the offending character (for terminals)."""
        if self.position is None or not self.expression:
            return ""
        line_start = self.expression.rfind("\n", 0, self.position) + 1
        line_end = self.expression.find("\n", self.position)
        line = self.expression[line_start : line_end if line_end >= 0 else len(self.expression)]
        return f"{line}\n{' ' * (self.position - line_start)}^"


class FilterSyntaxError(FilterError):
    """The text is not a filter: unexpected token, unterminated string, nesting too deep..."""
