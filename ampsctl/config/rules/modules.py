"""Rules for Modules/Module and every `<Module>` reference: spec/config.md §4.5.

The module names AMPS provides without a `Modules` entry, by kind, are in ``catalog``.

Division of work with other rules, so one mistake gives one finding:
- action `On`/`Do`/`If` module names are checked by ACT-003/ACT-004; MOD-003 reports only the
  step modules those rules leave alone (an undeclared custom name that looks like no built-in);
- `TransportFilter/Module` is checked by TRN-013, not by MOD-003;
- `VALUE_LOOKUP` in a View `Filter` is a non-deterministic function (VW-009), so MOD-005
  looks at the other View expressions only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePath

from lxml import etree

from ampsctl.config.findings import Severity
from ampsctl.config.model import ConfigModel, Section, Step
from ampsctl.config.registry import Issue, rule
from ampsctl.config.rules.action_structure import module_problem as action_module_problem
from ampsctl.config.rules.catalog import ACTION_MODULES, BUILTIN_MODULES, BUILTINS_BY_PLACE
from ampsctl.config.rules.expr_tokens import blank_strings
from ampsctl.config.rules.sections import nested_sections, repeated_names

_CHECKED_ELSEWHERE = frozenset({"Modules", "TransportFilter"})
_ACTION_STEPS = frozenset({"On", "Do", "If"})


def library_stem(model: ConfigModel, name: str | None) -> str | None:
    """The library file name (no directory, no `.so`) of a declared module, e.g. 'libamps_http_entitlement'."""
    el = model.modules.get(name or "")
    library = Section(el).text("Library") if el is not None else None
    if not library:
        return None
    stem = PurePath(library).name
    return stem[:-3] if stem.endswith(".so") else stem


def _inside_options(el: etree._Element) -> bool:
    return any(parent.tag == "Options" for parent in el.iterancestors())


def _references(model: ConfigModel) -> Iterator[etree._Element]:
    """Every <Module> element that names a module (not the Modules/Module declarations)."""
    for el in model.descendants("Module"):
        parent = el.getparent()
        if parent is not None and parent.tag != "Modules" and not _inside_options(el):
            yield el


@rule(
    "MOD-001", "module-name-library-required", Severity.ERROR,
    "A Modules/Module needs a Name and a Library.",
    description="AMPS loads each declared module from its `Library` (a file in the AMPS `lib` directory or a "
    "path) and makes it available under its `Name`, which other elements reference. Without either the "
    "declaration is useless.",
    source="spec/config.md §4.5",
    bad="""  <Modules>
    <Module>
      <Name>http-entitlement</Name>
    </Module>
  </Modules>""",
    good="""  <Modules>
    <Module>
      <Name>http-entitlement</Name>
      <Library>libamps_http_entitlement.so</Library>
    </Module>
  </Modules>""",
)
def name_library_required(model: ConfigModel) -> Iterator[Issue]:
    for module in nested_sections(model, "Modules", "Module"):
        missing = [child for child in ("Name", "Library") if not module.text(child)]
        if missing:
            name = module.text("Name")
            label = f"Module '{name}'" if name else "A Modules/Module"
            yield Issue(
                module.el, f"{label} has no {' and no '.join(missing)}",
                "give every module a <Name> that other elements reference and the <Library> to load, "
                "e.g. <Library>libamps_http_entitlement.so</Library>",
                at_text=False,
            )


@rule(
    "MOD-002", "module-duplicate-name", Severity.ERROR,
    "Two Modules/Module declarations use the same Name.",
    description="Module references are resolved by Name, so a second declaration with the same Name is "
    "ambiguous: one of the two libraries can never be referenced.",
    source="spec/config.md §4.5",
    bad="""  <Modules>
    <Module><Name>auth</Name><Library>libamps_multi_authentication.so</Library></Module>
    <Module><Name>auth</Name><Library>libamps_http_entitlement.so</Library></Module>
  </Modules>""",
    good="""  <Modules>
    <Module><Name>ldap-auth</Name><Library>libamps_multi_authentication.so</Library></Module>
    <Module><Name>http-auth</Name><Library>libamps_http_entitlement.so</Library></Module>
  </Modules>""",
)
def duplicate_name(model: ConfigModel) -> Iterator[Issue]:
    for module, name in repeated_names(nested_sections(model, "Modules", "Module")):
        yield Issue(module.first("Name"), f"Module '{name}' is declared more than once",
                    "rename one of the declarations and update the elements that reference it")


@rule(
    "MOD-003", "module-unknown-reference", Severity.ERROR,
    "A <Module> reference names neither a built-in module of that kind nor a declared module.",
    description="KeyGenerator, Authentication, Entitlement, Authenticator, MessageType, Protocol and "
    "UserDefinedFunctions/Function blocks name the module that does the work. Built-in modules "
    "(amps-default-authentication-module, the default message types, ...) need no declaration; any other "
    "module must be loaded in Modules/Module with that Name. In action On/Do/If steps, misspelled or "
    "misplaced built-in action modules are ACT-003/ACT-004's; MOD-003 reports the undeclared custom ones. "
    "TransportFilter modules are checked by TRN-013.",
    source="spec/config.md §4.5",
    bad="""  <Authentication>
    <Module>ldap-auth</Module>
  </Authentication>""",
    good="""  <Modules>
    <Module><Name>ldap-auth</Name><Library>libamps_multi_authentication.so</Library></Module>
  </Modules>
  <Authentication>
    <Module>ldap-auth</Module>
    <Options><LDAP.Host>ldap://ldap.example.com</LDAP.Host></Options>
  </Authentication>""",
)
def unknown_reference(model: ConfigModel) -> Iterator[Issue]:
    declared = model.modules
    for el in _references(model):
        place = el.getparent().tag
        if place in _CHECKED_ELSEWHERE:
            continue
        name = (el.text or "").strip()
        if name in declared:
            continue
        if place in _ACTION_STEPS:
            yield from _undeclared_action_module(model, el, place, name)
            continue
        allowed, kind = BUILTINS_BY_PLACE.get(place, (BUILTIN_MODULES, "built-in"))
        if name in allowed:
            continue
        if not name:
            yield Issue(el, f"{place}/Module is empty", "name a built-in module or a Modules/Module Name",
                        at_text=False)
        elif name in BUILTIN_MODULES:
            yield Issue(el, f"{place}/Module '{name}' is a built-in module, but not one that {place} accepts",
                        _hint(allowed, kind))
        else:
            yield Issue(el, f"{place}/Module '{name}' is not a built-in module and is not declared in Modules",
                        _hint(allowed, kind))


def _undeclared_action_module(model: ConfigModel, el: etree._Element, role: str, name: str) -> Iterator[Issue]:
    """An action step's module that ACT-002/003/004 leave alone: a custom name nobody declared."""
    if not name or name in ACTION_MODULES:
        return
    step = Step(role, el.getparent(), name, None)
    if action_module_problem(model, step) is None:
        yield Issue(el, f"{role}/Module '{name}' is not a built-in action module and is not declared in Modules",
                    "declare the custom action module in Modules/Module, or use an amps-action-* module")


def _hint(allowed: frozenset[str], kind: str) -> str:
    declare = "declare it: <Modules><Module><Name>NAME</Name><Library>lib....so</Library></Module></Modules>"
    if not allowed:
        return declare
    return f"{declare}, or use a built-in {kind} module: {', '.join(sorted(allowed))}"


@rule(
    "MOD-004", "module-unused", Severity.WARNING,
    "A declared module is never referenced.",
    description="A module declared in Modules only does something when an element references its Name "
    "(Authentication, Entitlement, KeyGenerator, MessageType, TransportFilter, Function, action steps...). "
    "Function libraries (`libamps_udf_*`) are exempt: loading them is enough to make their functions "
    "available to expressions.",
    source="spec/config.md §4.5",
    bad="""  <Modules>
    <Module><Name>http-entitlement</Name><Library>libamps_http_entitlement.so</Library></Module>
  </Modules>""",
    good="""  <Modules>
    <Module><Name>http-entitlement</Name><Library>libamps_http_entitlement.so</Library></Module>
    <Module><Name>legacy-udf</Name><Library>libamps_udf_legacy_compatibility.so</Library></Module>
  </Modules>
  <Entitlement>
    <Module>http-entitlement</Module>
    <Options><ResourceURI>http://auth.example.com/{{USER_NAME}}</ResourceURI></Options>
  </Entitlement>""",
)
def unused(model: ConfigModel) -> Iterator[Issue]:
    if not model.modules:
        return
    used = {(el.text or "").strip() for el in _references(model)}
    for name, el in model.modules.items():
        stem = library_stem(model, name) or ""
        if name not in used and not stem.startswith("libamps_udf"):
            yield Issue(Section(el).first("Name"), f"Module '{name}' is declared but never referenced",
                        "reference it (e.g. from an Authentication, Entitlement or MessageType block) or remove it")


# Where VALUE_LOOKUP is called is read from the tokens (whether a filter parses is GEN-013's):
# string literals are blanked first, so a function name inside quotes does not count.
_VALUE_LOOKUP = re.compile(r"(?<![\w/@.])VALUE_LOOKUP\s*\(", re.IGNORECASE)


def calls_value_lookup(expression: str) -> bool:
    # The quick test first: most expressions do not mention the function at all.
    return "value_lookup" in expression.lower() and _VALUE_LOOKUP.search(blank_strings(expression)) is not None


def _expression_fields(entry: Section, *blocks: str) -> Iterator[etree._Element]:
    for block in blocks:
        for el in entry.all(block):
            yield from (f for f in el.iterchildren("Field"))


@rule(
    "MOD-005", "module-value-lookup-placement", Severity.ERROR,
    "VALUE_LOOKUP is used in a View, or in a transient SOW topic whose RecoveryPoint is not `now`.",
    description="VALUE_LOOKUP reads the current contents of another SOW topic, so its result depends on "
    "when it runs. AMPS does not support it in view expressions, nor in a transient topic that would be "
    "rebuilt from the transaction log (RecoveryPoint other than `now`), where replaying the log would give "
    "different values. Checked at token level (the name followed by `(`, outside string literals). "
    "A View `Filter` is reported by VW-009 instead.",
    source="spec/config.md §4.5 [DIG]",
    bad="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <Durability>transient</Durability>
      <Enrichment>
        <Field>VALUE_LOOKUP('prices', /sym, '/px') AS /px</Field>
      </Enrichment>
    </Topic>
  </SOW>""",
    good="""  <SOW>
    <Topic>
      <Name>orders</Name>
      <MessageType>json</MessageType>
      <Key>/id</Key>
      <Durability>transient</Durability>
      <RecoveryPoint>now</RecoveryPoint>
      <Enrichment>
        <Field>VALUE_LOOKUP('prices', /sym, '/px') AS /px</Field>
      </Enrichment>
    </Topic>
  </SOW>""",
)
def value_lookup_placement(model: ConfigModel) -> Iterator[Issue]:
    # Views, and the topics with expressions that could call it: only a transient one can break it.
    for entry in model.views + model.topics_with("Preprocessing", "Enrichment"):
        if entry.kind == "View":
            places = list(_expression_fields(entry, "Projection", "Grouping"))
            for underlying in entry.all("UnderlyingTopic"):
                places.extend(underlying.iterchildren("Join"))
            why = "views do not support VALUE_LOOKUP"
            hint = "compute the value in the underlying topic's Enrichment, or join the looked-up topic in the view"
        else:
            if entry.text("Durability") != "transient" or (entry.text("RecoveryPoint") or "epoch") == "now":
                continue
            places = list(_expression_fields(entry, "Preprocessing", "Enrichment"))
            why = "a transient topic rebuilt from the transaction log cannot use VALUE_LOOKUP"
            hint = "set <RecoveryPoint>now</RecoveryPoint>, or make the topic persistent"
        for el in places:
            if calls_value_lookup(el.text or ""):
                yield Issue(el, f"{entry.label()} uses VALUE_LOOKUP: {why}", hint)
