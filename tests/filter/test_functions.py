"""Scalar function implementations (ampsctl/filter/functions.py), NULL inputs included (§9)."""

from __future__ import annotations

import math
import time

import pytest

from ampsctl.filter import functions as fn
from ampsctl.filter.errors import FilterError
from ampsctl.filter.functions import IMPLEMENTATIONS

NULLS = [None, "", []]


def call(name, *args):
    return IMPLEMENTATIONS[name](*args)


# name, arguments, expected result
CASES = [
    ("UPPER", ("Buy",), "BUY"),
    ("UPPER", ("\u00e9a",), "\u00e9A"),  # ASCII only
    ("UPPER", ([["x"], "y"],), "X"),  # first element of an array
    ("LOWER", ("MSFT",), "msft"),
    ("LOWER", (12,), "12"),
    ("CONCAT", ("MSFT", "-", "Buy"), "MSFT-Buy"),
    ("CONCAT", ("a", None, "", 1, 2.5, True), "a12.5true"),  # NULL counts as '' (A9)
    ("CONCAT", (None,), ""),
    ("INSTR", ("MSFT", "SF"), 2),
    ("INSTR", ("MSFT", "zz"), 0),
    ("INSTR", ("MSFT", "sf"), 0),  # case-sensitive
    ("INSTR", (12345, 34), 3),
    ("INSTR_I", ("MSFT", "sf"), 2),
    ("INSTR_I", ("MSFT", "zz"), 0),
    ("STREQUAL_I", ("MSFT", "msft"), 1),
    ("STREQUAL_I", ("MSFT", "msf"), 0),
    ("SUBSTR", ("fandango", 5), "ango"),
    ("SUBSTR", ("MSFT", 2, 2), "SF"),
    ("SUBSTR", ("MSFT", 0, 2), "MS"),  # position 0 acts as 1 (Spark)
    ("SUBSTR", ("MSFT", -2), "FT"),  # negative counts from the end (Spark)
    ("SUBSTR", ("MSFT", -6, 3), "M"),
    ("SUBSTR", ("MSFT", 2, -1), ""),
    ("SUBSTR", ("MSFT", 9), ""),
    ("SUBSTR", ("MSFT", "2", 2.9), "SF"),  # numbers convert; lengths truncate
    ("REVERSE", ("ango",), "ogna"),
    ("REVERSE", (123,), "321"),
    ("LENGTH", ("MSFT",), 4),
    ("LENGTH", ("\u00e9",), 2),  # bytes of the UTF-8 text
    ("LENGTH", (24.0,), 4),
    ("TRIM", ("  a b \t",), "a b"),
    ("TRIM", ("xxaxx", "x"), "a"),
    ("LTRIM", ("  a  ",), "a  "),
    ("RTRIM", ("  a  ",), "  a"),
    ("RTRIM", ("a--", "-"), "a"),
    ("REPLACE", ("a.b.c", ".", "/"), "a/b/c"),
    ("REPLACE", ("a.b.c", ".", ""), "abc"),  # '' replacement deletes
    ("REPLACE", ("a.b.c", ".", None), "abc"),
    ("REGEXP_MATCH", ("order-1234-x", r"\d+"), "1234"),
    ("REGEXP_MATCH", ("order", r"\d+"), None),
    ("REGEXP_REPLACE", ("a1b22", r"\d+", "#"), "a#b#"),
    ("REGEXP_REPLACE", ("John Smith", r"(\w+) (\w+)", r"\2, \1"), "Smith, John"),
    ("REGEXP_REPLACE", ("a1b2", r"\d", None), "ab"),
    ("ABS", (-3,), 3),
    ("ABS", (-2.5,), 2.5),
    ("ABS", ("-7",), 7),
    ("ABS", (-(2**63),), 2**63),
    ("ROUND", (2.5,), 3.0),  # half away from zero, not banker's
    ("ROUND", (-2.5,), -3.0),
    ("ROUND", (2.675, 2), 2.68),  # on the decimal text, not the binary value
    ("ROUND", (1234, -2), 1200),
    ("ROUND", (1250, -2), 1300),
    ("ROUND", (-1250, -2), -1300),
    ("ROUND", (7, 2), 7),
    ("ROUND", (0.5, 2000055), 0.5),
    ("ROUND", (1e300, 2), 1e300),
    ("ROUND", (5e-324, 400), 5e-324),
    ("ROUND", (2**64 - 1, -2000055), 0),
    ("ROUND", (1.5e300, -2000055), 0.0),
    ("ROUND", (1.7e308, -308), math.inf),
    ("CEILING", (1.2,), 2),
    ("CEILING", (-1.2,), -1),
    ("CEILING", (5,), 5),
    ("FLOOR", (1.8,), 1),
    ("FLOOR", (-1.2,), -2),
    ("FLOOR", ("3.5",), 3),
    ("IF", (True, "big", "small"), "big"),
    ("IF", (False, "big", "small"), "small"),
    ("IF", (None, "big", "small"), "small"),  # NULL condition takes the false branch
    ("IF", (2, [1, 2], 0), 1),
    ("COALESCE", (None, "", [], "dflt"), "dflt"),
    ("COALESCE", (0, 1), 0),
    ("COALESCE", ([None, 2], 3), 3),
    ("COALESCE", (None, None), None),
    ("TRUE_VALUE", (), True),
    ("FALSE_VALUE", (), False),
    ("CHAR_VALUE", (65,), "A"),
    ("CHAR_VALUE", (1,), "\x01"),
    ("CHAR_VALUE", (255,), "\xff"),
    ("CHAR_VALUE", (256,), None),
    ("CHAR_VALUE", (-1,), None),
    ("CHAR_VALUE", (65.5,), None),
    ("CHAR_VALUE", ("66",), "B"),
    ("CHAR_VALUE", (math.inf,), None),
    ("CHAR_VALUE", (math.nan,), None),
    ("STRFTIME", ("%Y-%m-%d %H:%M:%S", 0), "1970-01-01 00:00:00"),
    ("STRFTIME", ("%H:%M:%S.%f", 1.5), "00:00:01.500000"),
    ("STRFTIME", ("%S.%03f|%%f", 61.25), "01.250|%f"),
    ("STRFTIME", ("%Y", 1e300), None),
    ("STRFTIME", ("%Y", math.nan), None),
    ("STRPTIME", ("1970-01-02", "%Y-%m-%d"), 86400.0),
    ("STRPTIME", ("1970-01-01 00:00:01.250", "%Y-%m-%d %H:%M:%S.%03f"), 1.25),
    ("STRPTIME", ("1970-01-01T01:00:00+0100", "%Y-%m-%dT%H:%M:%S%z"), 0.0),
    ("STRPTIME", ("not a date", "%Y"), None),
    ("STRPTIME", ("2020", "%Y%Y"), None),
    ("STRPTIME", ("2020", "%"), None),
]


@pytest.mark.parametrize(("name", "args", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_function(name, args, expected):
    result = call(name, *args)
    assert result == expected and type(result) is type(expected)


# Every NULL-propagating function, with the arguments it needs; each position is tried as NULL.
NULL_PROPAGATING = {
    "UPPER": ("a",),
    "LOWER": ("a",),
    "INSTR": ("ab", "b"),
    "INSTR_I": ("ab", "b"),
    "STREQUAL_I": ("a", "a"),
    "SUBSTR": ("abc", 1, 2),
    "REVERSE": ("ab",),
    "LENGTH": ("ab",),
    "TRIM": (" a ", " "),
    "LTRIM": (" a ", " "),
    "RTRIM": (" a ", " "),
    "REPLACE": ("ab", "a"),  # the replacement is not NULL-propagating (it deletes)
    "REGEXP_MATCH": ("ab", "a"),
    "REGEXP_REPLACE": ("ab", "a"),
    "ABS": (1,),
    "ROUND": (1.5, 0),
    "CEILING": (1.5,),
    "FLOOR": (1.5,),
    "CHAR_VALUE": (65,),
    "STRFTIME": ("%Y", 0),
    "STRPTIME": ("1970", "%Y"),
}
_EXTRA = {"REPLACE": ("x",), "REGEXP_REPLACE": ("x",)}


@pytest.mark.parametrize("name", sorted(NULL_PROPAGATING))
@pytest.mark.parametrize("null", NULLS, ids=["None", "empty-string", "empty-array"])
def test_null_in_null_out(name, null):
    args = NULL_PROPAGATING[name]
    assert call(name, *args, *_EXTRA.get(name, ())) is not None
    for position in range(len(args)):
        nulled = args[:position] + (null,) + args[position + 1 :]
        assert call(name, *nulled, *_EXTRA.get(name, ())) is None, (name, position)


def test_non_numeric_arguments_are_null():
    assert call("ABS", "abc") is None
    assert call("SUBSTR", "abc", "x") is None
    assert call("SUBSTR", "abc", 1, math.nan) is None
    assert call("ROUND", 1.5, "x") is None


def test_special_floats():
    assert math.isnan(call("NAN_VALUE"))
    assert math.isnan(call("ROUND", math.nan))
    assert call("CEILING", math.inf) == math.inf
    assert math.isnan(call("FLOOR", math.nan))
    assert call("ABS", -math.inf) == math.inf


def test_unix_timestamp_reads_the_clock_at_call_time():
    before = time.time()
    stamp = call("UNIX_TIMESTAMP")
    assert isinstance(stamp, float) and before <= stamp <= time.time()


def test_strftime_output_is_bounded():
    result = call("STRFTIME", "%Y" * 100, 0)
    assert len(result.encode()) == 128


def test_regex_functions_raise_filter_errors():
    with pytest.raises(FilterError):
        call("REGEXP_MATCH", "abc", "(")
    with pytest.raises(FilterError):
        call("REGEXP_REPLACE", "abc", "(b)", r"\2")


def test_lazy_set_names_implemented_functions():
    assert fn.LAZY <= IMPLEMENTATIONS.keys()


def test_every_catalog_function_is_implemented():
    catalog = pytest.importorskip("ampsctl.filter.catalog")
    missing = sorted(
        name for name, spec in catalog.FUNCTIONS.items() if not spec.aggregate and name not in IMPLEMENTATIONS
    )
    assert not missing, f"catalog functions without an implementation: {missing}"
    unknown = sorted(set(IMPLEMENTATIONS) - set(catalog.FUNCTIONS))
    assert not unknown, f"implementations the catalog does not list: {unknown}"
    assert not (set(catalog.AGGREGATES) & set(IMPLEMENTATIONS))


def test_catalog_arity_fits_the_implementations():
    """The catalog's min/max arguments must be callable on the implementation."""
    import inspect

    catalog = pytest.importorskip("ampsctl.filter.catalog")
    for name, spec in catalog.FUNCTIONS.items():
        if spec.aggregate or name not in IMPLEMENTATIONS:
            continue
        signature = inspect.signature(IMPLEMENTATIONS[name])
        counts = [spec.min_args] + ([spec.max_args] if spec.max_args is not None else [spec.min_args + 3])
        for count in counts:
            signature.bind(*([1] * count))  # raises TypeError on a mismatch
