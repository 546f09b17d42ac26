"""Command options, typed: the ``o`` header (spec/protocol.md §8), ``orderby`` (§5.6) and the
heartbeat's ``start,<secs>``/``beat`` (§4.4).

The text is split by ``ampsctl.options`` (commas at bracket depth 0, last repeat wins); this
module gives each name its type and rejects, with ``invalid options``:

* a name that is not in the §8.2 table, not ``udo_*`` and not declared by the broker (a
  config's ``CoverageSubsetOption`` may name any option, seed 000);
* a flag given a value, a value option without one, or a value of the wrong shape;
* ``projection``/``grouping`` (aggregated subscriptions are not implemented, §8.2 [REC]);
* ``skip_n`` without ``top_n`` and ``pause`` together with ``resume``.

A known option on a command it does not apply to (``oof`` on a ``sow``) is accepted and has no
effect there: AMPS clients pass option strings around between calls, and failing them for a
harmless extra would break code that works against AMPS.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ampsctl.errors import InputError
from ampsctl.messages.paths import split_path
from ampsctl.options import parse_options, split_options
from ampsctl.protocol.errors import HeaderValueError, Reason
from ampsctl.units import Interval, parse_interval

# Flags in canonical (output) order. ``bookmark`` is sent next to ``bm`` by real clients
# (Appendix C) and adds nothing; ``live`` and ``fully_durable`` are no-ops locally (§8.2).
FLAGS: tuple[str, ...] = (
    "oof",
    "no_empties",
    "no_sowkey",
    "send_keys",
    "replace",
    "pause",
    "resume",
    "live",
    "timestamp",
    "fully_durable",
    "bookmark",
)
UNSUPPORTED = {"projection": "aggregated subscriptions", "grouping": "aggregated subscriptions"}
BOOKMARK_NOT_FOUND = ("now", "epoch", "fail")
_RATE = re.compile(r"[0-9]+(?:\.[0-9]+)?x?", re.ASCII)


@dataclass(frozen=True, slots=True, repr=False)
class CommandOptions:
    """The parsed ``o`` header. Flags are True only when given (defaults are the broker's call)."""

    oof: bool = False
    no_empties: bool = False
    no_sowkey: bool = False
    send_keys: bool = False
    replace: bool = False
    pause: bool = False
    resume: bool = False
    live: bool = False
    timestamp: bool = False
    fully_durable: bool = False
    bookmark: bool = False
    top_n: int | None = None
    skip_n: int | None = None
    conflation: Interval | None = None
    conflation_key: tuple[str, ...] | None = None
    select: tuple[str, ...] | None = None  # each "+/path" or "-/path"; "-/" drops every field
    rate: str | None = None
    rate_max_gap: Interval | None = None
    max_backlog: int | None = None
    bookmark_not_found: str | None = None
    ack_conflation: Interval | None = None  # logon only
    user: tuple[tuple[str, str | None], ...] = ()  # udo_* and broker-declared names, in order

    def __repr__(self) -> str:  # the canonical text: 22 mostly-default fields say little in a log
        return f"CommandOptions({self.format() or ''!r})"

    def user_option(self, name: str) -> str | None:
        return next((value for key, value in self.user if key == name), None)

    def format(self) -> str | None:
        """The canonical ``o`` text (parse_command_options(o.format()) == o); None if empty."""
        tokens = [name for name in FLAGS if getattr(self, name)]
        for name, (_, render) in _VALUES.items():
            value = getattr(self, name)
            if value is not None:
                tokens.append(f"{name}={render(value)}")
        tokens += [name if value is None else f"{name}={value}" for name, value in self.user]
        return ",".join(tokens) or None


NO_OPTIONS = CommandOptions()


def _count(value: str) -> int:
    if not (value.isascii() and value.isdigit()):
        raise ValueError("expected a whole number")
    return int(value)


def _interval(value: str) -> Interval:
    try:
        return parse_interval(value)
    except InputError as exc:
        raise ValueError(exc.message) from None


def _bracket_items(value: str) -> list[str]:
    inner = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    items = [item.strip() for item in inner.split(",") if item.strip()]
    if not items:
        raise ValueError("expected a list such as [/a,/b]")
    return items


def _paths(value: str) -> tuple[str, ...]:
    items = _bracket_items(value)
    for item in items:
        _check_path(item)
    return tuple(items)


def _select(value: str) -> tuple[str, ...]:
    entries = []
    for item in _bracket_items(value):
        sign, path = (item[0], item[1:].strip()) if item[0] in "+-" else ("+", item)
        if path != "/":  # "+/" and "-/" name the whole message
            _check_path(path)
        entries.append(sign + path)
    return tuple(entries)


def _check_path(path: str) -> None:
    try:
        split_path(path)
    except InputError as exc:
        raise ValueError(exc.message) from None


def _rate(value: str) -> str:
    if not _RATE.fullmatch(value):
        raise ValueError("expected a replay speed such as 1x, 2.5x or 100")
    return value


def _bookmark_not_found(value: str) -> str:
    if value.lower() not in BOOKMARK_NOT_FOUND:
        raise ValueError(f"expected one of {', '.join(BOOKMARK_NOT_FOUND)}")
    return value.lower()


def _list(items: tuple[str, ...]) -> str:
    return "[" + ",".join(items) + "]"


# name -> (parser, renderer), in canonical output order
_VALUES: dict[str, tuple[Callable[[str], Any], Callable[[Any], str]]] = {
    "top_n": (_count, str),
    "skip_n": (_count, str),
    "conflation": (_interval, lambda interval: interval.text.strip()),
    "conflation_key": (_paths, _list),
    "select": (_select, _list),
    "rate": (_rate, str),
    "rate_max_gap": (_interval, lambda interval: interval.text.strip()),
    "max_backlog": (_count, str),
    "bookmark_not_found": (_bookmark_not_found, str),
    "ack_conflation": (_interval, lambda interval: interval.text.strip()),
}


def _invalid(message: str) -> HeaderValueError:
    return HeaderValueError("o", message, Reason.INVALID_OPTIONS)


@functools.lru_cache(maxsize=1024)  # option strings repeat; the result is immutable
def parse_command_options(
    text: str | None, *, user_names: frozenset[str] = frozenset(), header_top_n: int | None = None
) -> CommandOptions:
    """Type the ``o`` header of a command (see the module docstring for what is rejected).

    ``header_top_n`` is the legacy ``top_n`` header (§3.2); the ``top_n=`` option wins over it.
    """
    if (not text or not text.strip()) and header_top_n is None:
        return NO_OPTIONS
    try:
        pairs = parse_options(text or "")
    except InputError as exc:
        raise _invalid(exc.message) from None
    values: dict[str, Any] = {} if header_top_n is None else {"top_n": header_top_n}
    user: list[tuple[str, str | None]] = []
    for name, value in pairs.items():
        if name in FLAGS:
            if value is not None:
                raise _invalid(f"option {name!r} is a flag and takes no value (got {name}={value})")
            values[name] = True
        elif name in _VALUES:
            if not value:
                raise _invalid(f"option {name!r} needs a value: {name}=...")
            try:
                values[name] = _VALUES[name][0](value)
            except ValueError as exc:
                raise _invalid(f"option {name}={value}: {exc}") from None
        elif name.startswith("udo_") or name in user_names:
            user.append((name, value))
        elif name in UNSUPPORTED:
            raise _invalid(f"option {name!r}: {UNSUPPORTED[name]} are not supported by ampsctl's broker")
        else:
            raise _invalid(f"unknown option {name!r}")
    if "skip_n" in values and "top_n" not in values:
        raise _invalid("option skip_n needs top_n (§8.2)")
    if values.get("pause") and values.get("resume"):
        raise _invalid("options pause and resume cannot be combined")
    return CommandOptions(**values, user=tuple(user))


# --------------------------------------------------------------------------------------
# orderby (§5.6): "/field [ASC|DESC] [TEXT], ..."
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OrderKey:
    path: str
    descending: bool = False
    as_text: bool = False  # TEXT: compare as strings instead of the default mixed-type order


def parse_orderby(text: str | None) -> tuple[OrderKey, ...]:
    """The sort keys of an ``orderby`` header; ``invalid order by`` for anything else."""
    keys = []
    for item in split_options(text or ""):
        path, *words = item.split()
        direction: str | None = None
        as_text = False
        for word in (word.upper() for word in words):
            if word in ("ASC", "DESC") and direction is None:
                direction = word
            elif word == "TEXT" and not as_text:
                as_text = True
            else:
                raise HeaderValueError("orderby", f"orderby {item!r}: unexpected {word!r}", Reason.INVALID_ORDER_BY)
        try:
            split_path(path)
        except InputError as exc:
            raise HeaderValueError("orderby", f"orderby {item!r}: {exc.message}", Reason.INVALID_ORDER_BY) from None
        keys.append(OrderKey(path, direction == "DESC", as_text))
    return tuple(keys)


def format_orderby(keys: tuple[OrderKey, ...]) -> str | None:
    parts = [key.path + (" DESC" if key.descending else "") + (" TEXT" if key.as_text else "") for key in keys]
    return ",".join(parts) or None


# --------------------------------------------------------------------------------------
# heartbeat (§4.4, §5.11): start,<secs> | beat | stop (Appendix C clients send stop)
# --------------------------------------------------------------------------------------


class HeartbeatAction(enum.StrEnum):
    START = "start"
    BEAT = "beat"
    STOP = "stop"


def parse_heartbeat_options(text: str | None) -> tuple[HeartbeatAction, int | None]:
    """(action, interval in whole seconds for START). No ``o`` at all is a ``beat``."""
    tokens = [token.lower() for token in split_options(text or "")]
    if not tokens:
        return HeartbeatAction.BEAT, None
    try:
        action = HeartbeatAction(tokens[0])
    except ValueError:
        raise _invalid(f"heartbeat option {tokens[0]!r}: expected start,<seconds>, beat or stop") from None
    if action is not HeartbeatAction.START:
        if len(tokens) > 1:
            raise _invalid(f"heartbeat {action.value} takes no value")
        return action, None
    if len(tokens) != 2:
        raise _invalid("heartbeat start needs an interval: start,<seconds>")
    try:
        interval = parse_interval(tokens[1])
    except InputError as exc:
        raise _invalid(f"heartbeat interval: {exc.message}") from None
    if interval.nanos <= 0 or interval.nanos % 1_000_000_000:
        raise _invalid(f"heartbeat interval {tokens[1]!r} must be a positive whole number of seconds")
    return action, interval.nanos // 1_000_000_000


def format_heartbeat_options(action: HeartbeatAction, interval: int | None) -> str:
    return f"start,{interval}" if action is HeartbeatAction.START else action.value
