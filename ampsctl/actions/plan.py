"""Which of a config's actions the local broker runs, and what it reports as not run.

Theory of operation. ``plan_actions(model)`` walks every ``Actions/Action`` of a config once,
at start-up, and sorts it into one of two piles:

* a ``RunnableAction``: exactly one On step, ``amps-action-on-manifold-affinity`` (json),
  no If step, and one or more Do steps, every one ``amps-action-do-publish-message`` with
  ``MessageType`` json (or none) and a ``Topic`` and ``Data``;
* a note (one line naming the config location) for everything else, saying why it will not run.

Invariants:
1. Every action of the config ends up in exactly one pile: nothing is silently ignored.
2. An action runs completely or not at all. A half-run action (say, a publish whose template
   needs a variable from an unsupported ``do-extract-values`` step before it) would publish
   wrong data, which is worse than publishing none and saying so.
3. The faucet settings are read by ``actions.manifold`` (the same reader as
   ``ampsctl affinity simulate --config``), so the broker and the simulator run the same settings.
"""

from __future__ import annotations

from dataclasses import dataclass

from ampsctl.actions.manifold import MANIFOLD, ManifoldAction, manifold_actions
from ampsctl.config.model import Action, ConfigModel, Section
from ampsctl.errors import AmpsctlError, Location

PUBLISH_MESSAGE = "amps-action-do-publish-message"
SERVED_MESSAGE_TYPE = "json"  # the one message type the local broker serves
_TRUE = frozenset({"true", "yes", "1", "enabled"})


@dataclass(frozen=True, slots=True)
class RunnableAction:
    """A manifold-affinity action whose every step the broker runs."""

    number: int  # 1-based position among all the config's Action elements
    manifold: ManifoldAction  # faucet settings and Do steps, read as ``affinity simulate`` reads them
    location: Location

    @property
    def publisher(self) -> str:
        """The client name the broker publishes this action's messages under (journal, bookmarks)."""
        return f"ampsctl-action-{self.number}"


@dataclass(frozen=True, slots=True)
class ActionPlan:
    """What the broker core needs to run a config's actions."""

    actions: tuple[RunnableAction, ...] = ()
    instance_name: str = ""  # the config's Name: AMPS_INSTANCE_NAME
    notes: tuple[str, ...] = ()  # one line per action not run (logged at start-up as warnings)


def plan_actions(model: ConfigModel) -> ActionPlan:
    """The actions the broker runs, and one note per action it does not run (invariant 1)."""
    runnable: list[RunnableAction] = []
    notes: list[str] = []
    manifold_by_element, rejected = _manifold_by_element(model)
    for number, action in enumerate(model.actions, 1):
        where = model.config.locate(action.el)
        problem = _unsupported(action)
        if problem is None and action.el in rejected:
            notes.append(rejected[action.el])  # its manifold settings are not valid
            continue
        if problem is not None:
            modules = sorted({step.module for step in action.steps if step.module})
            notes.append(f"{where}: action with {', '.join(modules) or 'no module'} is not supported by "
                         f"ampsctl's broker ({problem}): it will not run")
            continue
        runnable.append(RunnableAction(number, manifold_by_element[action.el], where))
    return ActionPlan(tuple(runnable), model.instance_name or "", tuple(notes))


def _manifold_by_element(model: ConfigModel) -> tuple[dict[object, ManifoldAction], dict[object, str]]:
    """The manifold settings of each action that has them, and a note for each that is invalid.

    ``manifold_actions`` stops at the first invalid action (the simulator wants that); the broker
    instead reports each invalid action and runs the others, so each is read on its own.
    """
    found: dict[object, ManifoldAction] = {}
    rejected: dict[object, str] = {}
    for action in model.actions:
        if not any(step.module == MANIFOLD for step in action.role("On")):
            continue
        single = _OneAction(model, action)
        try:
            read = manifold_actions(single)  # type: ignore[arg-type]
        except AmpsctlError as exc:
            where = exc.location or model.config.locate(action.el)
            rejected[action.el] = f"{where}: {MANIFOLD} action not run: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")
            continue
        found[action.el] = read[0]
    return found, rejected


class _OneAction:
    """A view of a config with one action, so ``manifold_actions`` reads exactly that one."""

    def __init__(self, model: ConfigModel, action: Action) -> None:
        self.config = model.config
        self.actions = [action]


def _unsupported(action: Action) -> str | None:
    """Why the broker cannot run ``action`` completely, or None when it can."""
    on, do, conditions = action.role("On"), action.role("Do"), action.role("If")
    if len(on) != 1 or on[0].module != MANIFOLD:
        others = sorted({step.module or "no module" for step in on if step.module != MANIFOLD})
        if others:
            return f"On module {', '.join(others)}"
        return "more than one On step"
    message_type = _text(on[0].options, "MessageType")
    if message_type and message_type != SERVED_MESSAGE_TYPE:
        return f"MessageType {message_type}: only json subscriptions exist on this broker"
    if conditions:
        return "If steps"
    if not do:
        return "no Do step"
    for step in do:
        if step.module != PUBLISH_MESSAGE:
            return f"Do module {step.module or 'missing'}"
        step_type = _text(step.options, "MessageType")
        if step_type and step_type != SERVED_MESSAGE_TYPE:
            return f"{PUBLISH_MESSAGE} with MessageType {step_type}: only json is served"
        if not _text(step.options, "Topic"):
            return f"{PUBLISH_MESSAGE} without Topic"
        if step.options is None or step.options.first("Data") is None:
            return f"{PUBLISH_MESSAGE} without Data"
        if _flag(step.options, "UpdateOnly"):
            return f"{PUBLISH_MESSAGE} with UpdateOnly"
    return None


def _text(options: Section | None, name: str) -> str | None:
    """The stripped value of option ``name`` (text around a comment joined by ``ConfigModel``, as
    actions.manifold reads it); None when absent or blank."""
    value = options.text(name) if options is not None else None
    return value or None


def _flag(options: Section | None, name: str) -> bool:
    return is_true(_text(options, name))


def is_true(value: str | None) -> bool:
    """An AMPS boolean option (``Delta``, ``UpdateOnly``): true, yes, 1 or enabled, any case."""
    return (value or "").strip().lower() in _TRUE
