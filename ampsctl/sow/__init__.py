"""The State of the World: SOW topics in memory, SOW files, recovery and journal compaction.

Modules, one concept each (issue 6; seeds 001 and 003; docs/formats.md "SOW file"; docs/sow.md):

* ``spec``: ``TopicSpec`` and ``topic_specs(model)``, what the config asks for;
* ``record``: ``SowRecord`` and ``Change``, the values the engine stores and reports;
* ``payloads``: parse, key, merge through ``ampsctl.messages`` (no second merge anywhere);
* ``indexing``: hash-index tokens and memo-index columns, narrowing only;
* ``history``: saved states for as-of queries (History Window/Granularity);
* ``topic``: the in-memory SOW of one concrete topic (publish, delta, delete, expire);
* ``store``: many topics, Pattern routing, ``apply(JournalRecord)``;
* ``query``: plan and run filter/SowKeys/order_by/top_n/select over any record source;
* ``sqlfilter``: sound SQL pre-filters on memo-indexed columns of a SOW file;
* ``sowfile``: the SQLite file format, reading and validation;
* ``filequery``: queries answered straight from a SOW file;
* ``checkpoint``: writing a group to its file (whole, incremental) and loading it back;
* ``recovery``: load files, replay the journal after them, expire what is due;
* ``compact``: the SOW files a journal implies at a point in time.

Layering: this package sits above ``config/``, ``journal/``, ``filter/`` and ``messages/``; it
opens no socket, starts no event loop and never reads the clock (``now`` is always passed in).
"""

from ampsctl.sow.record import Change, ChangeKind, SowRecord
from ampsctl.sow.spec import TopicSpec, topic_specs
from ampsctl.sow.store import SowStore, TopicGroup
from ampsctl.sow.topic import SowTopic

__all__ = ["Change", "ChangeKind", "SowRecord", "SowStore", "SowTopic", "TopicGroup", "TopicSpec", "topic_specs"]
