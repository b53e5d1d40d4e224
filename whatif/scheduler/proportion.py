"""The `proportion` queue plugin (`pkg/scheduler/plugins/proportion/proportion.go`): deserved
water-filled by weight, allocation limited at it, overused queues skipped."""

from __future__ import annotations

from whatif.scheduler.framework import PERMIT, REJECT, Victims
from whatif.scheduler.model import Job, Queue, Task
from whatif.scheduler.queues import QueuePlugin
from whatif.scheduler.resources import (
    Resources,
    add,
    exceeded_part,
    less_equal,
    maximum,
    min_dimension,
    plus,
    resource,
    within_on_requested,
)


class ProportionPlugin(QueuePlugin):
    name = "proportion"

    def on_session_open(self) -> None:
        self._flat_attrs()
        for attr in self.attrs.values():
            attr.deserved = resource({})
        remaining = self._total()
        met: set[str] = set()
        while True:
            weight = sum(a.weight for a in self.attrs.values() if a.name not in met)
            if weight == 0:
                break
            before = dict(remaining)
            increased, decreased = resource({}), resource({})
            for attr in sorted(self.attrs.values(), key=lambda a: a.name):
                if attr.name in met:
                    continue
                old = dict(attr.deserved)
                deserved = plus(attr.deserved, {k: v * attr.weight / weight for k, v in remaining.items()})
                deserved = min_dimension(deserved, attr.real_capability)
                deserved = min_dimension(deserved, attr.request, zero=True)
                attr.deserved = maximum(deserved, attr.guarantee)
                self._update_share(attr)
                if less_equal(attr.request, attr.deserved, infinity=False) or attr.deserved == old:
                    met.add(attr.name)
                for name in set(attr.deserved) | set(old):
                    delta = attr.deserved.get(name, 0.0) - old.get(name, 0.0)
                    add(increased if delta > 0 else decreased, {name: abs(delta)})
            remaining = exceeded_part(plus(remaining, decreased), increased)
            if all(v < 0.1 for k, v in remaining.items() if k != "pods") or remaining == before:
                break

    def queue_order(self, left: Queue, right: Queue) -> int:
        if left.priority != right.priority:
            return right.priority - left.priority
        la, ra = self.attrs.get(left.name), self.attrs.get(right.name)
        if la is None or ra is None or la.share == ra.share:
            return 0
        return -1 if la.share < ra.share else 1

    def reclaimable(self, reclaimer: Task, reclaimees: list[Task]) -> Victims:
        victims: list[Task] = []
        allocations: dict[str, Resources] = {}
        for task in reclaimees:
            attr = self.attrs.get(self.session.jobs[task.job].queue)
            if attr is None:
                continue
            allocated = allocations.setdefault(attr.name, dict(attr.allocated))
            if not less_equal(allocated, attr.deserved, infinity=False):
                add(allocated, task.resreq, -1)
                victims.append(task)
        return victims, PERMIT

    def overused(self, queue: Queue) -> bool:
        attr = self.attrs.get(queue.name)
        return attr is not None and less_equal(attr.deserved, attr.allocated, infinity=False)

    def _within_deserved(self, queue: Queue, tasks: list[Task]) -> bool:
        attr = self.attrs.get(queue.name)
        if not self._open(queue) or attr is None:
            return False
        request: Resources = {}
        for task in tasks:
            add(request, task.resreq)
        return not within_on_requested(plus(attr.allocated, request), attr.deserved, request)

    def allocatable(self, queue: Queue, task: Task) -> bool:
        return self._within_deserved(queue, [task])

    def preemptive(self, queue: Queue, tasks: list[Task]) -> bool:
        return self._within_deserved(queue, tasks)

    def job_enqueueable(self, job: Job) -> int:
        queue = self.session.queues[job.queue]
        if not self._open(queue):
            return REJECT
        attr = self.attrs.get(job.queue)
        if job.min_resources is None or attr is None:
            return PERMIT
        if self._enqueue_fits(attr, job):
            return REJECT
        add(attr.inqueue, job.min_resources)
        return PERMIT
