"""AMPS option strings (spec/protocol.md §8.1), ampsctl/options.py."""

from __future__ import annotations

import pytest

from ampsctl.errors import InputError
from ampsctl.options import parse_options, split_options


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("oof", ["oof"]),
        ("oof,", ["oof"]),  # client constants are comma-terminated
        ("oof,no_empties,", ["oof", "no_empties"]),
        ("conflation=2s, conflation_key = [/tickerId]", ["conflation=2s", "conflation_key = [/tickerId]"]),
        ("select=[-/,+/a,+/b/c],oof", ["select=[-/,+/a,+/b/c]", "oof"]),
        ("grouping=[/a,/b],projection=[SUM(/q) AS /q,/a]", ["grouping=[/a,/b]", "projection=[SUM(/q) AS /q,/a]"]),
        ("udo_coverage=/space/(A|B){1,3},oof", ["udo_coverage=/space/(A|B){1,3}", "oof"]),
        (r"udo_coverage=/x\(,oof", [r"udo_coverage=/x\(", "oof"]),  # an escaped bracket opens nothing
        ("", []),
        (" , ,", []),
    ],
)
def test_split_only_at_depth_zero_commas(text: str, tokens: list[str]) -> None:
    assert split_options(text) == tokens


def test_parse_flags_values_and_repeats() -> None:
    assert parse_options("oof, top_n=10,udo_coverage=/space/C.*,empty=,top_n=5") == {
        "oof": None,
        "top_n": "5",  # the last setting wins
        "udo_coverage": "/space/C.*",
        "empty": "",
    }


def test_unbalanced_brackets_keep_the_rest_in_one_value() -> None:
    assert parse_options("udo_coverage=(,oof") == {"udo_coverage": "(,oof"}


def test_a_token_without_a_name_is_an_error() -> None:
    with pytest.raises(InputError, match="no name") as caught:
        parse_options("oof,=5")
    assert caught.value.hint
