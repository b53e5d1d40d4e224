"""Open a session for a policy and run its actions once, as one scheduling cycle does.

`framework.OpenSession` builds the plugins of the tiers in order and skips a name it has no
builder for; `Scheduler.runOnce` runs the actions in the order of the `actions` string. The
plugins and actions the model does not know are returned so every report can say so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from whatif.scheduler.actions import allocate, backfill, enqueue
from whatif.scheduler.eviction import preempt, reclaim
from whatif.scheduler.framework import Framework, Plugin
from whatif.scheduler.gang_eviction import gangpreempt, gangreclaim
from whatif.scheduler.model import BOUND, RUNNING, SUCCEEDED
from whatif.scheduler.plugins import (
    AbstainingPlugin,
    BinpackPlugin,
    ConformancePlugin,
    DrfPlugin,
    GangPlugin,
    NodeGroupPlugin,
    NodeOrderPlugin,
    OvercommitPlugin,
    PredicatesPlugin,
    PriorityPlugin,
)
from whatif.scheduler.proportion import ProportionPlugin
from whatif.scheduler.queues import CapacityPlugin
from whatif.scheduler.session import Session
from whatif.scheduler.topology import NetworkTopologyPlugin, add_root, normalise

PLUGINS: dict[str, type[Plugin]] = {
    "priority": PriorityPlugin,
    "gang": GangPlugin,
    "conformance": ConformancePlugin,
    "drf": DrfPlugin,
    "predicates": PredicatesPlugin,
    "nodeorder": NodeOrderPlugin,
    "binpack": BinpackPlugin,
    "overcommit": OvercommitPlugin,
    "capacity": CapacityPlugin,
    "proportion": ProportionPlugin,
    "network-topology-aware": NetworkTopologyPlugin,
    "nodegroup": NodeGroupPlugin,
    "sla": AbstainingPlugin,
    "resourcequota": AbstainingPlugin,
}
ACTIONS: dict[str, Callable[[Session], None]] = {
    "enqueue": enqueue,
    "allocate": allocate,
    "backfill": backfill,
    "preempt": preempt,
    "reclaim": reclaim,
    "gangpreempt": gangpreempt,
    "gangreclaim": gangreclaim,
}
VOLCANO_VERSION = "v1.15.1"


def open_session(session: Session, tiers: Sequence[Sequence[dict[str, Any]]], defaults: bool = True) -> list[str]:
    """Build the plugins into `session`; returns the names it does not model. `defaults`: flags
    left out are on, as in a scheduler configuration file (off for hand-built test options)."""
    unknown: list[str] = []
    built: list[list[Plugin]] = []
    add_root(session.hypernodes, session.nodes)
    for job in session.jobs.values():
        normalise(job, session.hypernodes)
    session.index_hypernodes()
    session.verdicts, session.unplaceable = {}, {}
    session.forget_still()
    for tier in tiers:
        plugins = []
        for option in tier:
            cls = PLUGINS.get(str(option.get("name")))
            if cls is None:
                unknown.append(str(option.get("name")))
                continue
            plugin = cls(session, option, defaults)
            plugin.name = str(option.get("name"))
            plugins.append(plugin)
        built.append(plugins)
    session.framework = Framework(built)
    for plugins in built:
        for plugin in plugins:
            plugin.on_session_open()
    return unknown


def run_cycle(session: Session, actions: Sequence[str]) -> list[str]:
    """Run the actions in order on the one session; returns those the model does not know."""
    session.actions = tuple(actions)
    unknown = []
    for name in actions:
        action = ACTIONS.get(name)
        if action is None:
            unknown.append(name)
            continue
        session.action = name
        action(session)
    return unknown


def closing_phase(session: Session, uid: str) -> str:
    """The PodGroup phase the job updater writes at the end of the session (`jobStatus`)."""
    job = session.jobs[uid]
    scheduled = sum(1 for t in job.tasks if t.status in (RUNNING, BOUND, SUCCEEDED) or t.status == "Failed")
    running = any(t.status == RUNNING for t in job.tasks)
    if running and uid in session.unschedulable and not session.fw.job_ready(job):
        return "Unknown"
    if scheduled >= job.min_member and job.tasks:
        return "Running"
    return job.phase if job.phase == "Inqueue" else ("Pending" if job.phase in ("", "Pending") else job.phase)
