"""The ``amps-action-on-manifold-affinity`` actions of a config, ready for the faucet engine.

Both ``ampsctl affinity simulate --config`` and the broker read actions through here, so they
run the same settings. Errors point at the config element; ``ampsctl validate`` reports the
same problems as rules (ACT-014 and the option rules) with all the other findings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lxml import etree

from ampsctl.actions.templates import render
from ampsctl.affinity.model import AffinityEvent, AffinitySettings, Announcements
from ampsctl.config.loader import LoadedConfig as Config
from ampsctl.config.model import Action, ConfigModel, Section
from ampsctl.errors import InputError, Location, UsageError
from ampsctl.filter.errors import FilterError
from ampsctl.filter.regexes import compile_pattern

MANIFOLD = "amps-action-on-manifold-affinity"


@dataclass(frozen=True, slots=True)
class DoStep:
    """One Do step: its module and option texts (templates), in document order."""

    module: str
    options: tuple[tuple[str, str], ...]

    def render(self, event: AffinityEvent, context: Mapping[str, str] | None = None) -> dict[str, str]:
        """Each option with the event's variables substituted (``{{VAR}}``).

        ``context`` holds the instance-wide variables (the broker passes AMPS_INSTANCE_NAME,
        AMPS_DATETIME, ...); the event's own variables win over it, and the simulator passes none.
        """
        variables = event.variables() if context is None else {**context, **event.variables()}
        return {name: render(text, variables) for name, text in self.options}


@dataclass(frozen=True, slots=True)
class ManifoldAction:
    number: int  # 1-based, among the manifold actions of the config
    settings: AffinitySettings
    message_type: str | None
    do: tuple[DoStep, ...]
    location: Location

    def describe(self) -> str:
        return f"action {self.number} (ControlTopic {self.settings.control_topic}, line {self.location.line})"


def manifold_actions(model: ConfigModel) -> list[ManifoldAction]:
    """Every action whose On step runs the manifold-affinity module, in document order."""
    found = []
    for action in model.actions:
        on = [step for step in action.role("On") if step.module == MANIFOLD]
        if on:
            found.append(_read(model, action, on[0].options, len(found) + 1))
    return found


def pick_action(actions: list[ManifoldAction], choice: str | None, path: str) -> ManifoldAction:
    """The action named by ``--action`` (1-based number or ControlTopic), or the only one."""
    if not actions:
        raise UsageError(
            f"{path} has no action with <Module>{MANIFOLD}</Module> in an On step",
            code="AFFINITY_CONFIG",
            hint="add one (see `ampsctl config explain ACT-014`), or pass --control-topic and --subscription-topic instead of --config",
        )
    if choice is None:
        if len(actions) == 1:
            return actions[0]
        raise UsageError(
            f"{path} has {len(actions)} manifold-affinity actions; choose one with --action",
            code="AFFINITY_CONFIG",
            hint="--action takes the number or the ControlTopic of: " + "; ".join(a.describe() for a in actions),
        )
    for action in actions:
        if choice == str(action.number) or choice == action.settings.control_topic:
            return action
    raise UsageError(
        f"--action {choice!r} names no manifold-affinity action in {path}",
        code="AFFINITY_CONFIG",
        hint="choose one of: " + "; ".join(a.describe() for a in actions),
    )


def _read(model: ConfigModel, action: Action, options: Section | None, number: int) -> ManifoldAction:
    config = model.config
    where = config.locate(action.el)

    def text(name: str) -> str | None:
        return _option(config, options, name)

    def required(name: str) -> str:
        value = text(name)
        if not value:
            raise InputError(
                f"the {MANIFOLD} action has no {name}",
                code="AFFINITY_CONFIG",
                location=where,
                hint=f"add <{name}> to the On step's <Options>; run `ampsctl validate` for every problem at once",
            )
        return value

    control_topic = required("ControlTopic")
    subscription_topic = required("SubscriptionTopic")
    try:
        compile_pattern(subscription_topic)
    except FilterError as exc:
        raise InputError(
            f"SubscriptionTopic {subscription_topic!r} is not a valid PCRE: {exc.message}",
            code="AFFINITY_CONFIG",
            location=config.locate_text(options.first("SubscriptionTopic")),  # type: ignore[union-attr, arg-type]
            hint="escape literal metacharacters with a backslash, e.g. /symbols/.*",
        ) from None
    announcements = text("Announcements") or "default"
    try:
        mode = Announcements(announcements)
    except ValueError:
        raise InputError(
            f"Announcements is {announcements!r}",
            code="AFFINITY_CONFIG",
            location=config.locate_text(options.first("Announcements")),  # type: ignore[union-attr, arg-type]
            hint="use default or all",
        ) from None
    settings = AffinitySettings(control_topic, subscription_topic, mode, text("CoverageSubsetOption") or None)
    do = tuple(_do_step(config, step.module or "", step.options) for step in action.role("Do"))
    return ManifoldAction(number, settings, text("MessageType"), do, where)


def _do_step(config: Config, module: str, options: Section | None) -> DoStep:
    texts = []
    if options is not None:
        for child in options.el:
            if isinstance(child.tag, str):
                texts.append((child.tag, _content(config, child)))
    return DoStep(module, tuple(texts))


def _option(config: Config, options: Section | None, name: str) -> str | None:
    """The stripped value of the first option ``name``; None when absent."""
    found = options.first(name) if options is not None else None
    return _content(config, found).strip() if found is not None else None


def _content(config: Config, el: etree._Element) -> str:
    """An option's value, CDATA included; an element inside it is refused, as its markup would
    be lost. The text around a comment inside the value is whole: ``ConfigModel`` joined it
    (``model.join_values``)."""
    for node in el:
        if isinstance(node.tag, str):
            raise InputError(
                f"<{el.tag}> of the {MANIFOLD} action holds an element <{node.tag}>, not text",
                code="AFFINITY_CONFIG",
                location=config.locate(node),
                hint="write markup in a value as &lt;...&gt; or inside <![CDATA[...]]>",
            )
    return el.text or ""
