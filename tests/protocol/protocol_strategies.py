"""Hypothesis strategies for the protocol tests: raw frames, every command and every server
message, each generated in the canonical form its parser returns (so round trips compare equal):

- ids (cid, sub_id ...) never hold commas or surrounding spaces, as list items are trimmed;
- optional strings are None or non-empty (an empty header string reads as absent);
- publish topics have no regex characters; subscription topics may be valid patterns;
- options are built from the §8.2 table with the combinations parse accepts.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ampsctl.protocol import (
    SUPPORTED_ACKS,
    Ack,
    AckType,
    CommandKind,
    CommandOptions,
    DeltaPublish,
    DeltaSubscribe,
    Delivery,
    Flush,
    GroupBegin,
    GroupEnd,
    Heartbeat,
    HeartbeatAction,
    Logon,
    Oof,
    OofReason,
    OrderKey,
    Publish,
    ServerHeartbeat,
    Sow,
    SowAndDeltaSubscribe,
    SowAndSubscribe,
    SowBatch,
    SowDelete,
    SowRecord,
    Status,
    Subscribe,
    Unsubscribe,
)
from ampsctl.units import parse_interval

UINT64 = st.integers(0, 2**64 - 1)

# Any text JSON can carry (lone surrogates cannot be UTF-8 encoded, so no sender emits them),
# biased towards the characters that stress header scanning.
any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12) | st.text('{}[]"\\,: aé中', max_size=8)
some_text = any_text.filter(bool)
maybe_text = st.none() | some_text
ids = st.text("abcXYZ019-_:.", min_size=1, max_size=8)
maybe_id = st.none() | ids
base64_keys = st.text("ABCxyz0189+/=", min_size=1, max_size=12)
_LITERAL = "abcdeXYZ_019-/:é中 "
literal_topics = st.text(_LITERAL, min_size=1, max_size=12).filter(str.strip)
pattern_topics = st.sampled_from([".*_ORDERS", "^orders$", "a|b", "/space/C.*", "x(y|z)+"])
steps = st.text("abcxyz019_", min_size=1, max_size=4)
paths = st.lists(steps, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts))
bookmarks = st.sampled_from(["0", "0|1|", "recent", "12290412031115262887|17|", "20240101T120000.123456Z", "1|2|,1|3|"])
intervals = st.sampled_from(["2s", "500ms", "1m", "30", "1h"]).map(parse_interval)
json_bodies = st.sampled_from([b"", b"{}", b'{"id":1,"px":10.5,"qty":7}', b'{"s":"}{\\""}'])
bodies = json_bodies | st.binary(max_size=64)


# --------------------------------------------------------------------------------------
# raw frames
# --------------------------------------------------------------------------------------

header_values = st.one_of(
    any_text,
    UINT64,
    st.booleans(),
    st.lists(st.integers(0, 9) | any_text, max_size=3),  # nested: the scanner's slow path
    st.dictionaries(any_text, st.integers(0, 9), max_size=2),
)
raw_headers = st.dictionaries(st.sampled_from(["c", "cid", "t", "a", "s", "bs"]) | any_text, header_values, max_size=6)
raw_frames = st.tuples(raw_headers, bodies)


# --------------------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------------------


@st.composite
def command_options(draw: st.DrawFn) -> CommandOptions:
    flags = {name: draw(st.booleans()) for name in ("oof", "no_empties", "no_sowkey", "send_keys", "replace", "live")}
    flags |= {name: draw(st.booleans()) for name in ("timestamp", "fully_durable", "bookmark")}
    paused = draw(st.sampled_from(["", "pause", "resume"]))
    if paused:
        flags[paused] = True
    top_n = draw(st.none() | st.integers(0, 10**6))
    skip_n = draw(st.none() | st.integers(0, 10**6)) if top_n is not None else None
    select_entries = st.tuples(st.sampled_from("+-"), paths | st.just("/")).map("".join)
    select = draw(st.none() | st.lists(select_entries, min_size=1, max_size=3).map(tuple))
    user_names = draw(st.lists(st.sampled_from(["udo_coverage", "udo_x", "udo_region"]), unique=True, max_size=2))
    user_values = st.none() | st.sampled_from(["", "/space/C.*", "/x(a|b){1,3}", "eu"])
    return CommandOptions(
        **flags,
        top_n=top_n,
        skip_n=skip_n,
        conflation=draw(st.none() | intervals),
        conflation_key=draw(st.none() | st.lists(paths, min_size=1, max_size=3).map(tuple)),
        select=select,
        rate=draw(st.none() | st.sampled_from(["1x", "2.5x", "100"])),
        rate_max_gap=draw(st.none() | intervals),
        max_backlog=draw(st.none() | st.integers(0, 1000)),
        bookmark_not_found=draw(st.none() | st.sampled_from(["now", "epoch", "fail"])),
        ack_conflation=draw(st.none() | intervals),
        user=tuple((name, draw(user_values)) for name in user_names),
    )


order_keys = st.lists(st.builds(OrderKey, paths, st.booleans(), st.booleans()), max_size=3).map(tuple)


def acks_for(kind: CommandKind) -> st.SearchStrategy[frozenset[AckType]]:
    return st.frozensets(st.sampled_from(sorted(SUPPORTED_ACKS[kind])))


# --------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------

logons = st.builds(
    Logon,
    cid=maybe_id,
    acks=acks_for(CommandKind.LOGON),
    client_name=maybe_text,
    user_id=maybe_text,
    password=maybe_text,
    version=maybe_text,
    correlation_id=st.none() | base64_keys,
    message_type=st.none() | st.just("json"),
    options=command_options(),
)


def _publishes(cls: type[Publish] | type[DeltaPublish]) -> st.SearchStrategy[Publish | DeltaPublish]:
    return st.builds(
        cls,
        cid=maybe_id,
        acks=acks_for(cls.kind),
        topic=literal_topics,
        data=bodies,
        expiration=st.none() | UINT64,
        seq=st.none() | UINT64,
        correlation_id=st.none() | base64_keys,
        sow_key=st.none() | base64_keys,
        options=st.just(CommandOptions()) | command_options(),
    )


def _subscribes(cls: type[Subscribe] | type[DeltaSubscribe]) -> st.SearchStrategy[Subscribe | DeltaSubscribe]:
    return st.builds(
        cls,
        cid=maybe_id,
        acks=acks_for(cls.kind),
        topic=literal_topics | pattern_topics,
        sub_id=maybe_id,
        filter=maybe_text,
        bookmark=st.none() if cls is DeltaSubscribe else st.none() | bookmarks,
        options=command_options(),
    )


def _queries(cls: type[Sow] | type[SowAndSubscribe] | type[SowAndDeltaSubscribe]) -> st.SearchStrategy[object]:
    extra = {} if cls is Sow else {"sub_id": maybe_id}
    return st.builds(
        cls,
        cid=maybe_id,
        acks=acks_for(cls.kind),
        topic=literal_topics | pattern_topics,
        query_id=maybe_id,
        filter=maybe_text,
        sow_keys=st.lists(base64_keys, max_size=3).map(tuple),
        batch_size=st.integers(1, 10_000),
        orderby=order_keys,
        bookmark=st.none() if cls is SowAndDeltaSubscribe else st.none() | bookmarks,
        options=command_options(),
        **extra,
    )


@st.composite
def sow_deletes(draw: st.DrawFn) -> SowDelete:
    form = draw(st.sampled_from(["filter", "sow_keys", "data", "bookmark"]))
    values = {
        "filter": some_text,
        "sow_keys": st.lists(base64_keys, min_size=1, max_size=3).map(tuple),
        "data": bodies.filter(bool),
        "bookmark": bookmarks,
    }
    return SowDelete(
        cid=draw(maybe_id),
        acks=draw(acks_for(CommandKind.SOW_DELETE)),
        topic=draw(literal_topics | pattern_topics),
        **{form: draw(values[form])},
    )


unsubscribes = st.builds(
    Unsubscribe,
    cid=maybe_id,
    acks=acks_for(CommandKind.UNSUBSCRIBE),
    sub_ids=st.lists(ids | st.just("all"), max_size=3).map(tuple),
    query_ids=st.lists(ids, max_size=3).map(tuple),
).filter(lambda command: command.sub_ids or command.query_ids)

heartbeats = st.sampled_from(HeartbeatAction).flatmap(
    lambda action: st.builds(
        Heartbeat,
        cid=maybe_id,
        acks=acks_for(CommandKind.HEARTBEAT),
        action=st.just(action),
        interval=st.integers(1, 3600) if action is HeartbeatAction.START else st.none(),
    )
)
flushes = st.builds(Flush, cid=maybe_id, acks=acks_for(CommandKind.FLUSH), client_name=maybe_text)

COMMANDS: dict[CommandKind, st.SearchStrategy[object]] = {
    CommandKind.LOGON: logons,
    CommandKind.PUBLISH: _publishes(Publish),
    CommandKind.DELTA_PUBLISH: _publishes(DeltaPublish),
    CommandKind.SUBSCRIBE: _subscribes(Subscribe),
    CommandKind.DELTA_SUBSCRIBE: _subscribes(DeltaSubscribe),
    CommandKind.SOW: _queries(Sow),
    CommandKind.SOW_AND_SUBSCRIBE: _queries(SowAndSubscribe),
    CommandKind.SOW_AND_DELTA_SUBSCRIBE: _queries(SowAndDeltaSubscribe),
    CommandKind.SOW_DELETE: sow_deletes(),
    CommandKind.UNSUBSCRIBE: unsubscribes,
    CommandKind.HEARTBEAT: heartbeats,
    CommandKind.FLUSH: flushes,
}


# --------------------------------------------------------------------------------------
# server messages
# --------------------------------------------------------------------------------------

maybe_count = st.none() | UINT64
acks = st.builds(
    Ack,
    st.sampled_from(AckType),
    st.sampled_from(Status),
    maybe_id,
    st.none() | any_text,
    topic=maybe_text,
    sub_id=maybe_id,
    query_id=maybe_id,
    client_name=maybe_text,
    user_id=maybe_text,
    password=maybe_text,
    version=maybe_text,
    seq=maybe_count,
    bookmark=st.none() | bookmarks,
    options=maybe_text,
    matches=maybe_count,
    topic_matches=maybe_count,
    records_returned=maybe_count,
    records_inserted=maybe_count,
    records_updated=maybe_count,
    records_deleted=maybe_count,
)
receivers = st.lists(ids, max_size=3).map(tuple)
timestamps = st.none() | st.just("20240101T120000.123456Z")
deliveries = st.builds(
    Delivery,
    topic=literal_topics,
    data=bodies,
    sub_ids=receivers,
    correlation_id=st.none() | base64_keys,
    sow_key=st.none() | base64_keys,
    bookmark=st.none() | bookmarks,
    timestamp=timestamps,
    seq=maybe_count,
    lease_period=timestamps,
)
sow_records = st.builds(
    SowRecord,
    data=bodies,
    sow_key=st.none() | base64_keys,
    correlation_id=st.none() | base64_keys,
    bookmark=st.none() | bookmarks,
    timestamp=timestamps,
)
sow_batch_messages = st.builds(
    SowBatch,
    topic=literal_topics,
    records=st.lists(sow_records, max_size=4).map(tuple),
    query_id=maybe_id,
    sub_id=maybe_id,
    timestamp=timestamps,
    group_seq=st.none() | st.integers(1, 1000),
)
oofs = st.builds(
    Oof,
    topic=literal_topics,
    reason=st.sampled_from(OofReason),
    sow_key=st.none() | base64_keys,
    sub_ids=receivers,
    data=bodies,
    correlation_id=st.none() | base64_keys,
    bookmark=st.none() | bookmarks,
    timestamp=timestamps,
)
server_messages = st.one_of(
    acks,
    deliveries,
    sow_batch_messages,
    oofs,
    st.builds(GroupBegin, query_id=maybe_id, sub_id=maybe_id),
    st.builds(GroupEnd, query_id=maybe_id, sub_id=maybe_id),
    st.just(ServerHeartbeat()),
)
