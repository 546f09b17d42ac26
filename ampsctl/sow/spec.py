"""SOW topic specifications: what one ``SOW/Topic`` of the config asks the store to do.

``TopicSpec`` is the shared contract of issue 6. It is a plain value: the
store, the SOW file (which keeps a copy in its meta table, so ``ampsctl sow query FILE`` needs
no config) and compaction all read it. ``topic_specs(model)`` builds the specs of a config in
file order, which is also routing order (spec/config.md §2: a topic declared before a Pattern
topic that matches it wins).

Decisions where the seeds are silent (docs/sow.md):
* Units: ``Expiration`` and ``History`` intervals are whole seconds, a fraction rounded up
  (``500ms`` -> 1 s), because the contract counts seconds and a lifetime must never shrink
  to 0, which would mean "never expires".
* A Pattern topic's ``Name`` names its physical container (its SOW file, ``%n``); the regex is
  ``regex`` (the ``Pattern`` element). Each concrete topic the regex matches is its own
  logical SOW (own keys: the default KeyDomain is the concrete topic name), and all of them
  live in the container's one file, as seed 001 describes.
* A topic with a ``KeyGenerator`` and no ``Key`` is treated like one with publisher-supplied
  keys: the broker journals the key the module produced, and replay uses it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ampsctl.errors import InputError, Location, UnitError
from ampsctl.units import parse_interval

if TYPE_CHECKING:
    from ampsctl.config.model import ConfigModel, SowEntry

RECOVERY_POINTS = ("epoch", "now")


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One SOW/Topic (or one Pattern topic) from the config."""

    name: str
    message_type: str
    key_fields: tuple[str, ...]
    key_domain: str | None
    expiration: int | None  # topic default in seconds; None = disabled; 0 = "enabled" (per-message only)
    hash_indexes: tuple[tuple[str, ...], ...]
    indexes: tuple[str, ...]
    history_window: int | None  # seconds; None = no History
    history_granularity: int | None  # seconds; 0 = keep every update
    pattern: bool  # a regular-expression topic: every matching concrete topic is its own SOW
    persistent: bool
    recovery_point: str  # "epoch" | "now"
    file_name: str | None  # the FileName template; %n is expanded by ``file_path``
    regex: str | None = None  # the Pattern of a pattern topic; None: ``name`` itself is the regex

    @property
    def expiration_enabled(self) -> bool:
        """Whether expirations are processed (topic ``Expiration`` not ``disabled``)."""
        return self.expiration is not None

    @property
    def history(self) -> bool:
        return self.history_window is not None

    @property
    def topic_regex(self) -> str:
        return self.regex if self.regex is not None else self.name

    def matches(self, topic: str, message_type: str) -> bool:
        """Whether a published (topic, message type) belongs to this SOW topic.

        Topics are scoped by message type (seed 003), compared as the config's MessageType is
        read (without blanks, in lower case): a journal record of "JSON" is json, as journal
        import checked it. A pattern is searched unanchored, as AMPS matches topic regexes; a
        literal compares equal. (SowStore.route caches the answer per topic and type.)
        """
        if not same_message_type(message_type, self.message_type):
            return False
        if not self.pattern:
            return topic == self.name
        from ampsctl.config.model import compiled_regex  # checked (model.regex_error) and cached

        compiled = compiled_regex(self.topic_regex)
        if compiled is None:  # a file's stored spec, from before its config's Pattern was checked
            return False
        try:
            return compiled.search(topic, timeout=0.5) is not None
        except TimeoutError:
            return False

    def domain(self, topic: str) -> str:
        """The KeyDomain for generated keys of ``topic`` (a concrete topic of a pattern)."""
        return self.key_domain if self.key_domain is not None else topic

    def file_path(self) -> str | None:
        """FileName with ``%n`` replaced by ``<name>.<message type>`` (None for transient topics)."""
        if not self.persistent or not self.file_name:
            return None
        return self.file_name.replace("%n", f"{self.name}.{self.message_type}")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict, tuples as lists (the SOW file keeps it in its meta table)."""
        data = asdict(self)
        data["key_fields"] = list(self.key_fields)
        data["hash_indexes"] = [list(index) for index in self.hash_indexes]
        data["indexes"] = list(self.indexes)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicSpec:
        """The inverse of ``to_json``; ValueError/TypeError/KeyError on a malformed dict."""
        def strings(value: Any) -> tuple[str, ...]:
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise TypeError("expected a list of strings")
            return tuple(value)

        def optional_int(value: Any) -> int | None:
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise TypeError("expected a non-negative integer or null")
            return value

        def optional_str(value: Any) -> str | None:
            if value is not None and not isinstance(value, str):
                raise TypeError("expected a string or null")
            return value

        hash_indexes = data["hash_indexes"]
        if not isinstance(hash_indexes, list):
            raise TypeError("hash_indexes must be a list")
        spec = cls(
            name=str(data["name"]),
            message_type=str(data["message_type"]),
            key_fields=strings(data["key_fields"]),
            key_domain=optional_str(data["key_domain"]),
            expiration=optional_int(data["expiration"]),
            hash_indexes=tuple(strings(index) for index in hash_indexes),
            indexes=strings(data["indexes"]),
            history_window=optional_int(data["history_window"]),
            history_granularity=optional_int(data["history_granularity"]),
            pattern=bool(data["pattern"]),
            persistent=bool(data["persistent"]),
            recovery_point=str(data["recovery_point"]),
            file_name=optional_str(data["file_name"]),
            regex=optional_str(data.get("regex")),
        )
        if spec.recovery_point not in RECOVERY_POINTS:
            raise ValueError(f"recovery point {spec.recovery_point!r}")
        return spec


def same_message_type(journaled: str, configured: str) -> bool:
    """Whether a journal record's message type is ``configured`` (lower case, no blanks, as the
    config's MessageType is read): journal import writes "JSON" as given and checks it as json,
    so SOW routing (``TopicSpec.matches``) and the broker's replay both read it as json."""
    return journaled == configured or journaled.strip().lower() == configured


def topic_specs(model: ConfigModel) -> list[TopicSpec]:
    """The SOW topics of a config, in file order; InputError (with the place) for a value we cannot use."""
    return [_spec(model, entry) for entry in model.topics]


def _spec(model: ConfigModel, entry: SowEntry) -> TopicSpec:
    where = model.config.locate(entry.el)
    if not entry.name:
        raise InputError("a SOW Topic has no Name", code="SOW_CONFIG", location=where, hint="give every SOW/Topic a <Name>")
    if not entry.message_type:
        raise InputError(f"SOW Topic '{entry.name}' has no MessageType", code="SOW_CONFIG", location=where,
                         hint="add <MessageType>json</MessageType> (or xml, fix, nvfix)")
    pattern_text = entry.text("Pattern")
    if pattern_text:
        _check_pattern(model, entry, pattern_text)
    durability = (entry.text("Durability") or "persistent").lower()
    if durability not in ("persistent", "transient"):
        raise InputError(f"SOW Topic '{entry.name}': Durability '{durability}' is neither persistent nor transient",
                         code="SOW_CONFIG", location=where, hint="use persistent (the default) or transient")
    recovery_point = (entry.text("RecoveryPoint") or "epoch").lower()
    if recovery_point not in RECOVERY_POINTS:
        raise InputError(f"SOW Topic '{entry.name}': RecoveryPoint '{recovery_point}' is not epoch or now",
                         code="SOW_CONFIG", location=where, hint="use epoch (the default) or now")
    history = entry.first("History")
    window = granularity = None
    if history is not None:
        window = _seconds(_child_text(history, "Window"), f"SOW Topic '{entry.name}' History/Window", model, history)
        granularity = _seconds(_child_text(history, "Granularity"), f"SOW Topic '{entry.name}' History/Granularity", model, history)
        if window is None or granularity is None:
            raise InputError(f"SOW Topic '{entry.name}': History needs both Window and Granularity", code="SOW_CONFIG",
                             location=where, hint="add <Window>7d</Window> and <Granularity>0s</Granularity>")
    file_name = entry.text("FileName") or None
    persistent = durability == "persistent"
    if persistent and not file_name:
        raise InputError(f"SOW Topic '{entry.name}' is persistent but has no FileName", code="SOW_CONFIG", location=where,
                         hint="add <FileName>./sow/%n.sow</FileName> or <Durability>transient</Durability>")
    return TopicSpec(
        name=entry.name,
        message_type=entry.message_type.strip().lower(),
        key_fields=tuple((el.text or "").strip() for el in entry.all("Key")),
        key_domain=entry.text("KeyDomain") or None,
        expiration=_expiration(entry, model),
        hash_indexes=tuple(_hash_index(model, entry, index) for index in entry.all("HashIndex")),
        indexes=tuple(_memo_index(model, entry, el) for el in entry.all("Index")),
        history_window=window,
        history_granularity=granularity,
        pattern=bool(pattern_text),
        persistent=persistent,
        recovery_point=recovery_point,
        file_name=file_name,
        regex=pattern_text or None,
    )


def _check_pattern(model: ConfigModel, entry: SowEntry, pattern: str) -> None:
    """InputError for a Pattern that is not a valid PCRE, or one PCRE refuses although the regex
    package would compile it slowly (SOWT-031): every publish would fail on it, or exhaust memory."""
    from ampsctl.config.model import regex_error
    from ampsctl.filter.regexes import shown_pattern

    problem = regex_error(pattern)
    if problem is not None:
        raise InputError(f"SOW Topic '{entry.name}': Pattern {shown_pattern(pattern)} is not a valid regular expression: {problem}",
                         code="SOW_CONFIG", location=model.config.locate_text(entry.first("Pattern")),
                         hint="fix the pattern (escape literal characters such as ( [ { with a backslash); "
                              "`ampsctl validate` reports it as SOWT-031")


def _hash_index(model: ConfigModel, entry: SowEntry, index: Any) -> tuple[str, ...]:
    """The field paths of one HashIndex; InputError for one without a field (SOWT-026), which
    would otherwise be dropped without a word."""
    paths = tuple((key.text or "").strip() for key in index.iterchildren("Key"))
    if not paths or not all(paths):
        raise InputError(f"SOW Topic '{entry.name}': a HashIndex {'has an empty Key' if paths else 'has no Key'}",
                         code="SOW_CONFIG", location=model.config.locate(index),
                         hint="list each field of the index in a Key of its own: <HashIndex><Key>/qty</Key></HashIndex>")
    return paths


def _memo_index(model: ConfigModel, entry: SowEntry, el: Any) -> str:
    """The field path of one Index; InputError for an empty one: <Index><Key>/qty</Key></Index>
    (HashIndex's form) has no text of its own and was dropped without a word."""
    path = (el.text or "").strip()
    if not path:
        nested = el.find("Key") is not None
        raise InputError(f"SOW Topic '{entry.name}': an Index {'holds a Key element instead of a path' if nested else 'is empty'}",
                         code="SOW_CONFIG", location=model.config.locate(el),
                         hint="an Index names one field as its text: <Index>/qty</Index> (Key elements belong in a HashIndex)")
    return path


def _child_text(el: Any, name: str) -> str | None:
    found = el.find(name)
    return (found.text or "").strip() if found is not None else None


def _expiration(entry: SowEntry, model: ConfigModel) -> int | None:
    text = entry.text("Expiration")
    if text is None or text.lower() == "disabled":
        return None
    if text.lower() == "enabled":
        return 0
    # "0s" reads like "enabled": expirations are processed, messages get no default lifetime
    return _seconds(text, f"SOW Topic '{entry.name}' Expiration", model, entry.first("Expiration"))


def _seconds(text: str | None, what: str, model: ConfigModel, el: Any) -> int | None:
    if text is None:
        return None
    try:
        interval = parse_interval(text)
    except UnitError as exc:
        where: Location | None = model.config.locate(el) if el is not None else None
        raise InputError(f"{what}: {exc.message}", code="SOW_CONFIG", hint=exc.hint, location=where) from None
    return math.ceil(interval.nanos / 1_000_000_000)
