"""Reading the smaller config sections: nested entries, the options a module gets, repeated names.

``ConfigModel`` indexes what many rules share (SOW entries, transports, declared modules,
actions). The sections read by one or two rule modules (Protocols, Replication, Logging,
MessageTypes, Modules, the Options of Authentication and TransportFilter blocks) are read with
these helpers, so every rule module walks them the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from lxml import etree

from ampsctl.config.model import ConfigModel, Section


def nested_sections(model: ConfigModel, section: str, child: str) -> list[Section]:
    """Every ``<section>/<child>`` element (of every ``<section>``, in file order), as a Section."""
    return [Section(el) for parent in model.root.all(section) for el in Section(parent).all(child)]


def options(el: etree._Element | None) -> list[etree._Element]:
    """The option elements inside ``el``'s <Options> blocks (comments skipped)."""
    if el is None:
        return []
    return [opt for block in el.iterchildren("Options") for opt in block if isinstance(opt.tag, str)]


def repeated_names(items: Iterable[Section]) -> Iterator[tuple[Section, str]]:
    """Each item whose Name an earlier item already has, with that Name (empty Names never repeat)."""
    seen: set[str] = set()
    for item in items:
        name = item.text("Name")
        if not name:
            continue
        if name in seen:
            yield item, name
        seen.add(name)
