"""Who published what, read from the journal: the broker's publisher memory after a restart.

A restarted broker must answer a publisher's logon with the highest publisher sequence it
recorded for that client name and the bookmark of its last publish, and must still spot a
duplicate (protocol.md §4.2, §5.2). That takes one look at every record of the journal, on
every start: decoding each into a ``JournalRecord`` costs about 0.9 µs a record. This walk
reads the checked record views (``JournalReader.scan_views``, checksums and all) and takes
from each publish only its command, flags, client name and publisher sequence, keeping one
running mark per name: about half the time.
"""

from __future__ import annotations

import struct

from ampsctl.journal.codec import F_CLIENT_NAME, F_PUBLISHER_SEQUENCE, HEAD_SIZE
from ampsctl.journal.reader import JournalReader
from ampsctl.journal.record import Command

# Bytes 20-52 of the record head (codec.RECORD_HEAD): command, flags, the lengths of topic,
# message type, SOW key, correlation id and client name, then the publisher sequence.
_PUBLISH_FIELDS = struct.Struct("<20xBBHHHHH8xQ4x").unpack_from
_PUBLISHES = frozenset({int(Command.PUBLISH), int(Command.DELTA_PUBLISH)})


def publisher_marks(reader: JournalReader) -> dict[str, tuple[int | None, int]]:
    """For each client name with a publish or delta_publish in the journal: its highest
    publisher sequence (None: it never sent one) and the journal sequence of its last publish."""
    marks: dict[bytes, list[int]] = {}  # name -> [last journal sequence, highest publisher sequence or -1]
    unpack = _PUBLISH_FIELDS
    for view in reader.scan_views():
        data, offset = view[0], view[1]
        command, flags, topic, kind, key, correlation, name_length, publisher_sequence = unpack(data, offset)
        if command not in _PUBLISHES or not flags & F_CLIENT_NAME:
            continue  # sow_delete and expire, and anonymous publishes: nothing to remember
        start = offset + HEAD_SIZE + topic + kind + key + correlation
        name = data[start:start + name_length]
        mark = marks.get(name)
        if mark is None:
            mark = marks[name] = [0, -1]
        mark[0] = view[3]
        if flags & F_PUBLISHER_SEQUENCE and publisher_sequence > mark[1]:
            mark[1] = publisher_sequence
    # A name that is not UTF-8 can only come from a record crafted with a valid checksum; it
    # matches no logon either way.
    return {name.decode("utf-8", "surrogateescape"): (highest if highest >= 0 else None, last)
            for name, (last, highest) in marks.items()}
