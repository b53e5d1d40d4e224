"""The policy's plugins and how a session asks them: `pkg/scheduler/framework/session_plugins.go`.

A plugin takes part in an extension point when it implements it and its flag is not false
(`isEnabled`; every flag defaults to true). Orders take the first plugin with an opinion, votes
walk tiers until one decides, victim filters return the first tier that yields any victim and
intersect within a tier (an empty intersection lets the next plugin start afresh), `JobStarving`
is decided by the first tier that has a starving function at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from whatif.scheduler.model import Job, Node, Queue, Task

Victims = tuple[list[Task], int]
PERMIT, ABSTAIN, REJECT = 1, 0, -1


class Plugin:
    """Base of the modelled plugins; a subclass defines the extension points it registers."""

    name = ""

    def __init__(self, session: Any, option: dict[str, Any], defaults: bool = True):
        self.session = session
        self.option = option
        self.flag_default = defaults
        self.arguments: dict[str, Any] = dict(option.get("arguments") or {})

    def enabled(self, flag: str | None) -> bool:
        """`isEnabled`: the scheduler applies `ApplyPluginConfDefaults` (every flag true) to a
        configuration file; upstream's unit tests build options by hand, so a flag they leave out
        is off there."""
        return flag is None or self.option.get(flag, self.flag_default) is True

    def on_session_open(self) -> None:
        """Build per-session state (queue attributes, shares)."""


def _number_suffix(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) >= 3 and re.fullmatch(r"\d+", parts[-1]):
        return int(parts[-1])
    return None


def compare_task(left: Task, right: Task) -> bool:
    """`helpers.CompareTask`: the numeric suffix of the pod name, then creation order."""
    ln, rn = _number_suffix(left.name), _number_suffix(right.name)
    if ln is not None and rn is not None and ln != rn:
        return ln < rn
    return (left.order, left.uid) < (right.order, right.uid)


class Framework:
    def __init__(self, tiers: Sequence[Sequence[Plugin]]):
        self.tiers = [list(tier) for tier in tiers]
        self._registered: dict[tuple[str, str | None], list[Callable[..., Any]]] = {}

    def _each(self, method: str, flag: str | None) -> list[Callable[..., Any]]:
        """The functions registered for an extension point, in tier order (built once a session)."""
        key = (method, flag)
        if key not in self._registered:
            self._registered[key] = [
                getattr(p, method) for tier in self.tiers for p in tier if hasattr(p, method) and p.enabled(flag)
            ]
        return self._registered[key]

    def plugin(self, name: str) -> Plugin | None:
        return next((p for tier in self.tiers for p in tier if p.name == name), None)

    # Orders: the first non-zero answer, then the fallback.
    def _first_opinion(self, method: str, flag: str | None, *args: Any) -> bool | None:
        """True when the first plugin with an opinion puts the left one first; None if none has."""
        for fn in self._each(method, flag):
            answer = fn(*args)
            if answer:
                return bool(answer < 0)
        return None

    def job_order(self, left: Job, right: Job) -> bool:
        answer = self._first_opinion("job_order", "enableJobOrder", left, right)
        return (left.order, left.uid) < (right.order, right.uid) if answer is None else answer

    def queue_order(self, left: Queue, right: Queue) -> bool:
        answer = self._first_opinion("queue_order", "enableQueueOrder", left, right)
        return (left.order, left.name) < (right.order, right.name) if answer is None else answer

    def victim_queue_order(self, left: Queue, right: Queue, preemptor: Queue) -> bool:
        answer = self._first_opinion("victim_queue_order", None, left, right, preemptor)
        return not self.queue_order(left, right) if answer is None else answer

    def task_order(self, left: Task, right: Task) -> bool:
        answer = self._first_opinion("task_order", "enableTaskOrder", left, right)
        return compare_task(left, right) if answer is None else answer

    # Job predicates.
    def job_valid(self, job: Job) -> str | None:
        for fn in self._each("job_valid", None):
            reason = fn(job)
            if reason:
                return str(reason)
        return None

    def job_ready(self, job: Job) -> bool:
        return all(fn(job) for fn in self._each("job_ready", "enableJobReady"))

    def _vote(self, method: str, flag: str, job: Job) -> bool:
        for tier in self.tiers:
            permitted = False
            for plugin in tier:
                if not hasattr(plugin, method) or not plugin.enabled(flag):
                    continue
                vote = getattr(plugin, method)(job)
                if vote < 0:
                    return False
                permitted = permitted or vote > 0
            if permitted:
                return True
        return True

    def job_pipelined(self, job: Job) -> bool:
        return self._vote("job_pipelined", "enableJobPipelined", job)

    def job_enqueueable(self, job: Job) -> bool:
        return self._vote("job_enqueueable", "enableJobEnqueued", job)

    def job_enqueued(self, job: Job) -> None:
        for fn in self._each("job_enqueued", "enableJobEnqueued"):
            fn(job)

    def job_starving(self, job: Job) -> bool:
        for tier in self.tiers:
            fns = [p.job_starving for p in tier if hasattr(p, "job_starving") and p.enabled("enableJobStarving")]
            if fns:
                return all(fn(job) for fn in fns)
        return False

    # Queues.
    def overused(self, queue: Queue) -> bool:
        return any(fn(queue) for fn in self._each("overused", "enabledOverused"))

    def allocatable(self, queue: Queue, task: Task) -> bool:
        return all(fn(queue, task) for fn in self._each("allocatable", "enabledAllocatable"))

    def preemptive(self, queue: Queue, tasks: list[Task]) -> bool:
        return all(fn(queue, tasks) for fn in self._each("preemptive", "enablePreemptive"))

    # Nodes.
    def predicate(self, task: Task, node: Node) -> str | None:
        for fn in self._each("predicate", "enablePredicate"):
            reason = fn(task, node)
            if reason:
                return str(reason)
        return None

    def node_score(self, task: Task, node: Node) -> float:
        return sum(float(fn(task, node)) for fn in self._each("node_score", "enableNodeOrder"))

    def batch_node_scores(self, task: Task, nodes: list[Node]) -> dict[str, float]:
        """`BatchNodeOrderFn`: scores a plugin gives a set of candidate nodes at once."""
        out: dict[str, float] = {}
        for fn in self._each("batch_node_scores", "enableNodeOrder"):
            for name, score in fn(task, nodes).items():
                out[name] = out.get(name, 0.0) + score
        return out

    def couples_nodes(self, task: Task) -> bool:
        """Whether a batch score of one node depends on the other candidates."""
        return any(fn(task) for fn in self._each("couples_nodes", "enableNodeOrder"))

    def node_scores(self, task: Task, nodes: list[Node]) -> dict[str, float]:
        """`PrioritizeNodes`: each node's own scores and the batch scores, summed."""
        batch = self.batch_node_scores(task, nodes)
        return {n.name: self.node_score(task, n) + batch.get(n.name, 0.0) for n in nodes}

    def hypernode_gradients(self, job: Job, purpose: str) -> list[list[str]] | None:
        """`HyperNodeGradientForJobFn`: the first plugin that registers one decides; None means
        the whole cluster (`[[root]]`)."""
        for fn in self._each("hypernode_gradients", "enabledHyperNodeGradient"):
            return list(fn(job, purpose))
        return None

    # Victims.
    def _victims(self, method: str, flag: str | None, *args: Any) -> list[Task]:
        for tier in self.tiers:
            victims: list[Task] | None = None
            for plugin in tier:
                if not hasattr(plugin, method) or not plugin.enabled(flag):
                    continue
                result, vote = getattr(plugin, method)(*args)
                if vote == ABSTAIN:
                    continue
                if not result:
                    victims = None
                    break
                if victims is None:
                    victims = list(result)
                else:
                    keep = {t.uid for t in result}
                    victims = [v for v in victims if v.uid in keep] or None
            if victims:
                return victims
        return []

    def preemptable(self, preemptor: Task, preemptees: list[Task]) -> list[Task]:
        return self._victims("preemptable", "enablePreemptable", preemptor, preemptees)

    def reclaimable(self, reclaimer: Task, reclaimees: list[Task]) -> list[Task]:
        return self._victims("reclaimable", "enableReclaimable", reclaimer, reclaimees)

    def unified_evictable(self, kind: str, job: Job, candidates: list[Task]) -> list[Task]:
        """`UnifiedEvictable`: the same walk, flags not consulted."""
        return self._victims("unified_evictable", None, kind, job, candidates)

    # Events.
    def on_allocate(self, task: Task) -> None:
        for tier in self.tiers:
            for plugin in tier:
                if hasattr(plugin, "allocate_event"):
                    plugin.allocate_event(task, +1)

    def on_deallocate(self, task: Task) -> None:
        for tier in self.tiers:
            for plugin in tier:
                if hasattr(plugin, "allocate_event"):
                    plugin.allocate_event(task, -1)
