"""The queue plugins: `capacity` (`pkg/scheduler/plugins/capacity/capacity.go`) and `proportion`
(`pkg/scheduler/plugins/proportion/proportion.go`).

Both compute a `realCapability` per queue, `min(capability, cluster - other queues' guarantees)`,
gate enqueue on `minResources + allocated + inqueue - elastic` and follow every allocation and
eviction of the session. capacity limits allocation at `realCapability` and protects `deserved`
and `guarantee` when it picks reclaim victims; proportion water-fills `deserved` by weight, limits
allocation at it and skips overused queues.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from whatif.scheduler.framework import PERMIT, REJECT, Plugin, Victims
from whatif.scheduler.model import ALLOCATED_STATUSES, Job, Queue, Task
from whatif.scheduler.resources import (
    MAX,
    Resources,
    add,
    capability_of,
    exceeded_part,
    greater_on_relevant,
    intersects,
    less_equal,
    maximum,
    min_dimension,
    minus,
    partly_within_zero_filtered,
    plus,
    resource,
    share,
    summed,
    within_on_requested,
)

ROOT = "root"


@dataclass
class QueueAttr:
    name: str
    deserved: Resources
    guarantee: Resources
    capability: Resources
    real_capability: Resources = field(default_factory=dict)
    allocated: Resources = field(default_factory=lambda: resource({}))
    request: Resources = field(default_factory=lambda: resource({}))
    inqueue: Resources = field(default_factory=lambda: resource({}))
    elastic: Resources = field(default_factory=lambda: resource({}))
    share: float = 0.0
    weight: int = 1
    ancestors: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


def _inqueue_of(job: Job) -> Resources:
    """`GetInqueueResource`: the part of `minResources` not yet allocated, for Inqueue jobs and
    for Running jobs with at least `minMember` pods allocated."""
    if job.min_resources is None:
        return {}
    running_full = job.phase == "Running" and job.count(*ALLOCATED_STATUSES) >= job.min_member
    if job.phase != "Inqueue" and not running_full:
        return {}
    return {k: max(0.0, v) for k, v in minus(job.min_resources, job.allocated).items()}


def _account(attr: QueueAttr, job: Job) -> None:
    add(attr.allocated, job.allocated)
    add(attr.request, job.requested())
    add(attr.inqueue, _inqueue_of(job))
    add(attr.elastic, job.elastic())


class QueuePlugin(Plugin):
    """What capacity and proportion share: attributes, enqueue gate, events, order."""

    attrs: dict[str, QueueAttr]

    def _total(self) -> Resources:
        return summed(n.allocatable for n in self.session.nodes.values())

    def _flat_attrs(self) -> None:
        total = self._total()
        total_guarantee = summed(resource(q.guarantee) for q in self.session.queues.values() if q.guarantee)
        self.attrs = {}
        for job in sorted(self.session.jobs.values(), key=lambda j: j.order):
            queue = self.session.queues.get(job.queue)
            if queue is None:
                continue
            attr = self.attrs.get(queue.name)
            if attr is None:
                capability = capability_of(queue.capability)
                guarantee = resource(queue.guarantee) if queue.guarantee else resource({})
                real = plus(exceeded_part(total, total_guarantee), guarantee)
                if capability is not None:
                    real = min_dimension(real, capability)
                attr = QueueAttr(
                    queue.name,
                    resource(queue.deserved),
                    guarantee,
                    capability or resource({}),
                    real,
                    weight=queue.weight,
                )
                self.attrs[queue.name] = attr
            _account(attr, job)

    def attr_of(self, queue: str) -> QueueAttr | None:
        return self.attrs.get(queue)

    def _chain(self, queue: str) -> list[QueueAttr]:
        attr = self.attrs[queue]
        return [attr] + [self.attrs[a] for a in reversed(attr.ancestors)]

    def allocate_event(self, task: Task, sign: int) -> None:
        job = self.session.jobs.get(task.job)
        if job is None or job.queue not in self.attrs:
            return
        for attr in self._chain(job.queue):
            add(attr.allocated, task.resreq, sign)
        self._update_share(self.attrs[job.queue])

    def _update_share(self, attr: QueueAttr) -> None:
        attr.share = share(attr.allocated, attr.deserved)

    def _open(self, queue: Queue) -> bool:
        return queue.state == "Open"

    def _enqueue_fits(self, attr: QueueAttr, job: Job) -> list[str]:
        minimum = job.min_resources or {}
        used = minus(plus(plus(minimum, attr.allocated), attr.inqueue), attr.elastic)
        return within_on_requested(used, attr.real_capability, minimum)

    def job_enqueued(self, job: Job) -> None:
        """Folded into `job_enqueueable`, as upstream adds `inqueue` inside its vote."""


class CapacityPlugin(QueuePlugin):
    name = "capacity"

    def on_session_open(self) -> None:
        self.hierarchy = self.option.get("enableHierarchy") is True
        self.level = max(0, int(self.arguments.get("ancestorReclaimLevel", 0)))
        self.ready = True
        if self.hierarchy:
            self.ready = self._hierarchical_attrs()
        else:
            self._flat_attrs()
            for attr in self.attrs.values():
                attr.deserved = maximum(min_dimension(attr.deserved, attr.real_capability), attr.guarantee)
        for attr in self.attrs.values():
            self._update_share(attr)

    def _hierarchical_attrs(self) -> bool:
        queues = self.session.queues
        if ROOT not in queues:
            queues[ROOT] = Queue(ROOT, reclaimable=False, order=-1)
        self.attrs = {
            q.name: QueueAttr(
                q.name, resource(q.deserved), resource(q.guarantee), resource(q.capability), weight=q.weight
            )
            for q in queues.values()
        }
        for queue in queues.values():
            seen = {queue.name}
            chain, current = [], queue
            while current.name != ROOT:
                parent = current.parent or ROOT
                if parent not in queues or parent in seen:
                    return False
                chain.append(parent)
                seen.add(parent)
                current = queues[parent]
            self.attrs[queue.name].ancestors = list(reversed(chain))
            if queue.name != ROOT:
                self.attrs[queue.parent or ROOT].children.append(queue.name)
        parts: dict[str, QueueAttr] = {}  # each queue's own jobs, then added to it and its ancestors
        for job in self.session.jobs.values():
            attr = self.attrs.get(job.queue)
            if attr is None:
                continue
            if attr.children:
                return False
            if attr.name not in parts:
                parts[attr.name] = QueueAttr(attr.name, {}, {}, {}, allocated={}, request={}, inqueue={}, elastic={})
            _account(parts[attr.name], job)
        for name, part in parts.items():
            attr = self.attrs[name]
            for up in [attr] + [self.attrs[a] for a in attr.ancestors]:
                add(up.allocated, part.allocated)
                add(up.request, part.request)
                add(up.inqueue, part.inqueue)
                add(up.elastic, part.elastic)
        root = self.attrs[ROOT]
        if all(v < 0.1 for k, v in root.capability.items() if k != "pods"):
            root.capability = {k: MAX for k in set(self._total()) | {"cpu", "memory"}}
        root.real_capability = dict(root.capability)
        self._check_hierarchy(root)
        return True

    def _check_hierarchy(self, attr: QueueAttr) -> None:
        children = [self.attrs[c] for c in attr.children]
        total_guarantee, total_deserved = resource({}), resource({})
        for child in children:
            child.deserved = maximum(child.deserved, child.guarantee)
            add(total_deserved, child.deserved)
            add(total_guarantee, child.guarantee)
            for name in ("cpu", "memory"):
                if child.capability.get(name, 0.0) <= 0:
                    child.capability[name] = attr.capability.get(name, MAX)
            for name, value in attr.capability.items():
                child.capability.setdefault(name, value)
        if attr.name == ROOT:
            attr.guarantee, attr.deserved = total_guarantee, total_deserved
        for child in children:
            real = plus(exceeded_part(attr.real_capability, total_guarantee), child.guarantee)
            child.real_capability = min_dimension(real, child.capability)
        for child in children:
            self._check_hierarchy(child)

    def _leaf(self, queue: str) -> bool:
        return not self.hierarchy or not self.attrs[queue].children

    def allocatable(self, queue: Queue, task: Task) -> bool:
        if not self._open(queue) or not self.ready or not self._leaf(queue.name) or queue.name not in self.attrs:
            return False
        return all(
            not within_on_requested(plus(a.allocated, task.resreq), a.real_capability, task.resreq)
            for a in self._chain(queue.name)
        )

    def job_enqueueable(self, job: Job) -> int:
        if not self.ready:
            return REJECT
        queue = self.session.queues[job.queue]
        if self.hierarchy and not self._leaf(job.queue):
            return REJECT
        if not self._open(queue):
            return REJECT
        if job.min_resources is None:
            return PERMIT
        if any(self._enqueue_fits(a, job) for a in self._chain(job.queue)):
            return REJECT
        for attr in self._chain(job.queue):
            add(attr.inqueue, job.min_resources)
        return PERMIT

    def preemptive(self, queue: Queue, tasks: list[Task]) -> bool:
        if not self.ready or not self._open(queue) or queue.name not in self.attrs:
            return False
        attr = self.attrs[queue.name]
        request: Resources = {}
        for task in tasks:
            add(request, task.resreq)
        future = plus(attr.allocated, request)
        if within_on_requested(future, attr.real_capability, request):
            return False
        if partly_within_zero_filtered(future, attr.deserved, request):
            return True
        for level in range(1, self.level + 1) if self.hierarchy else ():
            ancestor = self._ancestor_at(attr, level)
            if ancestor is None or ancestor == ROOT:
                continue
            up = self.attrs[ancestor]
            if partly_within_zero_filtered(plus(up.allocated, request), up.deserved, request):
                return True
        return False

    def _ancestor_at(self, attr: QueueAttr, level: int) -> str | None:
        """`queueAncestorAtDepth`: level 1 is the parent."""
        return attr.ancestors[len(attr.ancestors) - level] if 0 < level <= len(attr.ancestors) else None

    def _ancestors_within(self, attr: QueueAttr) -> set[str]:
        found = {self._ancestor_at(attr, level) for level in range(1, self.level + 1)}
        return {a for a in found if a is not None and a != ROOT}

    def _reclaim_filter(self, reclaimees: list[Task], legacy: bool, reclaimer: Task | None) -> list[Task]:
        """capacity's ReclaimableFn (legacy) and its UnifiedEvictableFn for gangreclaim: keep each
        victim queue at or above its guarantee, and take from it only while it is above deserved
        on a dimension the victim uses (or the victim uses none of deserved's dimensions); with
        `ancestorReclaimLevel` the ancestors up to that level are checked too (legacy only)."""
        victims: list[Task] = []
        allocations: dict[str, Resources] = {}
        mine = self.attrs.get(self.session.jobs[reclaimer.job].queue) if reclaimer is not None else None
        for task in reclaimees:
            job = self.session.jobs[task.job]
            attr = self.attrs.get(job.queue)
            if attr is None:
                continue
            if legacy and reclaimer is not None and not intersects(task.resreq, reclaimer.resreq, ignore_pods=True):
                continue
            allocated = allocations.setdefault(job.queue, dict(attr.allocated))
            if not less_equal(attr.guarantee, minus(allocated, task.resreq), infinity=False):
                continue
            immediate = not intersects(task.resreq, attr.deserved, ignore_pods=False)
            ancestry = legacy and self.hierarchy and self.level > 0 and mine is not None
            if immediate:
                if ancestry and mine is not None and reclaimer is not None:
                    shared = self._ancestors_within(mine) & self._ancestors_within(attr)
                    if shared and not intersects(reclaimer.resreq, mine.deserved, ignore_pods=False):
                        continue
            elif not greater_on_relevant(allocated, attr.deserved, task.resreq):
                continue
            touched = []
            if ancestry and mine is not None:
                eligible = True
                for level in range(1, self.level + 1):
                    theirs, ours = self._ancestor_at(attr, level), self._ancestor_at(mine, level)
                    if theirs is None or theirs in (ROOT, ours):
                        continue
                    up = self.attrs[theirs]
                    up_allocated = allocations.setdefault(theirs, dict(up.allocated))
                    touched.append(up_allocated)
                    if not intersects(task.resreq, up.deserved, ignore_pods=False):
                        continue
                    if not greater_on_relevant(up_allocated, up.deserved, task.resreq):
                        eligible = False
                        break
                if not eligible:
                    continue
            for used in [allocated, *touched]:
                add(used, task.resreq, -1)
            victims.append(task)
        return victims

    def reclaimable(self, reclaimer: Task, reclaimees: list[Task]) -> Victims:
        if not self.ready:
            return [], REJECT
        ordered = self.session.victim_order(reclaimees, reclaimer)
        return self._reclaim_filter(ordered, True, reclaimer), PERMIT

    def unified_evictable(self, kind: str, job: Job, candidates: list[Task]) -> Victims:
        if kind == "gangpreempt":
            return candidates, PERMIT
        if not self.ready:
            return [], REJECT
        return self._reclaim_filter(candidates, False, None), PERMIT

    def queue_order(self, left: Queue, right: Queue) -> int:
        if left.priority != right.priority:
            return right.priority - left.priority
        la, ra = self.attrs.get(left.name), self.attrs.get(right.name)
        if la is None or ra is None:
            return 0
        if self.hierarchy:
            ll, rl = self._leaf(left.name), self._leaf(right.name)
            if ll != rl:
                return -1 if ll else 1
            if ll:
                level = _common_level(la, ra)
                la = self.attrs[la.ancestors[level + 1]] if level + 1 < len(la.ancestors) else la
                ra = self.attrs[ra.ancestors[level + 1]] if level + 1 < len(ra.ancestors) else ra
        return _compare_share(la, ra)

    def victim_queue_order(self, left: Queue, right: Queue, preemptor: Queue) -> int:
        if not self.hierarchy:
            return 0
        lp, rp, pp = self.attrs.get(left.name), self.attrs.get(right.name), self.attrs.get(preemptor.name)
        if lp is None or rp is None or pp is None:
            return 0
        ll, rl = _common_level(lp, pp), _common_level(rp, pp)
        return 0 if ll == rl else (-1 if ll > rl else 1)


def _common_level(left: QueueAttr, right: QueueAttr) -> int:
    """`getQueueLevel`: the index of the deepest common ancestor."""
    level = 0
    for index in range(min(len(left.ancestors), len(right.ancestors))):
        if left.ancestors[index] != right.ancestors[index]:
            return level
        level = index
    return level


def _compare_share(left: QueueAttr, right: QueueAttr) -> int:
    """`compareShareWithDeserved`: lower share first; on a tie a queue with deserved first."""
    if left.share == right.share:
        ld = any(v >= 0.1 for k, v in left.deserved.items() if k != "pods")
        rd = any(v >= 0.1 for k, v in right.deserved.items() if k != "pods")
        return 0 if ld == rd else (-1 if ld else 1)
    return -1 if left.share < right.share else 1
