"""The gang-aware evicting actions: gangpreempt and gangreclaim (`actions/gangpreempt/gangpreempt.go`,
`actions/gangreclaim/gangreclaim.go`, their helpers in `actions/utils/`).

Only admitted, valid, starving jobs act. They pick whole bundles of victim jobs inside one domain
of the job's topology, ask `UnifiedEvictable` once per domain, and keep the evictions only when a
nomination plan places the job's pending pods (`BuildNominationPlanInDomain`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from whatif.scheduler.actions import best_queue, choose_node, members, pop_best, sub_domains
from whatif.scheduler.eviction import preemptors
from whatif.scheduler.model import PENDING, PREEMPTABLE_STATUSES, RUNNING, Job, Queue, Task
from whatif.scheduler.resources import INFINITE, Resources, add, fits, plus, total
from whatif.scheduler.session import Session, Shape, Statement, places_on, shape_of, sort_by
from whatif.scheduler.subgroups import SubJob, subjobs
from whatif.scheduler.topology import ROOT

Bundle = tuple[bool, Job, list[Task]]
"""(safe, victim job, its pods the bundle takes)."""


def _pending_for_gang(session: Session, job: Job) -> list[Task]:
    """`CollectPendingTasksForGangEviction`."""
    subs = [s for s in subjobs(job) if any(t.status == PENDING and not t.best_effort for t in s.tasks)]
    subs = subs[:1] if session.fw.job_ready(job) else [s for s in subs if not s.is_ready()]
    return [t for s in subs for t in s.tasks if t.status == PENDING and not t.best_effort]


def _bundles(session: Session, local: dict[str, list[Task]]) -> list[Bundle]:
    """`CreateJobBundles`: per victim job a safe bundle (its surplus over `minMember`) and a whole
    bundle (the rest of its pods in the domain)."""
    out = []
    for uid, tasks in local.items():
        job = session.jobs[uid]
        tasks = sorted(tasks, key=lambda t: (t.priority, t.uid))
        surplus = job.ready_num - job.min_member
        if surplus < 0:
            out.append((True, job, tasks))
            continue
        if surplus:
            out.append((True, job, tasks[:surplus]))
        if tasks[surplus:]:
            out.append((False, job, tasks[surplus:]))
    return out


def gang_evict(session: Session, kind: str) -> None:
    fw, queues = session.fw, session.queues
    arguments = session.configurations.get(kind, {})
    max_domains = int(arguments.get("maxDomains", 8)) or 8
    allow_whole = arguments.get("allowWholeBundle", True) is not False
    by_queue = preemptors(session, skip_topology=False)
    while by_queue:
        queue = best_queue(session, [queues[q] for q in by_queue])
        waiting = by_queue[queue.name]
        if kind == "gangreclaim" and fw.overused(queue):
            del by_queue[queue.name]
            continue
        job = pop_best(waiting, session)
        if not waiting:
            del by_queue[queue.name]
        pending = _pending_for_gang(session, job)
        if not pending or (kind == "gangreclaim" and not fw.preemptive(queue, pending)):
            continue
        gradients = fw.hypernode_gradients(job, "evict") or [[ROOT]]
        domains = list(dict.fromkeys(d for g in gradients for d in g))[:max_domains] or [ROOT]
        stmt = Statement(session)
        for domain in domains:
            if _evict_in_domain(session, kind, job, pending, domain, allow_whole, stmt):
                break
        if fw.job_pipelined(job):
            stmt.commit(job.uid)
        else:
            stmt.discard()
            session.unschedulable.setdefault(job.uid, kind)


def _victim_test(session: Session, kind: str, job: Job) -> Callable[[str], bool]:
    """Whether a job's pods may be taken for `job` (`preemptJobInDomains`, `reclaimJobInDomains`):
    gangpreempt from lower-priority jobs of the same queue, gangreclaim from other queues that are
    reclaimable; never from a job marked not preemptable."""
    queues, jobs = session.queues, session.jobs
    verdicts: dict[str, bool] = {}

    def may_lose(uid: str) -> bool:
        if uid not in verdicts:
            victim = jobs[uid]
            if uid == job.uid or victim.preemptable is False:
                verdicts[uid] = False
            elif kind == "gangpreempt":
                verdicts[uid] = victim.queue == job.queue and victim.priority < job.priority
            else:
                verdicts[uid] = victim.queue != job.queue and queues[victim.queue].reclaimable
        return verdicts[uid]

    return may_lose


def _statuses(kind: str) -> frozenset[str]:
    """gangpreempt takes Bound or Running pods, gangreclaim Running ones."""
    return PREEMPTABLE_STATUSES if kind == "gangpreempt" else frozenset({RUNNING})


def _candidates(session: Session, kind: str, job: Job, domain: str) -> dict[str, list[Task]]:
    """The pods on the HyperNode's nodes the action may take, per victim job; never a pod marked
    not preemptable."""
    may_lose, statuses = _victim_test(session, kind, job), _statuses(kind)
    local: dict[str, list[Task]] = {}
    for node in session.hypernode_totals[domain].members:
        for task in node.tasks.values():
            if task.status in statuses and task.preemptable and may_lose(task.job):
                local.setdefault(task.job, []).append(task)
    return local


def _bundles_of_cluster(session: Session, kind: str, job: Job) -> Iterator[Bundle]:
    """`CreateJobBundles` over the whole cluster, in selection order and only as far as asked:
    safe bundles, then whole ones, each by victim priority. A full gang (no surplus) has no safe
    bundle, so the first pass needs its pods only when it has one; a whole bundle read after the
    victim's safe bundle was evicted is the same pods, since the surplus fell by what left."""
    may_lose, statuses = _victim_test(session, kind, job), _statuses(kind)
    victims = [v for v in session.jobs_by_priority() if may_lose(v.uid) and v.count(*statuses)]

    def pods(victim: Job) -> list[Task]:
        taken = [t for t in victim.tasks if t.status in statuses and t.preemptable]
        return sorted(taken, key=lambda t: (t.priority, t.uid))

    for victim in victims:
        surplus = victim.ready_num - victim.min_member
        if surplus and (tasks := pods(victim)):
            yield (True, victim, tasks if surplus < 0 else tasks[:surplus])
    for victim in victims:
        surplus = victim.ready_num - victim.min_member
        if surplus >= 0 and (tasks := pods(victim)[surplus:]):
            yield (False, victim, tasks)


class _Selection:
    """Bundles in selection order, read from their source as far as a prefix needs."""

    def __init__(self, source: Iterable[Bundle]):
        self.source = iter(source)
        self.read: list[Bundle] = []
        self.exhausted = False

    def prefix(self, size: int) -> list[Bundle]:
        while len(self.read) < size and not self.exhausted:
            bundle = next(self.source, None)
            if bundle is None:
                self.exhausted = True
            else:
                self.read.append(bundle)
        return self.read[:size]

    def covered(self, size: int) -> bool:
        return self.exhausted and size >= len(self.read)


def _evict_in_domain(
    session: Session, kind: str, job: Job, pending: list[Task], domain: str, allow_whole: bool, stmt: Statement
) -> bool:
    """`selectDomainBundles` and the nomination: bundles safe first, then by victim job; the tasks
    `UnifiedEvictable` allows; bundles added until the job's need fits and its pods can be placed.

    Upstream asks `UnifiedEvictable` once with every bundle of the domain. The in-tree filters are
    per pod (priority, gang, conformance) or walk the list in order with a running allocation
    (capacity), so their answer for the first bundles is the start of their answer for all; the
    model asks for a growing prefix and stops as soon as the selection works. Victims are evicted
    only when the selection could work (the need fits and some node would then hold each pod of
    the first sub-group) and stay evicted while more are added (the nomination only moves the
    pending pods again), which leaves the nodes as evicting the whole selection at once would."""
    fw = session.fw
    if domain == ROOT:
        selection = _Selection(_bundles_of_cluster(session, kind, job))
    else:
        bundles = _bundles(session, _candidates(session, kind, job, domain))
        selection = _Selection(sorted(bundles, key=lambda b: (not b[0], b[1].priority, b[1].uid)))
    totals = session.hypernode_totals[domain]
    need = total(t.resreq for t in pending)
    worksheet = _eviction_worksheet(session, job)
    if not worksheet:
        return False
    first = [t.resreq for t in worksheet[0].tasks if t.status == PENDING and not t.best_effort]
    size = 8
    places = _FirstPlaces(session, job, worksheet[0], domain, first)
    while True:
        prefix = selection.prefix(size)
        allowed = {t.uid for t in fw.unified_evictable(kind, job, [t for b in prefix for t in b[2]])}
        available = plus(totals.idle, totals.releasing)
        ceiling = _ceiling(session, domain)
        evictions = Statement(session)
        selected: list[Task] = []
        freed: dict[str, Resources] = {}
        places.reopen()
        for safe, _victim, tasks in prefix:
            if safe:
                tasks = [t for t in tasks if t.uid in allowed]
            elif not allow_whole or any(t.uid not in allowed for t in tasks):
                continue
            if not tasks:
                continue
            for victim in tasks:
                add(available, victim.resreq)
                selected.append(victim)
                gain = add(freed.setdefault(victim.node, {}), victim.resreq)
                future = session.nodes[victim.node].future_idle
                for name in victim.resreq:
                    ceiling[name] = max(ceiling.get(name, -INFINITE), future.get(name, 0.0) + gain[name])
                places.free(victim, gain)
            # The first sub-group's pods must each find a node: none can where no node holds one.
            if not (fits(need, available) and all(fits(request, ceiling) for request in first) and places.open):
                continue
            for victim in selected:
                evictions.evict(victim)
            selected, freed = [], {}
            places.restart()
            placed = _nominate(session, job, domain)
            if placed is not None:
                evictions.merge(placed)
                stmt.merge(evictions)
                return True
        evictions.discard()
        if selection.covered(size):
            return False
        size *= 4


class _FirstPlaces:
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
        self.key = (domain, tier, shape_of(self.need), tuple(sorted(self.shapes.items())))
        self.open = False
        self.restart()

    def reopen(self) -> None:
        """Start again from the nodes as they are (nothing selected)."""
        self.restart()
        self.open = not self.allowed or self.session.while_still(
            ("first places", self.key), lambda: any(self._holds(name) for name in self.allowed)
        )

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
        extra = self.extra.get(name, {})
        return all(
            self.session.room(name, shape) + extra.get(shape, 0) >= count for shape, count in self.shapes.items()
        )


def room_for(session: Session, hypernode: str, requests: list[Resources]) -> bool:
    """Whether the HyperNode's nodes have room for each pod of `requests`, counted per shape: a
    trial that must place every pod fails where they do not (predicates can fail it elsewhere)."""
    shapes = Counter(shape_of(request) for request in requests)
    return all(session.room(hypernode, shape) >= count for shape, count in shapes.items())


def _ceiling(session: Session, domain: str) -> Resources:
    """The most of each resource one node of the domain has free in the future (a copy), read
    from one node per class for the whole cluster."""
    peak = session.peak_future_idle(domain)
    if peak is not None:
        return dict(peak)

    def over_classes() -> Resources:
        ceiling: Resources = {}
        for group in session.classes.values():
            for name, amount in next(iter(group.values())).future_idle.items():
                if amount > ceiling.get(name, -INFINITE):
                    ceiling[name] = amount
        return ceiling

    return dict(session.while_still(("ceiling", domain), over_classes))


def _nominate(session: Session, job: Job, domain: str) -> Statement | None:
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
    for sub in _eviction_worksheet(session, job):
        tasks = sort_by([t for t in sub.tasks if t.status == PENDING and not t.best_effort], fw.task_order)
        places = sub_domains(session, sub, domain, tasks) if job.hard_topology else iter([domain])
        if sub.topology is not None and sub.topology.mode == "hard":
            requests = [t.resreq for t in tasks]
            places = (p for p in places if room_for(session, p, requests))
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


def _eviction_worksheet(session: Session, job: Job) -> list[SubJob]:
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
    pending = [s for s in subs if any(t.status == PENDING and not t.best_effort for t in s.tasks)]
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


def gangpreempt(session: Session) -> None:
    gang_evict(session, "gangpreempt")


def gangreclaim(session: Session) -> None:
    gang_evict(session, "gangreclaim")
