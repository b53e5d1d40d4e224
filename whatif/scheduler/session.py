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
    ALLOCATED_STATUSES,
    BINDING,
    NODE_GROUP_LABEL,
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
from whatif.scheduler.resources import INFINITE, Resources, Shape, add, places_on
from whatif.scheduler.topology import ROOT

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
    domain_names: dict[str, str] = field(default_factory=dict)
    """HyperNode -> the name the reports give it (the stack's domain, or a pool and its label)."""
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
    moves: int = 0
    """Counts the pods placed on or taken off a node, so an answer can be kept until one moves."""
    unplaceable: dict[int, int] = field(default_factory=dict)
    """Task shape -> `moves` when a search of the whole cluster last found no node for it."""
    node_hypernodes: dict[str, list[HyperNodeTotals]] = field(default_factory=dict)
    hypernode_totals: dict[str, HyperNodeTotals] = field(default_factory=dict)
    unschedulable: dict[str, str] = field(default_factory=dict)
    """Job -> why the last action that tried it could not place it (for `explain`)."""
    spread_domains: dict[Any, frozenset[str]] = field(default_factory=dict)
    spread_index: dict[tuple[str, str, str], list[Task]] = field(default_factory=dict)
    """Pod topology spread's domains per node selector, and tasks per label (`spread`)."""
    arrivals: list[list[Task | Job]] = field(default_factory=list)
    """Waves of pods, or of whole jobs, each arriving once the cluster has settled without it
    (`cluster.arrive`)."""
    _still: tuple[int, dict[Any, Any]] = field(default=(-1, {}), repr=False)
    _indexed: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    _inside: dict[str, list[HyperNode]] = field(default_factory=dict, repr=False)
    _by_priority: list[Job] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        # The `nodegroup` plugin reads every node's group label, whatever the pods select on.
        selected = {NODE_GROUP_LABEL} | {
            key
            for job in self.jobs.values()
            for task in job.tasks
            for key in (*task.node_selector, *task.affinity_keys())
        }
        domains: dict[str, list[str]] = {}
        for hypernode in sorted(self.hypernodes.values(), key=lambda h: h.name):
            if hypernode.name != ROOT:
                for name in hypernode.nodes:
                    domains.setdefault(name, []).append(hypernode.name)
        for node in self.nodes.values():
            node.tell_apart_by(selected, tuple(domains.get(node.name, ())))
        for job in self.jobs.values():  # classes end up ordered by their nodes' latest change
            for task in job.tasks:
                if task.node and task.status in ON_NODE | {PIPELINED}:
                    self._place(task, task.status, +1)
        for node in self.nodes.values():
            self.classes.setdefault(node.class_key, {})[node.name] = node

    def index_hypernodes(self) -> None:
        """Each node's HyperNodes and every HyperNode's totals, kept up to date by `_place`, so a
        search over HyperNodes does not add up their nodes again. Kept across cycles while the
        HyperNodes stay the same (the virtual root is added anew each cycle with the same nodes)."""
        indexed = {h.name: h.nodes for h in self.hypernodes.values()}
        if indexed == self._indexed:
            return
        self._indexed = indexed
        self._inside = {}
        self.node_hypernodes = {name: [] for name in self.nodes}
        self.hypernode_totals = {}
        for hypernode in self.hypernodes.values():
            totals = HyperNodeTotals(hypernode.name != ROOT, hypernode.name)
            for name in hypernode.nodes:
                node = self.nodes.get(name)
                if node is None:
                    continue
                self.node_hypernodes[name].append(totals)
                totals.members.append(node)
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
        if sign > 0:
            node.tasks[task.uid] = task
        else:
            node.tasks.pop(task.uid, None)
        self._move(task, node, _node_parts_of(status, sign))

    def _move(self, task: Task, node: Node, parts: tuple[int, int, int]) -> None:
        """`task`'s requests added to or taken from what `node` holds, releases and has pipelined
        (`parts`, as `_node_parts_of`), with its class and its HyperNodes' totals."""
        self.moves += 1
        bucket = self.classes.get(node.class_key)
        if bucket is not None:
            bucket.pop(node.name, None)
            if not bucket:
                del self.classes[node.class_key]
        request = tuple(task.resreq.items())
        held, releasing, pipelined = parts
        future = releasing - held - pipelined
        before = [node.future_idle.get(name, 0.0) for name, _ in request]
        node.move(task.resreq, held, releasing, pipelined)
        self.classes.setdefault(node.class_key, {})[node.name] = node
        # idle = allocatable - used and future idle = idle + releasing - pipelined move linearly.
        # Each moved part once with its amounts, for every HyperNode the node is in.
        changes = (held, -held, future, releasing)
        deltas = [
            (index, [(name, change * amount) for name, amount in request])
            for index, change in enumerate(changes)
            if change
        ]
        for totals in self.node_hypernodes.get(node.name, ()):
            if totals.peak is not None and future:
                _keep_peak(totals, node, request, before, future > 0)
            if totals.rooms:
                totals.rooms = {}
            moving = totals.moving()
            for index, amounts in deltas:
                part = moving[index]
                for name, delta in amounts:
                    part[name] = part.get(name, 0.0) + delta

    def set_status(self, task: Task, status: str, node: str | None = None) -> None:
        before, here, stays = task.status, self.nodes.get(task.node), node in (None, task.node)
        if stays and before in ALLOCATED_STATUSES and status in ALLOCATED_STATUSES:
            task.status = status  # allocated, binding, bound, running: the node holds the same
        elif stays and here is not None and PENDING not in (before, status):
            # It stays on its node (evicted, or an eviction undone): one move of the difference,
            # where taking it off and adding it again made two, each with the node's HyperNodes.
            taken, added = _node_parts_of(before, -1), _node_parts_of(status, +1)
            here.tasks.pop(task.uid, None)
            here.tasks[task.uid] = task
            task.status = status
            self._move(task, here, (taken[0] + added[0], taken[1] + added[1], taken[2] + added[2]))
        else:
            self._place(task, before, -1)
            task.status = status
            if node is not None:
                task.node = node
            if status == PENDING:
                task.node = ""
            else:
                self._place(task, status, +1)
        job = self.jobs.get(task.job)
        if job is not None:
            job.moved(task, before)

    def jobs_by_priority(self) -> list[Job]:
        """Every job, lowest priority first (the order gang eviction selects victims in)."""
        if len(self._by_priority) != len(self.jobs):
            self._by_priority = sorted(self.jobs.values(), key=lambda j: (j.priority, j.uid))
        return self._by_priority

    def inside(self, hypernode: str) -> list[HyperNode]:
        """The HyperNodes whose nodes all belong to `hypernode` (itself included)."""
        if hypernode not in self._inside:
            nodes = self.hypernodes[hypernode].nodes
            self._inside[hypernode] = [h for h in self.hypernodes.values() if h.nodes <= nodes]
        return self._inside[hypernode]

    def peak_future_idle(self, hypernode: str) -> Resources | None:
        """The most of each resource any one node of the HyperNode will have free (None for the
        virtual root, whose search goes by node class): a pod that does not fit it fits on none of
        its nodes, so a search there can be skipped."""
        totals = self.hypernode_totals.get(hypernode)
        if totals is None or not totals.bounded:
            return None
        if totals.peak is None:
            peak: Resources = {}
            holders: dict[str, int] = {}
            for node in totals.members:
                for name, amount in node.future_idle.items():
                    top = peak.get(name, -INFINITE)
                    if amount > top:
                        peak[name], holders[name] = amount, 1
                    elif amount == top:
                        holders[name] += 1
            totals.peak, totals.holders = peak, holders
        return totals.peak

    def while_still(self, key: Any, compute: Callable[[], T]) -> T:
        """`compute()`, remembered under `key` until a pod moves: for answers read from the nodes'
        resources alone (the engine clears it with each session)."""
        moves, answers = self._still
        if moves != self.moves:
            answers = {}
            self._still = (self.moves, answers)
        if key not in answers:
            answers[key] = compute()
        return answers[key]

    def forget_still(self) -> None:
        self._still = (-1, {})

    def room(self, hypernode: str, shape: Shape) -> int:
        """How many pods of `shape` the HyperNode's nodes have room for in their future idle
        resources, node by node (`places_on`)."""
        totals = self.hypernode_totals[hypernode]
        if shape not in totals.rooms:
            totals.rooms[shape] = sum(places_on(node.future_idle, shape) for node in totals.members)
        return totals.rooms[shape]


def _node_parts_of(status: str, sign: int) -> tuple[int, int, int]:
    """How a pod of `status` added (1) or taken (-1) counts in what its node holds, releases and
    has pipelined."""
    return (sign if status in ON_NODE else 0, sign if status == RELEASING else 0, sign if status == PIPELINED else 0)


def _keep_peak(totals: HyperNodeTotals, node: Node, request: Shape, before: list[float], freed: bool) -> None:
    """Keep the HyperNode's peak future idle after the node's changed: raised (or shared) where
    the node now has as much or more; forgotten (found again when asked) where the last node that
    held it now has less."""
    peak, holders = totals.peak, totals.holders
    assert peak is not None
    future_idle = node.future_idle
    for (name, _amount), was in zip(request, before, strict=True):
        now, top = future_idle.get(name, 0.0), peak.get(name, -INFINITE)
        if freed:
            if now > top:
                peak[name], holders[name] = now, 1
            elif now == top and was != top:
                holders[name] = holders.get(name, 0) + 1
        elif was == top and now < was:
            holders[name] = holders.get(name, 1) - 1
            if holders[name] <= 0:
                totals.peak = None
                return


@dataclass
class HyperNodeTotals:
    """The sums over a HyperNode's nodes that the topology search and gang eviction compare."""

    bounded: bool = True
    """False for the virtual root, whose per-node peak is not kept."""
    name: str = ""
    allocatable: Resources = field(default_factory=dict)
    used: Resources = field(default_factory=dict)
    idle: Resources = field(default_factory=dict)
    future_idle: Resources = field(default_factory=dict)
    releasing: Resources = field(default_factory=dict)
    members: list[Node] = field(default_factory=list)
    peak: Resources | None = None
    """`Session.peak_future_idle`, kept as pods move (`_keep_peak`); None once the last node
    that held it has less."""
    holders: dict[str, int] = field(default_factory=dict)
    """How many of the nodes have the peak of each resource."""
    rooms: dict[Shape, int] = field(default_factory=dict)
    """`Session.room`, emptied once a pod on one of the nodes has moved."""

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
                op.task.job_allocated_hypernode = ""  # `unallocate` and `unPipeline` clear it
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
