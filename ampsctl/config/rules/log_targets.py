"""Rules for Logging/Target: spec/config.md §4.4."""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, Section, has_regex_chars, regex_error
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.sections import nested_sections

LOG_PROTOCOLS = ("stdout", "stderr", "file", "gzip", "syslog")
LOG_LEVELS = ("developer", "trace", "stats", "info", "warning", "error", "critical", "emergency", "none")
ACCEPTED_LEVELS = frozenset(LOG_LEVELS) | {"debug"}  # debug: obsolete spelling of info
SYSLOG_ONLY = ("Ident", "Options", "Facility")
FILE_PROTOCOLS = frozenset({"file", "gzip"})
# %n (rotation counter) or a strftime token makes each rotated file name different.
_NAME_CHANGES = re.compile(r"%[naAbBcCdDeFHIjmMpSrRTuVyYZ]")
_ERROR_ID = re.compile(r"[0-9A-F]{2}-[0-9]{4}")


def _targets(model: ConfigModel) -> list[Section]:
    return nested_sections(model, "Logging", "Target")


def _label(target: Section) -> str:
    protocol = target.text("Protocol")
    return f"Logging Target '{protocol}'" if protocol else "A Logging Target"


def _level_elements(target: Section) -> Iterator[tuple[etree._Element, list[str]]]:
    """Each Level/Levels element with its tokens (Levels is a comma list)."""
    for el in target.all("Level"):
        yield el, [(el.text or "").strip()]
    for el in target.all("Levels"):
        yield el, [token.strip() for token in (el.text or "").split(",")]


@rule(
    "LOG-001", "log-protocol", Severity.ERROR,
    "A logging Target needs a Protocol: stdout, stderr, file, gzip or syslog.",
    description="The Protocol says where a target writes its log messages; a target without a valid one "
    "logs nowhere.",
    source="spec/config.md §4.4",
    bad="""  <Logging>
    <Target><Protocol>console</Protocol><Level>info</Level></Target>
  </Logging>""",
    good="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>info</Level></Target>
  </Logging>""",
)
def protocol_valid(model: ConfigModel) -> Iterator[Issue]:
    for target in _targets(model):
        protocol = target.text("Protocol")
        if not protocol:
            yield Issue(target.el, "A Logging Target has no Protocol",
                        f"add <Protocol> ({', '.join(LOG_PROTOCOLS)})", at_text=False)
        elif protocol not in LOG_PROTOCOLS:
            yield Issue(target.first("Protocol"), f"Logging Target Protocol '{protocol}' is not known",
                        f"use one of {', '.join(LOG_PROTOCOLS)}")


@rule(
    "LOG-002", "log-filename-required", Severity.ERROR,
    "A file or gzip logging Target needs a FileName.",
    description="File targets write to FileName, which may contain strftime tokens (`%Y-%m-%dT%H%M%S`) and "
    "`%n` (rotation counter). Although one digest quotes a default, ampsctl requires it to be explicit so "
    "that logs do not land in whatever directory AMPS was started from.",
    source="spec/config.md §4.4",
    bad="""  <Logging>
    <Target><Protocol>file</Protocol><Level>info</Level></Target>
  </Logging>""",
    good="""  <Logging>
    <Target><Protocol>file</Protocol><Level>info</Level><FileName>/var/log/amps/%Y%m%d-%n.log</FileName></Target>
  </Logging>""",
)
def filename_required(model: ConfigModel) -> Iterator[Issue]:
    for target in _targets(model):
        if target.text("Protocol") in FILE_PROTOCOLS and not target.text("FileName"):
            yield Issue(target.el, f"{_label(target)} has no FileName",
                        "add <FileName>/var/log/amps/%Y-%m-%dT%H%M%S.log</FileName>", at_text=False)


@rule(
    "LOG-003", "log-level", Severity.ERROR,
    "Level and Levels must use the AMPS log levels.",
    description="Levels are developer, trace, stats, info, warning, error, critical, emergency and none "
    "(lower case). Level is one level (the lowest logged); Levels is a comma-separated list of extra levels.",
    source="spec/config.md §4.4",
    bad="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>warn</Level></Target>
  </Logging>""",
    good="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>warning</Level></Target>
  </Logging>""",
)
def level_valid(model: ConfigModel) -> Iterator[Issue]:
    for target in _targets(model):
        for el, tokens in _level_elements(target):
            bad = [t for t in tokens if t not in ACCEPTED_LEVELS]
            if bad:
                lowered = [t.lower() for t in bad if t.lower() in ACCEPTED_LEVELS]
                hint = f"write {', '.join(lowered)} in lower case" if len(lowered) == len(bad) else \
                    f"use {', '.join(LOG_LEVELS)}"
                yield Issue(el, f"{_label(target)} {el.tag} has an unknown level "
                            f"{', '.join(repr(t) for t in bad)}", hint)


@rule(
    "LOG-004", "log-target-silent", Severity.WARNING,
    "A logging Target with no Level, Levels or IncludeErrors logs nothing.",
    description="A target logs nothing unless it selects messages: a minimum Level, specific Levels, or "
    "IncludeErrors ids. `Level` `none` alone also selects nothing.",
    source="spec/config.md §4.4",
    bad="""  <Logging>
    <Target><Protocol>stdout</Protocol></Target>
  </Logging>""",
    good="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>info</Level></Target>
  </Logging>""",
)
def target_silent(model: ConfigModel) -> Iterator[Issue]:
    for target in _targets(model):
        if target.text("IncludeErrors") or target.text("Levels"):
            continue
        level = target.text("Level")
        if not level or level == "none":
            yield Issue(target.el, f"{_label(target)} selects no messages, so it logs nothing",
                        "add <Level>info</Level> (or Levels / IncludeErrors)", at_text=False)


@rule(
    "LOG-005", "log-rotation-same-file", Severity.WARNING,
    "RotationThreshold with a FileName that has neither `%n` nor a time token.",
    description="When a log file reaches RotationThreshold AMPS opens a new file named from FileName. If "
    "the name contains neither the rotation counter `%n` nor a strftime token, the new file has the same "
    "name and the old log is overwritten.",
    source="spec/config.md §4.4",
    bad="""  <Logging>
    <Target>
      <Protocol>file</Protocol><Level>info</Level>
      <FileName>/var/log/amps/amps.log</FileName>
      <RotationThreshold>2G</RotationThreshold>
    </Target>
  </Logging>""",
    good="""  <Logging>
    <Target>
      <Protocol>file</Protocol><Level>info</Level>
      <FileName>/var/log/amps/amps-%n.log</FileName>
      <RotationThreshold>2G</RotationThreshold>
    </Target>
  </Logging>""",
)
def rotation_same_file(model: ConfigModel) -> Iterator[Issue]:
    for target in _targets(model):
        filename = target.text("FileName")
        if target.text("RotationThreshold") and filename and not _NAME_CHANGES.search(filename):
            yield Issue(target.first("FileName"), f"{_label(target)} rotates, but FileName '{filename}' has "
                        "neither %n nor a time token, so each rotation reuses the same file",
                        "add %n or a timestamp, e.g. amps-%Y%m%dT%H%M%S.log or amps-%n.log")


@rule(
    "LOG-006", "log-syslog-only-option", Severity.WARNING,
    "Ident, Options and Facility apply to syslog targets only.",
    description="These elements configure the syslog connection (openlog identity, flags and facility); on "
    "a stdout, stderr, file or gzip target they are ignored.",
    source="spec/config.md §4.4",
    bad="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>info</Level><Facility>LOG_USER</Facility></Target>
  </Logging>""",
    good="""  <Logging>
    <Target><Protocol>syslog</Protocol><Level>info</Level><Facility>LOG_USER</Facility></Target>
  </Logging>""",
)
def syslog_only(model: ConfigModel) -> Iterator[Issue]:
    for target in _targets(model):
        protocol = target.text("Protocol")
        if protocol not in LOG_PROTOCOLS or protocol == "syslog":
            continue
        for child in SYSLOG_ONLY:
            for el in target.all(child):
                yield Issue(el, f"{child} on {_label(target)} is ignored (syslog targets only)",
                            f"remove <{child}>, or set <Protocol>syslog</Protocol>", at_text=False)


@rule(
    "LOG-007", "log-level-debug", Severity.INFO,
    "The log level `debug` is the obsolete spelling of `info`.",
    description="Older AMPS releases called the info level `debug`; it is still accepted and means `info`.",
    source="spec/config.md §4.4",
    bad="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>debug</Level></Target>
  </Logging>""",
    good="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>info</Level></Target>
  </Logging>""",
)
def level_debug(model: ConfigModel) -> Iterator[Issue]:
    for target in _targets(model):
        for el, tokens in _level_elements(target):
            if "debug" in tokens:
                yield Issue(el, f"{_label(target)} {el.tag} uses 'debug', the obsolete name of 'info'",
                            "write info")


@rule(
    "LOG-008", "log-error-id-list", Severity.ERROR,
    "IncludeErrors and ExcludeErrors are comma lists of error ids (`2B-0001`) or regular expressions.",
    description="Each entry is an AMPS message id, two upper-case hex digits, a dash and four digits (e.g. "
    "`00-0015`), or a regular expression over ids (e.g. `12-1.*`).",
    source="spec/config.md §4.4",
    bad="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>error</Level><IncludeErrors>00-0015,info</IncludeErrors></Target>
  </Logging>""",
    good="""  <Logging>
    <Target><Protocol>stdout</Protocol><Level>error</Level><IncludeErrors>00-0015,12-1.*</IncludeErrors></Target>
  </Logging>""",
)
def error_id_list(model: ConfigModel) -> Iterator[Issue]:
    for target in _targets(model):
        for child in ("IncludeErrors", "ExcludeErrors"):
            for el in target.all(child):
                bad = [t for t in (token.strip() for token in (el.text or "").split(",")) if not _error_id_ok(t)]
                if bad:
                    yield Issue(el, f"{_label(target)} {child} has malformed entries "
                                f"{', '.join(repr(t) for t in bad)}",
                                "list ids such as 00-0015 (upper-case hex) or regular expressions such as 12-1.*")


def _error_id_ok(token: str) -> bool:
    if _ERROR_ID.fullmatch(token):
        return True
    return bool(token) and has_regex_chars(token) and regex_error(token) is None
