"""JSON field access (ampsctl/messages/json_record.py): paths, subscripts, arrays of objects."""

from __future__ import annotations

import pytest

from ampsctl.errors import InputError
from ampsctl.filter.ast import Field, Step
from ampsctl.messages.json_record import JsonRecord

DOC = {
    "id": 42,
    "notes": "",
    "nothing": None,
    "customer": {"name": "Patrick", "address": {"city": "Nashville"}},
    "data": [1, 2, 3, "zebra", 5],
    "items": [{"q": 1, "tags": ["a", "b"]}, {"q": 2}, {"r": 3}, 7, {"q": None, "tags": ["c"]}],
    "orders": [{"legs": [{"px": 1.5}, {"px": 2.5}]}, {"legs": [{"px": 3.5}]}],
    "Not Xpath Name": "spaced",
    "@odd": "at-key",
    "flag": True,
}
RECORD = JsonRecord(DOC)


def path(*steps: str | tuple[str, int], bracketed: bool = False, qualifier: tuple[str, ...] = ()) -> Field:
    built = tuple(Step(s) if isinstance(s, str) else Step(s[0], s[1]) for s in steps)
    return Field(built, bracketed=bracketed, qualifier=qualifier)


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        (path("id"), 42),
        (path("flag"), True),
        (path("notes"), ""),  # returned as is; the evaluator treats '' as NULL
        (path("nothing"), None),
        (path("absent"), None),
        (path("customer", "name"), "Patrick"),
        (path("customer", "address", "city"), "Nashville"),
        (path("customer", "absent", "city"), None),
        (path("id", "deeper"), None),  # a step into a scalar
        (path("data"), [1, 2, 3, "zebra", 5]),
        (path(("data", 0)), 1),
        (path(("data", 3)), "zebra"),
        (path(("data", 5)), None),  # out of range (A11)
        (path(("id", 0)), 42),  # a scalar acts as a one-element array
        (path(("id", 1)), None),
        (path("items", "q"), [1, 2]),  # A10: each element's value; missing and null left out
        (path("items", "absent"), []),  # none has it: the empty array, i.e. NULL
        (path(("items", 1), "q"), 2),
        (path(("items", 2), "q"), None),
        (path("items", ("q", 1)), 2),
        (path("items", "tags"), [["a", "b"], ["c"]]),
        (path("orders", "legs", "px"), [1.5, 2.5, 3.5]),  # nested arrays of objects flatten
        (path(("orders", 1), "legs", "px"), [3.5]),
        (path("customer", "@name"), None),  # XML attributes do not exist in JSON
        (path("@odd"), None),
        (path("@odd", bracketed=True), "at-key"),  # a bracketed name is literal
        (path("Not Xpath Name", bracketed=True), "spaced"),
        (path("id", qualifier=("json", "orders")), 42),  # the view qualifier is not a path step
    ],
)
def test_get(field, expected):
    assert RECORD.get(field) == expected


def test_top_level_array_and_scalar_documents():
    assert JsonRecord([{"a": 1}, {"a": 2}]).get(path("a")) == [1, 2]
    assert JsonRecord(5).get(path("a")) is None


def test_from_bytes():
    record = JsonRecord.from_bytes(b'{"a": {"b": [1, 2]}, "big": 18446744073709551615}')
    assert record.get(path("a", ("b", 1))) == 2
    assert record.get(path("big")) == 2**64 - 1
    assert JsonRecord.from_bytes('{"s": "\u00e9"}').get(path("s")) == "\u00e9"


@pytest.mark.parametrize("raw", [b"", b"{", b'{"a": 1} x', b"\xff\xfe", b"NaN"])
def test_from_bytes_rejects_bad_json(raw):
    with pytest.raises(InputError) as info:
        JsonRecord.from_bytes(raw)
    assert info.value.exit_code == 3 and info.value.hint


def test_record_is_immutable():
    with pytest.raises(AttributeError):
        RECORD.data = {}  # type: ignore[misc]


class SubDict(dict):
    """A dict subclass: ``get`` reads it through the general step, with the same result."""


@pytest.mark.parametrize(
    ("data", "field", "expected"),
    [
        ({"a": {"@b": 1}}, path("a", "@b"), None),  # '@' after a plain step: still an attribute
        ({"a": {"@b": 1}}, path("a", "@b", bracketed=True), 1),
        ({"": 5}, path(""), 5),  # an empty name (hand-built AST) is a plain key
        (SubDict(a=SubDict(b=2)), path("a", "b"), 2),
        ({"a": SubDict(b=[{"c": 3}])}, path("a", "b", "c"), [3]),
        ({"a": {"b": [1, 2]}}, path("a", ("b", 1)), 2),  # plain step, then a subscript
        ({"a": [{"b": {"c": 4}}]}, path("a", "b", "c"), [4]),  # array, then a plain dict again
        ({"a": {"b": None}}, path("a", "b", "c"), None),
        ({"a": {"b": False}}, path("a", "b"), False),  # a false value is a value, not NULL
        ({"a": 0}, path("a", "b"), None),
    ],
)
def test_plain_steps_and_the_general_step_agree(data, field, expected):
    assert JsonRecord(data).get(field) == expected
    assert type(JsonRecord(data).get(field)) is type(expected)
