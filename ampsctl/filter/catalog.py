"""Every documented AMPS function, as data (spec/expressions.md §9, Spark classes from §11).

The parser checks names and arities against ``FUNCTIONS``; the evaluator keys its
implementations by the same names; ``spark`` is spec §11's class of each function's Spark
mapping (exact "faithful", "approximate" with a documented divergence, or "none"), shown by
`ampsctl filter functions` and docs/filter-language.md, which are generated from the
summaries. The Spark compiler (``pipeline/spark_filter.SUPPORTED_FUNCTIONS``) compiles only
what it maps exactly, which includes some "approximate" ones (UPPER via ASCII translate), and
sends every other call to the Python evaluator. Names are upper case: function names are matched case-insensitively.

Functions that spec §9.2 lists as requested but unverified are included (an AMPS user will
try them) and their summaries start with "Provisional". ``NOW`` and ``CASE`` are left out on
purpose (§9.2: not AMPS), as is ``TOPIC_MATCH`` (an operator, and not supported).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType


class SparkMapping(StrEnum):
    """How a construct maps to Spark SQL (spec §11). Members compare equal to their strings."""

    FAITHFUL = "faithful"
    APPROXIMATE = "approximate"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    name: str
    min_args: int
    max_args: int | None  # None: any number of arguments from min_args up
    deterministic: bool
    aggregate: bool
    spark: SparkMapping
    summary: str
    signature: str = ""  # how the call is written, for hints and docs

    def arity_text(self) -> str:
        """``"2 or 3 arguments"``, ``"no arguments"``, ``"at least 1 argument"``..."""
        low, high = self.min_args, self.max_args
        noun = "argument" if (high if high is not None else low) == 1 else "arguments"
        if high is None:
            return f"at least {low} {noun}"
        if low == high:
            return "no arguments" if low == 0 else f"{low} {noun}"
        if high == low + 1:
            return f"{low} or {high} {noun}"
        return f"{low} to {high} {noun}"

    def accepts(self, count: int) -> bool:
        return count >= self.min_args and (self.max_args is None or count <= self.max_args)


_F = SparkMapping.FAITHFUL
_A = SparkMapping.APPROXIMATE


def _fn(signature: str, low: int, high: int | None, spark: SparkMapping, summary: str, *,
        deterministic: bool = True, aggregate: bool = False) -> FunctionSpec:
    name = signature.partition("(")[0]
    return FunctionSpec(name, low, high, deterministic, aggregate, spark, summary, signature)


_ALL = (
    # §9.1 string functions (verified)
    _fn("UPPER(s)", 1, 1, _A, "s in upper case; ASCII letters only (Spark upper() is Unicode-aware)"),
    _fn("LOWER(s)", 1, 1, _A, "s in lower case; ASCII letters only (Spark lower() is Unicode-aware)"),
    _fn("CONCAT(v1, v2, ...)", 1, None, _A,
        "every argument as text, joined; NULL arguments count as empty strings (float text form differs in Spark)"),
    _fn("INSTR(haystack, needle)", 2, 2, _F, "1-based position of the first occurrence of needle, 0 if absent"),
    _fn("INSTR_I(haystack, needle)", 2, 2, _A, "INSTR ignoring ASCII case (Spark lower() is Unicode-aware)"),
    _fn("STREQUAL_I(a, b)", 2, 2, _A, "1 if a equals b ignoring ASCII case, else 0"),
    _fn("SUBSTR(s, start [, length])", 2, 3, _F, "substring from the 1-based start, to the end or length characters"),
    _fn("REVERSE(s)", 1, 1, _F, "s with its characters in reverse order"),
    # §9.2 requested but unverified names
    _fn("LENGTH(s)", 1, 1, _A, "Provisional (spec 9.2): length of s in bytes; NULL gives NULL"),
    _fn("LEN(s)", 1, 1, _A, "Provisional (spec 9.2): same as LENGTH"),
    _fn("TRIM(s [, chars])", 1, 2, _A, "Provisional (spec 9.2): s without leading and trailing whitespace (or chars)"),
    _fn("LTRIM(s [, chars])", 1, 2, _A, "Provisional (spec 9.2): s without leading whitespace (or chars)"),
    _fn("RTRIM(s [, chars])", 1, 2, _A, "Provisional (spec 9.2): s without trailing whitespace (or chars)"),
    _fn("REGEXP_MATCH(s, pattern)", 2, 2, _A,
        "Provisional (spec 9.2): the text the PCRE pattern matches in s, or NULL"),
    _fn("REPLACE(s, old, new)", 3, 3, _F, "Provisional (spec 9.2): s with every occurrence of old replaced by new"),
    _fn("REGEXP_REPLACE(s, pattern, new)", 3, 3, _A,
        "Provisional (spec 9.2): s with every PCRE match replaced by new (Spark uses Java regex)"),
    _fn("ABS(x)", 1, 1, _F, "Provisional (spec 9.2): absolute value of x"),
    _fn("ROUND(x [, digits])", 1, 2, _A,
        "Provisional (spec 9.2): x rounded half away from zero (Spark rounds the decimal form)"),
    _fn("CEILING(x)", 1, 1, _F, "Provisional (spec 9.2): smallest integer not below x"),
    _fn("FLOOR(x)", 1, 1, _F, "Provisional (spec 9.2): largest integer not above x"),
    _fn("COALESCE(v1, v2, ...)", 1, None, _F, "the first argument that is not NULL (an empty string counts as NULL)"),
    # §9.3 conditional
    _fn("IF(condition, value_if_true, value_if_false)", 3, 3, _F,
        "value_if_true when condition is true, else value_if_false (a NULL condition takes the false branch)"),
    # §9.4 date and time
    _fn("UNIX_TIMESTAMP()", 0, 0, _A,
        "current UTC time in seconds as a float; Spark evaluates it once per query, AMPS per evaluation",
        deterministic=False),
    _fn("STRFTIME(format, timestamp)", 2, 2, _A,
        "timestamp (seconds) formatted with strftime specifiers plus %f and %03f (needs a Java pattern in Spark)"),
    _fn("STRPTIME(text, format)", 2, 2, _A,
        "text parsed with strptime specifiers plus %f and %03f, as float seconds since the epoch"),
    # §9.5 typed values
    _fn("TRUE_VALUE()", 0, 0, _F, "a typed boolean true"),
    _fn("FALSE_VALUE()", 0, 0, _F, "a typed boolean false"),
    _fn("NAN_VALUE()", 0, 0, _A, "a float NaN (Spark orders NaN above every number and NaN = NaN is true)"),
    _fn("CHAR_VALUE(n)", 1, 1, _A,
        "the single character with code n (0-255); Spark chr() encodes 128-255 as two bytes"),
    # §9.6 aggregates (view projections and aggregated subscriptions only)
    _fn("AVG(x)", 1, 1, _F, "mean of the non-NULL values in the group", aggregate=True),
    _fn("ANY(x)", 1, 1, _F, "some value of the group (Spark any_value)", aggregate=True),
    _fn("COUNT(x)", 1, 1, _F, "number of non-NULL values in the group", aggregate=True),
    _fn("COUNT_DISTINCT(x)", 1, 1, _A,
        "number of distinct non-NULL values, distinct after AMPS type conversion", aggregate=True),
    _fn("MIN(x)", 1, 1, _A, "smallest value: numbers below non-numeric strings, strings in byte order", aggregate=True),
    _fn("MAX(x)", 1, 1, _A, "largest value: numbers below non-numeric strings, strings in byte order", aggregate=True),
    _fn("SUM(x)", 1, 1, _F, "sum of the non-NULL values in the group", aggregate=True),
    _fn("STDDEV_POP(x)", 1, 1, _F, "population standard deviation of the non-NULL values", aggregate=True),
    _fn("STDDEV_SAMP(x)", 1, 1, _F, "sample standard deviation of the non-NULL values", aggregate=True),
)

FUNCTIONS: MappingProxyType[str, FunctionSpec] = MappingProxyType({spec.name: spec for spec in _ALL})
AGGREGATES: frozenset[str] = frozenset(name for name, spec in FUNCTIONS.items() if spec.aggregate)
NONDETERMINISTIC: frozenset[str] = frozenset(name for name, spec in FUNCTIONS.items() if not spec.deterministic)


def lookup(name: str) -> FunctionSpec | None:
    """The function called ``name`` in any letter case, or None."""
    return FUNCTIONS.get(name.upper())
