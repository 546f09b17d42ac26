"""SOW/Topic storage: Durability, the SOW file and how the file grows (spec/config.md §2.1,
seeds 001 and 003).

A persistent topic (the default) keeps its State of the World in FileName, where ``%n``
expands to the topic name and message type; ``ConfigModel.sow_files`` does that expansion
once for SOWT-006 and SOWT-030. Sizes and counts are read with the ``common`` helpers: an
unreadable value is skipped here and reported by the UNIT rules.
"""

from __future__ import annotations

from collections.abc import Iterator

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, SowEntry
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.common import bytes_in, bytes_of, candidates, count_in, count_of, line_of, unexpanded

DURABILITIES = ("persistent", "transient")
MAX_INITIAL_SLAB_COUNT = 1024
MAX_SLAB_SIZE = 1024**3  # 1GB; compared with the 1000-based reading so only a size over 1GB either way is flagged
SMALL_SLAB_SIZE = 1_000_000  # 1MB; compared with the 1024-based reading
DEPRECATED_GROWTH = {"RecordSize": "SlabSize", "InitialSize": "InitialSlabCount", "IncrementSize": "SlabSize"}


def _shared_files(model: ConfigModel) -> list[tuple[SowEntry, SowEntry, str]]:
    """(later topic, first topic, path) for each persistent topic whose file is already used."""
    clashes = []
    for path, owners in model.sow_files.items():
        first = owners[0]
        for topic in owners[1:]:
            if (first.name, first.message_type) != (topic.name, topic.message_type):
                clashes.append((topic, first, path))
    return clashes


# ---------------------------------------------------------------------------------------
# SOWT-004 .. SOWT-007: durability and the SOW file
# ---------------------------------------------------------------------------------------


@rule(
    "SOWT-004", "sow-topic-filename-required", Severity.ERROR,
    "A persistent SOW topic needs a FileName.",
    description="Durability defaults to `persistent`, and a persistent topic stores its State of the World "
    "in FileName (`%n` expands to the topic name and message type). Only a `transient` topic may omit it.",
    source="seed 001 (SOW/Topic)",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def filename_required(model: ConfigModel) -> Iterator[Issue]:
    transient = {topic for topic, _ in model.child_texts("Durability", first_only=True).get("transient", ())}
    with_file = len(model.topics_with("FileName")) - sum(1 for topic in transient if topic.has("FileName"))
    empty = [topic for topic, _ in model.child_texts("FileName", first_only=True).get("", ())]
    if with_file == len(model.topics) - len(transient) and not empty:
        return  # every persistent topic has a FileName: no need to look for the ones without
    for topic in model.topics_without("FileName") + empty:
        if topic not in transient:
            yield Issue(
                topic.el,
                f"{topic.label()} is persistent but has no FileName",
                "add <FileName>./sow/%n.sow</FileName>, or set <Durability>transient</Durability>",
                at_text=False,
            )


@rule(
    "SOWT-005", "sow-topic-durability-value", Severity.ERROR,
    "Durability (or Duration) must be persistent or transient.",
    description="`persistent` (the default) keeps the topic in FileName across restarts; `transient` keeps it "
    "in memory only. The values are lower case; `Duration` is the pre-4.0.0.1 name of the element.",
    source="seed 001 (SOW/Topic)",
    bad="""  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>memory</Durability>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
    </Topic>
  </SOW>""",
)
def durability_value(model: ConfigModel) -> Iterator[Issue]:
    for value, found in model.child_texts("Durability").items():
        if value in DURABILITIES or unexpanded(value):
            continue
        hint = f"write {value.lower()} (lower case)" if value.lower() in DURABILITIES else "use persistent or transient"
        for topic, element in found:
            yield Issue(element, f"{topic.label()} has <{element.tag}> '{value}', which is not persistent or transient", hint)


@rule(
    "SOWT-006", "sow-topic-shared-file", Severity.ERROR,
    "Two SOW topics resolve to the same FileName.",
    description="Each persistent SOW topic needs its own file: two topics must not share one, and neither may "
    "two AMPS instances. `%n` in FileName expands to the topic name, a dot and the message type "
    "(`sow/%n.sow` -> `sow/ORDERS.json.sow`), so a shared `%n` template is fine while a fixed name is "
    "not. Paths are compared after that expansion and normalisation (`./sow//a` = `sow/a`); transient "
    "topics, which do not use their FileName, are not compared. Two definitions of the very same topic "
    "are SOWT-028.",
    source="seed 001 (SOW/Topic FileName), seed 003",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/data.sow</FileName>
    </Topic>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <FileName>sow/data.sow</FileName>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>orders</Name>
      <MessageType>nvfix</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def shared_file(model: ConfigModel) -> Iterator[Issue]:
    for topic, first, path in _shared_files(model):
        yield Issue(
            topic.first("FileName"),
            f"{topic.label()} ({topic.message_type}) would store its SOW in '{path}', already used by "
            f"{first.label()} ({first.message_type}) on line {line_of(model, first.el, topic.el)}",
            "give each topic its own file, e.g. <FileName>./sow/%n.sow</FileName> (%n = topic name and message type)",
        )


@rule(
    "SOWT-007", "sow-topic-transient-filename-ignored", Severity.INFO,
    "A transient SOW topic has a FileName, which it does not use.",
    description="A transient topic lives in memory and is rebuilt from the transaction log, so it does not "
    "need a FileName; the documentation does not say what AMPS does with one that is present. "
    "Remove it, or make the topic persistent if a file was intended.",
    source="seed 001 (SOW/Topic FileName)",
    bad="""  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>quotes</Name>
      <MessageType>json</MessageType>
      <Durability>transient</Durability>
    </Topic>
  </SOW>""",
)
def transient_filename_ignored(model: ConfigModel) -> Iterator[Issue]:
    for topic, _ in model.child_texts("Durability", first_only=True).get("transient", ()):
        if topic.has("FileName"):
            yield Issue(
                topic.first("FileName"),
                f"{topic.label()} is transient, so its FileName is not used",
                "remove <FileName>, or set <Durability>persistent</Durability> to keep the topic on disk",
                at_text=False,
            )


# ---------------------------------------------------------------------------------------
# SOWT-017 .. SOWT-019, SOWT-029: growth and sizing
# ---------------------------------------------------------------------------------------


@rule(
    "SOWT-017", "sow-topic-initial-slab-count-range", Severity.ERROR,
    "InitialSlabCount must be at most 1024 (and should be at least 1).",
    description="InitialSlabCount is the number of SlabSize allocations AMPS makes at startup; the documented "
    "maximum is 1024. No minimum is documented, so 0 is a warning rather than an error.",
    source="seed 001 (SOW/Topic InitialSlabCount)",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <InitialSlabCount>4096</InitialSlabCount>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <InitialSlabCount>1024</InitialSlabCount>
    </Topic>
  </SOW>""",
)
def initial_slab_count_range(model: ConfigModel) -> Iterator[Issue]:
    def may_report(text: str) -> bool:
        count = count_in(text)
        return count is not None and (count.value > MAX_INITIAL_SLAB_COUNT or count.value == 0)

    for topic, element in candidates(model, "InitialSlabCount", may_report):
        count = count_of(element)
        if count is None:
            continue  # UNIT-001
        if count.value > MAX_INITIAL_SLAB_COUNT:
            yield Issue(
                element,
                f"{topic.label()} has InitialSlabCount {count.value}, above the maximum of {MAX_INITIAL_SLAB_COUNT}",
                f"use at most {MAX_INITIAL_SLAB_COUNT}, or a larger SlabSize",
            )
        elif count.value == 0:
            yield Issue(
                element,
                f"{topic.label()} has InitialSlabCount 0; AMPS allocates at least one slab",
                "use 1 (the default) or remove the element",
                severity=Severity.WARNING,
            )


@rule(
    "SOWT-018", "sow-topic-slab-size-max", Severity.ERROR,
    "SlabSize must not exceed 1GB.",
    description="The AMPS 5.3.5 documentation caps SlabSize at 1GB. Because `GB` may be read as 10^9 or 2^30 "
    "bytes, only a size above 1GB under both readings is reported.",
    source="spec/config.md §2.1 [DIG]",
    bad="""  <SOW>
    <Topic>
      <Name>documents</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <SlabSize>2GB</SlabSize>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>documents</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <SlabSize>1GB</SlabSize>
    </Topic>
  </SOW>""",
)
def slab_size_max(model: ConfigModel) -> Iterator[Issue]:
    def may_report(text: str) -> bool:
        size = bytes_in(text)
        return size is not None and size.low > MAX_SLAB_SIZE

    for topic, element in candidates(model, "SlabSize", may_report):
        size = bytes_of(element)
        if size is not None and size.low > MAX_SLAB_SIZE:
            yield Issue(
                element,
                f"{topic.label()} has SlabSize {size.text.strip()}, above the 1GB maximum",
                "use at most 1GB; 60East suggests a few times the largest message, e.g. 8MB for 2MB messages",
            )


@rule(
    "SOWT-019", "sow-topic-slab-size-small", Severity.INFO,
    "SlabSize below 1MB limits the largest message the topic can store.",
    description="SlabSize bounds the largest record AMPS guarantees to store (about SlabSize minus 64 bytes of "
    "header). Whether it is large enough depends on the messages, which a static check cannot see "
    "(spec W); ampsctl only gives an informational hint when it is below 1MB, well under the 5MB default.",
    source="seed 001 (SOW/Topic SlabSize)",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <SlabSize>64KB</SlabSize>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <SlabSize>8MB</SlabSize>
    </Topic>
  </SOW>""",
)
def slab_size_small(model: ConfigModel) -> Iterator[Issue]:
    def may_report(text: str) -> bool:
        size = bytes_in(text)
        return size is not None and size.high < SMALL_SLAB_SIZE

    for topic, element in candidates(model, "SlabSize", may_report):
        size = bytes_of(element)
        if size is not None and size.high < SMALL_SLAB_SIZE:
            yield Issue(
                element,
                f"{topic.label()} has SlabSize {size.text.strip()}, so no record larger than about that can be stored",
                "make SlabSize a few times the largest expected message (the default is 5MB)",
            )


@rule(
    "SOWT-029", "sow-topic-deprecated-growth", Severity.WARNING,
    "RecordSize, InitialSize and IncrementSize are deprecated since AMPS 5.0.",
    description="AMPS 5.0 replaced record-based growth with slabs: use SlabSize instead of RecordSize and "
    "IncrementSize, and InitialSlabCount instead of InitialSize.",
    source="seed 001 (SOW/Topic growth options)",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <RecordSize>2048</RecordSize>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
      <SlabSize>8MB</SlabSize>
    </Topic>
  </SOW>""",
)
def deprecated_growth(model: ConfigModel) -> Iterator[Issue]:
    for topic in model.topics_with(*DEPRECATED_GROWTH):
        for old, new in DEPRECATED_GROWTH.items():
            for element in topic.all(old):
                yield Issue(
                    element,
                    f"{topic.label()} uses <{old}>, deprecated since AMPS 5.0",
                    f"remove <{old}> and size the topic with <{new}>",
                    at_text=False,
                )


# ---------------------------------------------------------------------------------------
# SOWT-030: files on case-insensitive filesystems
# ---------------------------------------------------------------------------------------


@rule(
    "SOWT-030", "sow-topic-file-case-clash", Severity.INFO,
    "Two SOW topics' files differ only in letter case.",
    description="Each SOW file must belong to one topic (SOWT-006) and one AMPS instance. A shared FileName "
    "template such as `./sow/%n.sow` is fine as long as the expanded paths differ, but topic names that "
    "differ only in case (`ORDERS`, `orders`) give paths that differ only in case: distinct files on "
    "Linux, the same file on a case-insensitive filesystem (a copy of the instance on macOS or Windows, a "
    "shared volume). A reminder, not an error; it also says that no second instance may use the file.",
    source="seed 001 (SOW/Topic FileName)",
    bad="""  <SOW>
    <Topic>
      <Name>ORDERS</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>ORDERS</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
    <Topic>
      <Name>orders-eu</Name>
      <MessageType>json</MessageType>
      <FileName>./sow/%n.sow</FileName>
    </Topic>
  </SOW>""",
)
def file_case_clash(model: ConfigModel) -> Iterator[Issue]:
    paths = list(model.sow_files)  # an exact clash is SOWT-006 (or SOWT-028)
    # Fold all paths at once (a path holds no NUL): usually none changes, or no two fold
    # together, and then there is nothing more to do.
    joined = "\0".join(paths)
    every = joined.lower() if joined.isascii() else joined.casefold()  # the same for ASCII
    if every == joined or len(set(every.split("\0"))) == len(paths):
        return
    # The first topic of each path, in definition order: the earlier path is the one to cite.
    firsts = sorted(((model.sow_files[path][0], path) for path in paths), key=lambda found: found[0].order)
    folded: dict[str, tuple[SowEntry, str]] = {}
    for topic, path in firsts:
        first = folded.setdefault(path.casefold(), (topic, path))
        if first[0] is not topic:
            yield Issue(
                topic.first("FileName"),
                f"{topic.label()} stores its SOW in '{path}', which differs only in letter case from '{first[1]}' "
                f"of {first[0].label()} (line {line_of(model, first[0].el, topic.el)})",
                "make the file names differ by more than case (e.g. a different FileName for one topic); "
                "and never point a second AMPS instance at these files",
            )
