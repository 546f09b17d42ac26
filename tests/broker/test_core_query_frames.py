"""``queries.result_frames`` builds a query's ``sow`` frames directly; the bytes are those of
``protocol.messages.sow_batches`` + ``SowBatch.encode`` over ``SowRecord``s (the way it was
built before, kept here as the reference)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from ampsctl.broker.core.queries import result_frames
from ampsctl.broker.core.select import SelectList
from ampsctl.messages.json_codec import JSON
from ampsctl.protocol.messages import SowRecord as WireRecord
from ampsctl.protocol.messages import sow_batches
from ampsctl.sow.query import Row
from ampsctl.sow.record import SowRecord


def _reference(rows: list[Row], *, batch_size: int, query_id: str | None, sub_id: str | None,
               select: SelectList | None, no_sowkey: bool) -> list[bytes]:
    frames: list[bytes] = []
    number = start = 0
    while start < len(rows):
        topic = rows[start].record.topic
        end = start
        while end < len(rows) and rows[end].record.topic == topic:
            end += 1
        records = [WireRecord(data=row.record.payload if select is None else JSON.serialize(select.apply(row.doc)),
                              sow_key=None if no_sowkey else row.record.key) for row in rows[start:end]]
        for batch in sow_batches(topic, records, batch_size, query_id=query_id, sub_id=sub_id):
            number += 1
            frames.append(replace(batch, group_seq=number).encode())
        start = end
    return frames


def _row(topic: str, key: str, doc: dict[str, Any]) -> Row:
    return Row(SowRecord(topic, key, orjson.dumps(doc), 1, 2, None, None), doc)


rows = st.lists(st.builds(_row, st.sampled_from(["orders", "desk_1", "ü\"t"]), st.text(min_size=1, max_size=6),
                          st.fixed_dictionaries({"id": st.integers(-(2**63), 2**63 - 1), "v": st.text(max_size=4)})), max_size=25)


@given(rows, st.integers(1, 6), st.none() | st.text(max_size=4), st.none() | st.text(max_size=4),
       st.sampled_from([None, ("+/id",), ("-/v",)]), st.booleans())
def test_result_frames_are_the_sow_batches_encoding(rows: list[Row], batch_size: int, query_id: str | None,
                                                    sub_id: str | None, select: tuple[str, ...] | None,
                                                    no_sowkey: bool) -> None:
    selected = SelectList(select) if select is not None else None
    options = {"batch_size": batch_size, "query_id": query_id, "sub_id": sub_id, "select": selected,
               "no_sowkey": no_sowkey}
    assert result_frames(rows, **options) == _reference(rows, **options)
