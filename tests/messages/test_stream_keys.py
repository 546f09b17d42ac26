"""keys.canon_id, the cheap record identity that stream folding groups by: equal exactly when canon is."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ampsctl.errors import InputError
from ampsctl.messages.keys import canon, canon_id


def _outcome(function: Any, value: Any) -> Any:
    try:
        return ("ok", function(value))
    except (InputError, UnicodeEncodeError) as exc:
        return ("error", type(exc), str(exc))


# Text as codecs produce it (orjson, surrogateescape decoding) and as callers might pass it.
texts = st.one_of(
    st.text(max_size=4),
    st.text(alphabet=st.sampled_from(["a", "1", "é", "\x00", "\udcc3", "\udca9", "\ud800", " "]), max_size=4),
    st.sampled_from(["", "true", "false", "1", "1.0", "é", "\udcc3\udca9"]),
)
# Around the edges of canon_id's int ids: decimal text of at most 18 characters.
edges = [10**18 - 1, 10**18, -(10**17) + 1, -(10**17), 0]
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    texts,
    st.from_regex(r"-?[0-9]{1,3}", fullmatch=True),
    st.sampled_from(edges + [str(edge) for edge in edges] + ["07", "-0", "-", "+1", " 1", "1_0", "٣"]),
    st.binary(max_size=3),
    st.sampled_from([b"", b"1", b"-7", b"\xc3\xa9", b"\x00"]),
)


@given(values, values)
def test_canon_id_equal_exactly_when_canon_is(a: Any, b: Any) -> None:
    canons = [_outcome(canon, value) for value in (a, b)]
    ids = [_outcome(canon_id, value) for value in (a, b)]
    for want, have in zip(canons, ids, strict=True):  # the same errors as canon
        assert (want[0] == "error") == (have[0] == "error")
        if want[0] == "error":
            assert have == want
    if canons[0][0] == canons[1][0] == "ok":
        assert (ids[0][1] == ids[1][1]) == (canons[0][1] == canons[1][1])


@pytest.mark.parametrize(
    ("a", "b"),
    [(1, "1"), (-7, b"-7"), (10**18, "1000000000000000000"), (True, "true"), (None, ""), (1.5, "1.5"), ("é", "é".encode()), ("\udcc3\udca9", "é"), (b"id", "id")],
)
def test_canon_id_same_record(a: Any, b: Any) -> None:
    assert canon(a) == canon(b)
    assert canon_id(a) == canon_id(b)


@pytest.mark.parametrize(("a", "b"), [(1, 1.0), (1, True), ("1", "01"), (0, "-0"), (None, "N"), (None, b""), ("a", b"a\xff")])
def test_canon_id_different_records(a: Any, b: Any) -> None:
    assert canon_id(a) != canon_id(b)


def test_canon_id_errors_are_canons() -> None:
    with pytest.raises(InputError, match="NUL"):
        canon_id("a\x00b")
    with pytest.raises(InputError, match="cannot be a SOW key value"):
        canon_id(object())
