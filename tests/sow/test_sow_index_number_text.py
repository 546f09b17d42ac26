"""Index values of numbers that kept their JSON text (``json_numbers.FloatText``/``IntText``).

A delta merge in the SOW keeps each number's published text (docs/messages.md, "Number
text"), so the stored document holds such numbers. The hash tokens and memo columns of that
document must be those of the same message parsed plainly, which is what recovery, ``sow stats
--verify`` and a compacted file compute: the number's value, never "matches anything"
(``ANY``) or a complex record."""

from __future__ import annotations

import pytest

from ampsctl.messages.json_codec import JSON, JSON_TEXT
from ampsctl.messages.json_numbers import FloatText, IntText
from ampsctl.sow.indexing import ANY, Indexer, literal_tokens

MESSAGES = [
    b'{"v":1E5}', b'{"v":1.50}', b'{"v":-0}', b'{"v":12345678901234567890123}', b'{"v":0.000001}',
    b'{"v":-1.0e2}', b'{"v":[1.50,2]}', b'{"v":{"w":1E5}}', b'{"v":"1.50"}',
]


@pytest.mark.parametrize("raw", MESSAGES)
def test_a_number_that_kept_its_text_indexes_as_its_value(raw: bytes) -> None:
    indexer = Indexer(("/v",), (("/v", "/k"),), ("/v",))
    text, plain = JSON_TEXT.parse(raw), JSON.parse(raw)
    text["k"], plain["k"] = FloatText(2.5, b"2.50"), 2.5  # a composite index too
    assert indexer.hash_tokens(JSON.record(text)) == indexer.hash_tokens(JSON.record(plain))
    columns = indexer.memo_columns(JSON.record(text))
    assert columns == indexer.memo_columns(JSON.record(plain))
    assert [type(value) for value in columns[0]] == [type(value) for value in indexer.memo_columns(JSON.record(plain))[0]]


def test_the_tokens_are_precise() -> None:
    indexer = Indexer(("/v",), (), ("/v",))
    for number, token in ((FloatText(100000.0, b"1E5"), b"n100000"), (FloatText(1.5, b"1.50"), b"n1.5"),
                          (IntText(0, b"-0"), b"n0")):
        record = JSON.record({"v": number})
        assert indexer.hash_tokens(record) == (token,) != (ANY,)
        assert indexer.memo_columns(record) == ([float(number) if isinstance(number, float) else 0, None], False)
        assert literal_tokens([[float(number)]]) == [token]  # what `/v = 1.5` looks up
