"""Running the faucet actions of a config: subscription events in, rendered Do steps out.

Theory of operation. ``FaucetActions`` holds one ``FaucetEngine`` per runnable action (see
``plan.py``), the same engine class ``ampsctl affinity simulate`` drives. ``handle(event)``
gives the event to every engine, in config order, and returns one ``Run`` per affinity event:
the action, the affinity event and its Do steps rendered with ``DoStep.render`` (the function
``affinity simulate --render`` uses). It is pure: no I/O, no clock; the caller passes the
instance-wide variables (``context``) and executes the rendered steps.

Invariants:
1. Order: actions in config order; within one action, affinity events in the engine's order;
   within one affinity event, Do steps in config order. The same events give the same runs.
2. Rendering differs from ``affinity simulate --render`` only by ``context`` (variables the
   simulator cannot know, like AMPS_DATETIME); the event's own variables always win.
3. An engine error (which the broker should never cause) costs that event for that action
   only: it is returned as a warning, never raised, so one bad event cannot stop the broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ampsctl.actions.plan import RunnableAction
from ampsctl.affinity.engine import FaucetEngine
from ampsctl.affinity.model import AffinityEvent, SubscriptionEvent
from ampsctl.errors import AmpsctlError


@dataclass(frozen=True, slots=True)
class Run:
    """One run of an action: the affinity event and each Do step's options, rendered."""

    action: RunnableAction
    event: AffinityEvent
    steps: tuple[dict[str, str], ...]  # option name -> rendered text, one dict per Do step


class FaucetActions:
    """The engines of a config's runnable actions; feed it every subscription event in order."""

    def __init__(self, actions: tuple[RunnableAction, ...]) -> None:
        self._engines = [(action, FaucetEngine(action.manifold.settings)) for action in actions]

    def handle(self, event: SubscriptionEvent, context: Mapping[str, str]) -> tuple[list[Run], list[str]]:
        """The runs ``event`` causes (invariant 1), and warnings naming the action."""
        runs: list[Run] = []
        warnings: list[str] = []
        for action, engine in self._engines:
            try:
                produced = engine.handle(event)
            except AmpsctlError as exc:  # invariant 3
                warnings.append(f"{_name(action)}: {exc.message}")
                produced = []
            warnings += [f"{_name(action)}: {text}" for text in engine.warnings]
            engine.warnings.clear()
            for affinity in produced:
                runs.append(Run(action, affinity, tuple(step.render(affinity, context) for step in action.manifold.do)))
        return runs, warnings

    def engines(self) -> list[tuple[RunnableAction, FaucetEngine]]:
        """Each action with its engine (for summaries and tests)."""
        return list(self._engines)


def _name(action: RunnableAction) -> str:
    return f"action {action.number} ({action.location})"
