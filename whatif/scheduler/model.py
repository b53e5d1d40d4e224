"""The scheduler's snapshot of a cluster: nodes, queues, jobs (PodGroups) and tasks (pods).

Statuses, counters and readiness follow `pkg/scheduler/api/job_info.go` and `helpers.go` of Volcano
v1.15.1; node accounting follows `node_info.go` (`Idle = allocatable - used`, `FutureIdle = Idle +
Releasing - Pipelined`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from whatif.scheduler.resources import PODS, Resources, add, is_empty, minus

PENDING, ALLOCATED, PIPELINED, BINDING, BOUND, RUNNING, RELEASING, SUCCEEDED, FAILED = (
    "Pending",
    "Allocated",
    "Pipelined",
    "Binding",
    "Bound",
    "Running",
    "Releasing",
    "Succeeded",
    "Failed",
)
ALLOCATED_STATUSES = frozenset({BOUND, BINDING, RUNNING, ALLOCATED})
"""`AllocatedStatus`: the task holds its node's resources."""
ON_NODE = ALLOCATED_STATUSES | {RELEASING}
"""Statuses counted in a node's `Used`."""
PREEMPTABLE_STATUSES = frozenset({BOUND, RUNNING})
READY_STATUSES = (BOUND, BINDING, RUNNING, ALLOCATED, SUCCEEDED)
VALID_STATUSES = (*READY_STATUSES, PIPELINED, PENDING)


@dataclass(eq=False)
class Task:
    uid: str
    """`namespace/name`."""
    job: str
    resreq: Resources
    status: str = PENDING
    node: str = ""
    priority: int = 1
    """`pod.spec.priority`, 1 when unset (`NewTaskInfo`)."""
    preemptable: bool = True
    """Pod-level `volcano.sh/preemptable`, true when unset (`GetPodPreemptable`)."""
    preemption_never: bool = False
    role: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    node_affinity: tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...] = ()
    queue_affinity: str = ""
    """The node groups its queue's affinity allows, where the `nodegroup` plugin runs (it sets
    them): tasks of queues with other groups are judged apart."""
    """Required node-affinity terms (any one must match), each its match expressions (key,
    operator, values): what a model on several pools selects its nodes by."""
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    critical: bool = False
    """Protected by conformance: a system-critical priority class or `kube-system`."""
    order: int = 0
    """Creation order (the fallback of every ordering)."""
    job_allocated_hypernode: str = ""
    """`TaskInfo.JobAllocatedHyperNode`: the HyperNode its topology-bound sub-group spans as the
    allocate action tries the task (the network-topology-aware node score reads it)."""
    spread: tuple[Spread, ...] = ()
    """The pod's `topologySpreadConstraints` (`whatif.scheduler.spread`)."""

    @property
    def name(self) -> str:
        return self.uid.partition("/")[2]

    @cached_property
    def shape(self) -> int:
        """Equal for tasks every node judges alike: requests, node selector and tolerations (the
        predicates and node scores read nothing else of a task)."""
        return hash(
            (
                tuple(sorted(self.resreq.items())),
                tuple(sorted(self.node_selector.items())),
                self.node_affinity,
                self.queue_affinity,
                repr(self.tolerations),
                self.spread,
            )
        )

    def affinity_keys(self) -> set[str]:
        return {key for term in self.node_affinity for key, _, _ in term}

    @cached_property
    def best_effort(self) -> bool:
        return is_empty(self.resreq)


@dataclass(frozen=True)
class Spread:
    """One of a pod's `topologySpreadConstraints`, as far as the what-if reads them: the skew
    allowed, the label its domains are keyed on, whether it filters (`DoNotSchedule`) or only
    scores (`ScheduleAnyway`), and the labels of the pods it counts (`labelSelector.matchLabels`)."""

    max_skew: int
    key: str
    required: bool
    selector: tuple[tuple[str, str], ...]


@dataclass(eq=False)
class SubGroupPolicy:
    name: str
    size: int
    min_subgroups: int
    match_labels: dict[str, str]
    match_keys: tuple[str, ...]
    topology: Topology | None = None


@dataclass(frozen=True)
class Topology:
    """A PodGroup's `networkTopology`; `tier` is None when a hard spec names no tier, which the
    scheduler does not treat as hard (`IsHardTopologyMode`)."""

    mode: str
    tier: int | None = None
    tier_name: str | None = None


def _count(held: Resources, requested: Resources, status: str, request: Resources, sign: int) -> None:
    """Add (1) or take (-1) a pod's request to a job's sums: held when allocated, requested when
    allocated or pending."""
    if status in ALLOCATED_STATUSES:
        for name, amount in request.items():
            held[name] = held.get(name, 0.0) + sign * amount
            requested[name] = requested.get(name, 0.0) + sign * amount
    elif status == PENDING:
        for name, amount in request.items():
            requested[name] = requested.get(name, 0.0) + sign * amount


@dataclass(eq=False)
class Job:
    uid: str
    queue: str
    min_member: int
    phase: str
    priority: int = 0
    min_resources: Resources | None = None
    min_task_member: dict[str, int] = field(default_factory=dict)
    topology: Topology | None = None
    subgroups: list[SubGroupPolicy] = field(default_factory=list)
    preemptable: bool | None = None
    """PodGroup-level `volcano.sh/preemptable`; None when unset."""
    allocated_hypernode: str = ""
    tasks: list[Task] = field(default_factory=list)
    order: int = 0
    _tally: dict[tuple[str, bool], int] | None = field(default=None, repr=False)
    _tallied: int = field(default=0, repr=False)
    _held: Resources = field(default_factory=dict, repr=False)
    _requested: Resources = field(default_factory=dict, repr=False)
    parts: tuple[int, list[Any]] | None = field(default=None, repr=False)
    """`subgroups.subjobs` with the pod count it was built for: which sub-group a pod joins
    follows from its labels alone, so it is found once per set of pods."""

    @property
    def name(self) -> str:
        return self.uid.partition("/")[2]

    @property
    def namespace(self) -> str:
        return self.uid.partition("/")[0]

    def tally(self) -> dict[tuple[str, bool], int]:
        """(status, BestEffort) -> pods: counted once, then kept by `Session.set_status` (the only
        place a status changes), as the scheduler's `TaskStatusIndex` is."""
        if self._tally is None or self._tallied != len(self.tasks):
            tally: dict[tuple[str, bool], int] = {}
            held: Resources = {}
            requested: Resources = {}
            for task in self.tasks:
                key = (task.status, task.best_effort)
                tally[key] = tally.get(key, 0) + 1
                _count(held, requested, task.status, task.resreq, 1)
            self._tally, self._tallied, self._held, self._requested = tally, len(self.tasks), held, requested
        return self._tally

    def set_tasks(self, tasks: list[Task]) -> None:
        """Its pods are now `tasks` (held back until the cluster settled, or arrived then)."""
        self.tasks, self._tally = tasks, None

    def moved(self, task: Task, before: str) -> None:
        """Keep `tally` and the sums after `task` went from `before` to its status now."""
        if self._tally is not None:
            old, new = (before, task.best_effort), (task.status, task.best_effort)
            self._tally[old] -= 1
            self._tally[new] = self._tally.get(new, 0) + 1
            _count(self._held, self._requested, before, task.resreq, -1)
            _count(self._held, self._requested, task.status, task.resreq, 1)

    def requested(self) -> Resources:
        """What the pods allocated or pending request (a queue's `request` counts these)."""
        self.tally()
        return self._requested

    def count(self, *statuses: str) -> int:
        tally = self.tally()
        return sum(tally.get((s, False), 0) + tally.get((s, True), 0) for s in statuses)

    @property
    def ready_num(self) -> int:
        return self.count(*READY_STATUSES)

    @property
    def waiting_num(self) -> int:
        return self.count(PIPELINED)

    @property
    def pending_best_effort(self) -> int:
        return self.tally().get((PENDING, True), 0)

    @property
    def valid_num(self) -> int:
        return self.count(*VALID_STATUSES)

    def is_ready(self) -> bool:
        return self.ready_num + self.pending_best_effort >= self.min_member

    def is_pipelined(self) -> bool:
        return self.waiting_num + self.ready_num + self.pending_best_effort >= self.min_member

    def is_starving(self) -> bool:
        return self.waiting_num + self.ready_num < self.min_member

    def is_pending(self) -> bool:
        return self.phase in ("Pending", "")

    @property
    def allocated(self) -> Resources:
        """What the allocated pods hold (a copy)."""
        self.tally()
        return dict(self._held)

    def pending_tasks(self) -> list[Task]:
        return [t for t in self.tasks if t.status == PENDING]

    @property
    def hard_topology(self) -> bool:
        """`ContainsHardTopology` of the job or one of its sub-groups."""
        specs = [self.topology] + [s.topology for s in self.subgroups]
        return any(s is not None and s.mode == "hard" and s.tier is not None for s in specs)

    @property
    def has_topology(self) -> bool:
        return self.topology is not None or any(s.topology is not None for s in self.subgroups)

    def elastic(self) -> Resources:
        """`GetElasticResources`: what the job runs beyond its `minResources`."""
        if self.min_resources is None:
            return {}
        over = minus(self.allocated, self.min_resources)
        return {k: v for k, v in over.items() if v > 0 and k != PODS}

    def roles_ready(self, pipelined: bool) -> bool:
        """`CheckTaskReady`/`CheckTaskPipelined`: each role has its `minTaskMember` (skipped when
        minMember is below their sum)."""
        if not self.min_task_member or self.min_member < sum(self.min_task_member.values()):
            return True
        statuses = ALLOCATED_STATUSES | {SUCCEEDED} | ({PIPELINED} if pipelined else set())
        for role, need in self.min_task_member.items():
            have = sum(
                1
                for t in self.tasks
                if t.role == role and (t.status in statuses or (t.status == PENDING and t.best_effort))
            )
            if have < need:
                return False
        return True

    def roles_valid(self) -> bool:
        if not self.min_task_member or self.min_member < sum(self.min_task_member.values()):
            return True
        statuses = ALLOCATED_STATUSES | {SUCCEEDED, PIPELINED, PENDING}
        return all(
            sum(1 for t in self.tasks if t.role == role and t.status in statuses) >= need
            for role, need in self.min_task_member.items()
        )


@dataclass
class Queue:
    name: str
    weight: int = 1
    capability: Resources = field(default_factory=dict)
    deserved: Resources = field(default_factory=dict)
    guarantee: Resources = field(default_factory=dict)
    state: str = "Open"
    reclaimable: bool = True
    priority: int = 0
    parent: str | None = None
    order: int = 0
    affinity: QueueAffinity | None = None
    """`spec.affinity`: the node groups its tasks may, should or must not use (None: unset)."""


NODE_GROUP_LABEL = "volcano.sh/nodegroup-name"
"""A node's group for the `nodegroup` plugin (`NodeGroupNameKey`)."""


@dataclass(frozen=True)
class QueueAffinity:
    """A queue's `spec.affinity` as the `nodegroup` plugin reads it."""

    required: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()
    """In order: with `enablePreferredOrder` an earlier group scores higher."""
    anti_required: tuple[str, ...] = ()
    anti_preferred: tuple[str, ...] = ()

    @property
    def unset(self) -> bool:
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)


@dataclass(eq=False)
class Node:
    name: str
    allocatable: Resources
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)
    unschedulable: bool = False
    used: Resources = field(default_factory=dict)
    releasing: Resources = field(default_factory=dict)
    pipelined: Resources = field(default_factory=dict)
    tasks: dict[str, Task] = field(default_factory=dict)
    other_pods: int = 0
    """Pods outside any PodGroup (not Volcano's): they count against the pod limit."""
    idle: Resources = field(default_factory=dict)
    future_idle: Resources = field(default_factory=dict)
    static_key: int = 0
    """Equal for nodes the predicates cannot tell apart (the labels pods select on, taints,
    cordon, allocatable resources)."""
    state_key: int = 0
    """Equal for nodes whose resources (pipelined ones too, which the node scores count) and pod
    count are the same right now; with `static_key` it lets a search decide once for a whole class
    of identical nodes."""

    def __post_init__(self) -> None:
        self.tell_apart_by(None)
        self.refresh()

    def tell_apart_by(self, label_keys: set[str] | None, domain: tuple[str, ...] = ()) -> None:
        """Key the node's class on the labels named in `label_keys` (all when None) and on the
        HyperNodes that hold it (`domain`). The predicates read a node's labels only through pods'
        node selectors, so labels no pod selects on, such as every node's own
        `kubernetes.io/hostname`, need not split classes; the network-topology-aware node score
        reads the node's HyperNodes, so nodes in different ones must not share a class."""
        labels = (
            self.labels.items() if label_keys is None else ((k, v) for k, v in self.labels.items() if k in label_keys)
        )
        self.static_key = hash(
            (
                tuple(sorted(labels)),
                repr(self.taints),
                self.unschedulable,
                tuple(sorted(self.allocatable.items())),
                domain,
            )
        )

    def refresh(self) -> None:
        """Recompute what follows from `used`, `releasing` and `pipelined` after they change."""
        self.idle = minus(self.allocatable, self.used)
        self.future_idle = minus(add(dict(self.idle), self.releasing), self.pipelined)
        self._rekey()

    def move(self, request: Resources, held: int, releasing: int, pipelined: int) -> None:
        """`request` added (1) to or taken (-1) from what the node holds, releases and has
        pipelined; idle and future idle follow linearly, as `refresh` would compute them."""
        future = releasing - held - pipelined
        used, idle, future_idle = self.used, self.idle, self.future_idle
        for name, amount in request.items():
            if held:
                used[name] = used.get(name, 0.0) + held * amount
                idle[name] = idle.get(name, 0.0) - held * amount
            if releasing:
                self.releasing[name] = self.releasing.get(name, 0.0) + releasing * amount
            if pipelined:
                self.pipelined[name] = self.pipelined.get(name, 0.0) + pipelined * amount
            if future:
                future_idle[name] = future_idle.get(name, 0.0) + future * amount
        self._rekey()

    def _rekey(self) -> None:
        self.state_key = hash(
            (
                tuple(sorted(self.used.items())),
                tuple(sorted(self.future_idle.items())),
                tuple(sorted((k, v) for k, v in self.pipelined.items() if v)),
                len(self.tasks) + self.other_pods,
            )
        )

    @property
    def class_key(self) -> tuple[int, int]:
        return (self.static_key, self.state_key)

    @property
    def max_pods(self) -> int:
        return int(self.allocatable.get(PODS, 0))


@dataclass
class HyperNode:
    name: str
    tier: int
    nodes: frozenset[str]
    """Every real node below it."""
    tier_name: str = ""
    parent: str | None = None
