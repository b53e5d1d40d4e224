"""One scheduling session: the snapshot, the plugins built from the policy, and statements.

A statement records the operations of one attempt (allocate, pipeline, evict) so that they can be
committed or rolled back as `pkg/scheduler/framework/statement.go` does; every operation tells the
plugins through their event handlers (capacity and proportion keep each queue's `allocated` that
way). Binds and evictions reach the outside only on commit, which is what the tests of upstream
observe through their fake binder and evictor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import TYPE_CHECKING, Any, TypeVar

from whatif.scheduler.model import (
    ALLOCATED,
    BINDING,
    ON_NODE,
    PENDING,
    PIPELINED,
    RELEASING,
    HyperNode,
    Job,
    Node,
    Queue,
    Task,
)
from whatif.scheduler.resources import Resources, add

if TYPE_CHECKING:
    from whatif.scheduler.framework import Framework

T = TypeVar("T")


@dataclass
class Session:
    nodes: dict[str, Node]
    queues: dict[str, Queue]
    jobs: dict[str, Job]
    hypernodes: dict[str, HyperNode] = field(default_factory=dict)
    hypernodes_ready: bool = True
    configurations: dict[str, dict[str, Any]] = field(default_factory=dict)
    binds: dict[str, str] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    evicted_by: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """Evicted task -> (action, preemptor job, the node it ran on)."""
    framework: Framework | None = None
    action: str = ""
    actions: tuple[str, ...] = ()
    classes: dict[tuple[int, int], dict[str, Node]] = field(default_factory=dict)
    """Nodes the scheduler cannot tell apart right now (same labels, taints, resources, pods), so a
    search over the whole cluster decides once per class."""
    verdicts: dict[tuple[tuple[int, int], int], tuple[bool, float] | None] = field(default_factory=dict)
    """(node class, task shape) -> the node's answer for such a task (`actions.node_verdict`)."""
    node_hypernodes: dict[str, list[HyperNodeTotals]] = field(default_factory=dict)
    hypernode_totals: dict[str, HyperNodeTotals] = field(default_factory=dict)
    unschedulable: dict[str, str] = field(default_factory=dict)
    """Job -> why the last action that tried it could not place it (for `explain`)."""

    def __post_init__(self) -> None:
        for job in self.jobs.values():
            for task in job.tasks:
                if task.node and task.status in ON_NODE | {PIPELINED}:
                    self._place(task, task.status, +1)
        for node in self.nodes.values():
            self.classes.setdefault(node.class_key, {})[node.name] = node

    def index_hypernodes(self) -> None:
        """Each node's HyperNodes and every HyperNode's totals, kept up to date by `_place`, so a
        search over HyperNodes does not add up their nodes again."""
        self.node_hypernodes = {name: [] for name in self.nodes}
        self.hypernode_totals = {}
        for hypernode in self.hypernodes.values():
            totals = HyperNodeTotals()
            for name in hypernode.nodes:
                node = self.nodes.get(name)
                if node is None:
                    continue
                self.node_hypernodes[name].append(totals)
                for part, values in totals.parts(node):
                    add(part, values)
            self.hypernode_totals[hypernode.name] = totals

    @property
    def fw(self) -> Framework:
        assert self.framework is not None
        return self.framework

    def job_of(self, task: Task) -> Job:
        return self.jobs[task.job]

    def victim_order(self, victims: list[Task], preemptor: Task) -> list[Task]:
        return victim_order(self, victims, preemptor)

    def _place(self, task: Task, status: str, sign: int) -> None:
        node = self.nodes.get(task.node)
        if node is None:
            return
        above = self.node_hypernodes.get(node.name, ())
        names = tuple(task.resreq)
        before = [{k: values.get(k, 0.0) for k in names} for values in node_parts(node)] if above else []
        bucket = self.classes.get(node.class_key)
        if bucket is not None:
            bucket.pop(node.name, None)
            if not bucket:
                del self.classes[node.class_key]
        if status in ON_NODE:
            add(node.used, task.resreq, sign)
        if status == RELEASING:
            add(node.releasing, task.resreq, sign)
        if status == PIPELINED:
            add(node.pipelined, task.resreq, sign)
        if sign > 0:
            node.tasks[task.uid] = task
        else:
            node.tasks.pop(task.uid, None)
        node.refresh()
        self.classes.setdefault(node.class_key, {})[node.name] = node
        if above:
            deltas = [
                [(k, change) for k in names if (change := values.get(k, 0.0) - old[k])]
                for values, old in zip(node_parts(node), before, strict=True)
            ]
            for totals in above:
                for part, delta in zip(totals.moving(), deltas, strict=True):
                    for name, change in delta:
                        part[name] = part.get(name, 0.0) + change

    def set_status(self, task: Task, status: str, node: str | None = None) -> None:
        self._place(task, task.status, -1)
        task.status = status
        if node is not None:
            task.node = node
        if status == PENDING:
            task.node = ""
        else:
            self._place(task, status, +1)


@dataclass
class HyperNodeTotals:
    """The sums over a HyperNode's nodes that the topology search and gang eviction compare."""

    allocatable: Resources = field(default_factory=dict)
    used: Resources = field(default_factory=dict)
    idle: Resources = field(default_factory=dict)
    future_idle: Resources = field(default_factory=dict)
    releasing: Resources = field(default_factory=dict)

    def parts(self, node: Node) -> tuple[tuple[Resources, Resources], ...]:
        """(total, the node's part) pairs."""
        return (
            (self.allocatable, node.allocatable),
            *zip(self.moving(), node_parts(node), strict=True),
        )

    def moving(self) -> tuple[Resources, ...]:
        """The totals placing a pod changes, in the order of `node_parts`."""
        return (self.used, self.idle, self.future_idle, self.releasing)


def node_parts(node: Node) -> tuple[Resources, ...]:
    """A node's resources that its HyperNodes' `HyperNodeTotals.moving` add up."""
    return (node.used, node.idle, node.future_idle, node.releasing)


@dataclass
class Operation:
    kind: str
    """`allocate`, `pipeline` or `evict`."""
    task: Task
    previous_status: str
    previous_node: str


class Statement:
    """`framework.Statement`: operations applied at once, kept or undone together."""

    def __init__(self, session: Session):
        self.session = session
        self.operations: list[Operation] = []

    def _do(self, kind: str, task: Task, status: str, node: str) -> None:
        self.operations.append(Operation(kind, task, task.status, task.node))
        self.session.set_status(task, status, node)
        if kind == "evict":
            self.session.fw.on_deallocate(task)
        else:
            self.session.fw.on_allocate(task)

    def allocate(self, task: Task, node: str) -> None:
        self._do("allocate", task, ALLOCATED, node)

    def pipeline(self, task: Task, node: str) -> None:
        self._do("pipeline", task, PIPELINED, node)

    def evict(self, task: Task) -> None:
        self._do("evict", task, RELEASING, task.node)

    def unevict_all(self) -> None:
        self.discard()

    def discard(self) -> None:
        for op in reversed(self.operations):
            fw = self.session.fw
            if op.kind == "evict":
                fw.on_allocate(op.task)
            else:
                fw.on_deallocate(op.task)
            self.session.set_status(op.task, op.previous_status, op.previous_node)
            if op.previous_status == PENDING:
                op.task.node = ""
        self.operations = []

    def merge(self, other: Statement) -> None:
        self.operations.extend(other.operations)
        other.operations = []

    def commit(self, preemptor: str = "") -> None:
        session = self.session
        for op in self.operations:
            if op.kind == "evict":
                session.evictions.append(op.task.uid)
                session.evicted_by[op.task.uid] = (session.action, preemptor, op.task.node)
            elif op.kind == "allocate":
                session.set_status(op.task, BINDING)
                session.binds[op.task.uid] = op.task.node
        self.operations = []


def sort_by(items: list[T], less: Callable[[T, T], bool]) -> list[T]:
    """Sort with a `less` function, as the scheduler's priority queues pop."""

    def compare(left: T, right: T) -> int:
        if less(left, right):
            return -1
        return 1 if less(right, left) else 0

    return sorted(items, key=cmp_to_key(compare))


def victim_order(session: Session, victims: list[Task], preemptor: Task) -> list[Task]:
    """`Session.BuildVictimsPriorityQueue`: the order victims are evicted in."""
    fw, jobs, queues = session.fw, session.jobs, session.queues
    mine = jobs.get(preemptor.job)

    def less(left: Task, right: Task) -> bool:
        lj, rj = jobs[left.job], jobs[right.job]
        if lj.uid == rj.uid:
            return not fw.task_order(left, right)
        if mine is None or lj.queue == rj.queue:
            if fw.job_order(lj, rj) or fw.job_order(rj, lj):
                return not fw.job_order(lj, rj)
            return not fw.task_order(left, right)
        return fw.victim_queue_order(queues[lj.queue], queues[rj.queue], queues[mine.queue])

    return sort_by(victims, less)
