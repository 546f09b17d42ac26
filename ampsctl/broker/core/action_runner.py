"""The broker core's side of the config's actions: subscription changes in, publishes out.

Theory of operation. ``SubscriptionIndex`` tells its ``observer`` (``CoreActions.observe``)
about every subscription added or removed, as it happens: subscribe, delta_subscribe,
sow_and_(delta_)subscribe, unsubscribe (one id, several, ``all``), and ``replace`` (a removal
then an addition of the same sub_id). The observer turns each into a faucet engine event and
queues it; a replace's removal and addition become one subscribe that reuses the sub_id, which
the engine treats as a replace (the new subscription first, so assignments stay: seed 000), as
``affinity simulate`` reads it from an event file. When a connection goes (client
disconnect, or a drop by the core: heartbeat timeout, reconnect taking its name; a slow
consumer is a disconnect the server reports), ``disconnected`` replaces the removals that
forgetting it caused with one ``Disconnect``, because the engine's disconnect order (interest
first, then one publisher loss) differs from a string of unsubscribes.

At the end of every core call (``BrokerCore.handle``, ``disconnected``, ``tick``) ``run`` feeds
the queue to ``FaucetActions`` and executes each run's Do steps: an
``amps-action-do-publish-message`` becomes a ``Publish`` (or ``DeltaPublish``) handled by the
normal publish handler (``publishing.publish``) for a session that belongs to no socket, so it
is journaled if its topic is recorded, stored in the SOW and fanned out like any publish.

Invariants:
1. Engine events are queued in the order the index changed, so the engine sees the broker's
   history exactly as ``affinity simulate`` would see it written down as an event file.
2. Action publishes come after everything the causing command produced, in the same call.
3. A Do step that fails (a rendered topic that is empty or a regex, a refused publish) is logged
   and stops that run's remaining steps (AMPS: a failing Do stops the action); nothing raises.
4. Action publishes never change subscriptions, so running the queue never refills it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ampsctl.actions.plan import ActionPlan, is_true
from ampsctl.actions.runner import FaucetActions, Run
from ampsctl.affinity.model import Disconnect, Subscribe, SubscriptionEvent, Unsubscribe
from ampsctl.broker.core import publishing
from ampsctl.broker.core.actions import Action, Log, LogLevel
from ampsctl.broker.core.refusal import Refused
from ampsctl.broker.core.session import LogonState, Session
from ampsctl.broker.core.subscriptions import Subscription
from ampsctl.filter.regexes import has_metachars
from ampsctl.protocol.commands import DeltaPublish, Publish
from ampsctl.protocol.headers import format_timestamp

if TYPE_CHECKING:
    from ampsctl.broker.core.broker import BrokerCore

MICROS = 1_000_000
ACTION_CONN = 0  # the connection number of action publishes: the server numbers sockets from 1


def connection_name(conn: int) -> str:
    """AMPS_CONNECTION_NAME of a broker connection: ``connection-N``, N the number in the log."""
    return f"connection-{conn}"


class CoreActions:
    """Queues subscription events and runs the config's actions for them (see module docstring)."""

    def __init__(self, plan: ActionPlan) -> None:
        self.plan = plan
        self.faucets = FaucetActions(plan.actions)
        self.pending: list[SubscriptionEvent] = []
        # One publishing session per action: its client name is the publisher identity that the
        # journal records and that bookmarks hash (docs/broker.md, "Actions").
        self._sessions = {action.number: Session(ACTION_CONN, "actions", LogonState.LOGGED_ON, action.publisher)
                          for action in plan.actions}
        self.publishers = frozenset(action.publisher for action in plan.actions)  # reserved: no client logs on as one

    @classmethod
    def attach(cls, core: BrokerCore) -> CoreActions | None:
        """The actions of ``core``'s settings, watching its subscriptions; None when there are none."""
        plan = core.settings.actions
        if plan is None or not plan.actions:
            return None
        runner = cls(plan)
        core.subs.observer = lambda added, sub: runner.observe(core, added, sub)
        return runner

    # ------------------------------------------------------------------ events in

    def observe(self, core: BrokerCore, added: bool, sub: Subscription) -> None:
        """``SubscriptionIndex`` observer: queue the engine event of one change (invariant 1)."""
        name = connection_name(sub.conn)
        if not added:
            self.pending.append(Unsubscribe(name, sub.sub_id))
            return
        session = core.sessions.get(sub.conn)
        client = (session.client_name if session is not None else None) or ""
        pending = self.pending
        if pending and pending[-1] == Unsubscribe(name, sub.sub_id):
            pending.pop()  # a replace: the subscribe that reuses the sub_id says it all
        pending.append(Subscribe(name, client, sub.topic, sub.sub_id, dict(sub.options.user)))

    def disconnected(self, conn: int, mark: int) -> None:
        """``conn`` is gone and forgetting it queued the removals after ``mark`` (the queue's
        length before): they become one ``Disconnect`` (the engine's disconnect order, docs/affinity.md)."""
        del self.pending[mark:]
        self.pending.append(Disconnect(connection_name(conn)))

    # ------------------------------------------------------------------ actions out

    def run(self, core: BrokerCore, now: int) -> list[Action]:
        """Feed the queued events to the engines and execute the Do steps (invariant 2)."""
        out: list[Action] = []
        if not self.pending:
            return out
        context = {
            "AMPS_INSTANCE_NAME": self.plan.instance_name,
            "AMPS_DATETIME": format_timestamp(now),
            "AMPS_UNIX_TIMESTAMP": str(now // MICROS),
        }
        events, self.pending = self.pending, []
        for event in events:
            runs, warnings = self.faucets.handle(event, context)
            out += [Log(LogLevel.WARNING, text) for text in warnings]
            for run in runs:
                out += self._execute(core, run, now)
        return out

    def _execute(self, core: BrokerCore, run: Run, now: int) -> list[Action]:
        action, event = run.action, run.event
        who = f" to {event.client} ({event.connection})" if event.client is not None else ""
        label = f"action {action.number} ({action.location})"
        out: list[Action] = [Log(LogLevel.DEBUG, f"{label}: {event.action.value} {event.topic}{who}")]
        for number, options in enumerate(run.steps, 1):
            topic = options.get("Topic", "").strip()
            problem = None
            if not topic:
                problem = "its Topic renders empty"
            elif has_metachars(topic):
                problem = f"its Topic renders to {topic!r}, which holds regex characters"
            else:
                kind = DeltaPublish if is_true(options.get("Delta")) else Publish
                command = kind(topic=topic, data=options.get("Data", "").encode("utf-8"))
                try:
                    out += publishing.publish(core, self._sessions[action.number], command, now)
                except Refused as refused:
                    problem = f"the publish to {topic!r} was refused ({refused.reason}): {refused.message}"
            if problem is not None:  # invariant 3
                out.append(Log(LogLevel.WARNING, f"{label}: Do step {number} failed: {problem}; the action's "
                                                 f"remaining steps are skipped for this {event.action.value} event"))
                break
        return out
