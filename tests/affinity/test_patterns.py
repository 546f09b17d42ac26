"""The pattern finders give the regex search's answer, whichever path they take."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ampsctl.affinity.patterns import finder, search
from ampsctl.filter.regexes import compile_pattern

# Literals, anchors and the bits that must send a pattern to the regex engine.
PIECES = st.sampled_from(["^", "$", ".*", "a", "b", "/t/", "\n", "\\.", "\\$", ".", "[ab]", "(?i)", "A", "x|y", "\\"])
TEXTS = st.text(alphabet="ab/tAxy.$\n", max_size=8)


@settings(max_examples=1000, deadline=None)
@given(pieces=st.lists(PIECES, max_size=5), texts=st.lists(TEXTS, min_size=1, max_size=6), remember=st.sampled_from([0, 2]))
@example(pieces=["^", "/t/"], texts=["/t/A", "x/t/"], remember=0)
@example(pieces=["a", "$"], texts=["a", "a\n", "a\n\n", "ba\n"], remember=0)
@example(pieces=["^", "a", "$"], texts=["a", "a\n", "a\n\n", "\na"], remember=0)
@example(pieces=["a", ".*"], texts=["a", "\na", "b"], remember=0)
@example(pieces=["a", "\\.", ".*"], texts=["a", "a.", "a..", "b"], remember=0)
def test_finder_agrees_with_the_regex_search(pieces: list[str], texts: list[str], remember: int) -> None:
    try:
        pattern = compile_pattern("".join(pieces))
    except Exception:
        return
    find = finder(pattern, remember=remember)
    for text in texts * 2:  # twice: a remembered verdict must be the same verdict
        assert find(text) == search(pattern, text), (pattern.pattern, text)
