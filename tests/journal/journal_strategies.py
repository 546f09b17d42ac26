"""Hypothesis strategies for journal records (any value the format can hold)."""

from __future__ import annotations

from hypothesis import strategies as st

from ampsctl.journal.record import Command, JournalRecord

texts = st.text(max_size=40)
optional_texts = st.none() | texts
u64 = st.integers(min_value=0, max_value=(1 << 64) - 1)
records = st.builds(
    JournalRecord,
    sequence=u64,
    timestamp=st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
    command=st.sampled_from(Command),
    topic=texts,
    message_type=st.sampled_from(["json", "xml", "fix", "nvfix", "bflat"]) | texts,
    payload=st.binary(max_size=300),
    sow_key=optional_texts,
    expiration=st.none() | u64,
    correlation_id=optional_texts,
    client_name=optional_texts,
    publisher_sequence=st.none() | u64,
)
