"""The nomination of the gang-aware evicting actions: where a starving job's pending pods would go
once victims have left (`BuildNominationPlanInDomain`, `runSimulateTrialAtHyperNode` and
`organizeEvictionWorksheet` in `actions/utils/`), and the room test that lets gang eviction skip
selections no trial can use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from whatif.scheduler.actions import choose_node
from whatif.scheduler.gradients import members, sub_domains
from whatif.scheduler.model import Job, Queue, Task
from whatif.scheduler.resources import Resources, Shape, add, fits, places_on, plus, shape_of, total
from whatif.scheduler.session import Session, Statement, sort_by
from whatif.scheduler.subgroups import SubJob, subjobs


class FirstPlaces:
    """Where the nomination's first trial may place the first sub-group (`sub_domains`: with a
    hard topology, the HyperNodes inside the domain at its tier or below) and what the selected
    victims free there. The trial places every pod of the sub-group on one node each of a single
    HyperNode, so it can succeed only in one that then has room for them all (`Session.room`);
    until one does, the victims are not evicted and no nomination is tried. Open for good once one
    does (more victims only free more), and always open without a hard sub-group topology."""

    def __init__(self, session: Session, job: Job, sub: SubJob, domain: str, first: list[Resources]):
        self.session, self.need = session, total(first)
        self.shapes = Counter(shape_of(request) for request in first)
        tier = sub.topology.tier if sub.topology is not None and sub.topology.mode == "hard" else None
        self.allowed: set[str] = set()
        if job.hard_topology and tier is not None:
            self.allowed = {h.name for h in session.inside(domain) if h.tier <= tier}
        self.key = (domain, tier, tuple(sorted(self.shapes.items())))
        self.open = False
        self.restart()

    def reopen(self) -> None:
        """Start again from the nodes as they are (nothing selected)."""
        self.restart()
        self.open = not self.allowed or self.session.while_still(
            ("first places", self.key), lambda: any(self._holds(name) for name in self.allowed)
        )

    def could_open(self, candidates: Callable[[], Iterable[Task]], kind: str, job: Job) -> bool:
        """Whether selecting every pod the action may take would open it: when not, no selection
        can. The pods the action may take depend only on the action, the job's queue and its
        priority, so the answer serves every such job until a pod moves."""
        if not self.allowed:
            return True

        def with_every_victim() -> bool:
            self.reopen()
            gains: dict[str, Resources] = {}
            for victim in candidates():
                if self.open:
                    break
                self.free(victim, add(gains.setdefault(victim.node, {}), victim.resreq))
            opened = self.open
            self.restart()
            return opened

        return self.session.while_still(("could open", kind, job.queue, job.priority, self.key), with_every_victim)

    def restart(self) -> None:
        """Forget what was freed: the victims were evicted, the nodes' future idle includes it."""
        self.future_idle: dict[str, Resources] = {}
        """HyperNode -> its future idle resources with what the selected victims free."""
        self.extra: dict[str, dict[Shape, int]] = {}
        """HyperNode -> the room the selected victims add, per shape."""
        self.before: dict[str, Resources] = {}
        """Node -> what it gave back before the latest victim on it."""

    def free(self, victim: Task, gain: Resources) -> None:
        """`victim` selected; `gain` is all its node gives back so far."""
        if self.open:
            return
        session, node = self.session, self.session.nodes[victim.node]
        before = self.before.get(node.name, {})
        added = {
            shape: places_on(plus(node.future_idle, gain), shape) - places_on(plus(node.future_idle, before), shape)
            for shape in self.shapes
        }
        self.before[node.name] = dict(gain)
        for totals in session.node_hypernodes.get(node.name, ()):
            name = totals.name
            if name not in self.allowed:
                continue
            if name not in self.future_idle:
                self.future_idle[name] = dict(totals.future_idle)
            add(self.future_idle[name], victim.resreq)
            extra = self.extra.setdefault(name, dict.fromkeys(self.shapes, 0))
            for shape, count in added.items():
                extra[shape] += count
            if self._holds(name):
                self.open = True
                return

    def _holds(self, name: str) -> bool:
        future_idle = self.future_idle.get(name)
        if future_idle is None:
            future_idle = self.session.hypernode_totals[name].future_idle
        if not fits(self.need, future_idle):
            return False
        return room_for(self.session, name, self.shapes, self.extra.get(name, {}))


def room_for(session: Session, hypernode: str, shapes: Counter[Shape], extra: dict[Shape, int]) -> bool:
    """Whether the HyperNode's nodes (with the room `extra` adds) have room for as many pods of
    each shape as `shapes` counts: a trial that must place every pod fails where they do not
    (predicates can fail it elsewhere)."""
    return all(session.room(hypernode, shape) + extra.get(shape, 0) >= count for shape, count in shapes.items())


def nominate(session: Session, job: Job, domain: str) -> Statement | None:
    """`BuildNominationPlanInDomain` once the selected victims are evicted: sub-group by sub-group
    (those `minSubGroups` needs first), every pending pod of the sub-group pipelined on the best
    node of the domain (or of the first HyperNode of its gradient that takes them all, with a hard
    topology) and the sub-group then ready or pipelined; stop once the job was ready before or is
    pipelined now. The plan stands only when the job ends pipelined: victims evicted for pods that
    cannot be placed are given back."""
    fw = session.fw
    queue = session.queues[job.queue]
    was_ready = fw.job_ready(job)
    chain = Statement(session)
    pipelined = False
    for sub in eviction_worksheet(session, job):
        tasks = sort_by(sub.pending(), fw.task_order)
        places = sub_domains(session, sub, domain, tasks, evicting=True) if job.hard_topology else iter([domain])
        if sub.topology is not None and sub.topology.mode == "hard":
            shapes = Counter(shape_of(t.resreq) for t in tasks)
            places = (p for p in places if room_for(session, p, shapes, {}))
        winner = next((t for place in places if (t := _trial(session, queue, job, sub, tasks, place))), None)
        if winner is None:
            chain.discard()
            return None
        chain.merge(winner)
        pipelined = fw.job_pipelined(job)
        if was_ready or pipelined:
            break
    if not pipelined:
        chain.discard()
        return None
    return chain


def eviction_worksheet(session: Session, job: Job) -> list[SubJob]:
    """`organizeEvictionWorksheet`: the sub-groups with pending pods (BestEffort ones aside), those
    still needed for `minSubGroups` first."""
    subs = subjobs(job)
    need = {p.name: p.min_subgroups for p in job.subgroups}
    ready = {p.name: 0 for p in job.subgroups}
    for sub in subs:
        if sub.policy is not None and sub.is_ready():
            ready[sub.policy.name] += 1
    required: set[str] = set()
    for sub in subs:
        if sub.policy is not None and not sub.is_ready() and ready[sub.policy.name] < need[sub.policy.name]:
            required.add(sub.key)
            ready[sub.policy.name] += 1
    pending = [s for s in subs if s.pending()]
    return sorted(pending, key=lambda s: s.key not in required)


def _trial(session: Session, queue: Queue, job: Job, sub: SubJob, tasks: list[Task], place: str) -> Statement | None:
    """`runSimulateTrialAtHyperNode`: each pod on the best node of `place` that its future idle
    resources hold, or the trial fails; it stands when it placed something and the sub-group (the
    job, without sub-group policies) is then ready or pipelined."""
    fw = session.fw
    nodes = members(session, place)
    trial = Statement(session)
    for task in tasks:
        node = choose_node(session, task, nodes) if fw.allocatable(queue, task) else None
        if node is None:
            trial.discard()
            return None
        trial.pipeline(task, node.name)
    if sub.policy is not None:
        done = sub.is_ready() or sub.is_pipelined()
    else:
        done = fw.job_ready(job) or fw.job_pipelined(job)
    if not trial.operations or not done:
        trial.discard()
        return None
    return trial
