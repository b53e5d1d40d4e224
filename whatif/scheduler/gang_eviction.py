"""The gang-aware evicting actions: gangpreempt and gangreclaim (`actions/gangpreempt/gangpreempt.go`,
`actions/gangreclaim/gangreclaim.go`, their helpers in `actions/utils/`).

Only admitted, valid, starving jobs act. They pick whole bundles of victim jobs inside one domain
of the job's topology, ask `UnifiedEvictable` once per domain, and keep the evictions only when a
nomination plan places the job's pending pods (`BuildNominationPlanInDomain`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from whatif.scheduler.actions import best_queue, pop_best
from whatif.scheduler.eviction import preemptors
from whatif.scheduler.model import PREEMPTABLE_STATUSES, RUNNING, Job, Task
from whatif.scheduler.nomination import FirstPlaces, eviction_worksheet, nominate
from whatif.scheduler.resources import EPSILON, INFINITE, Resources, add, fits, plus, total
from whatif.scheduler.session import Session, Statement, sort_by
from whatif.scheduler.subgroups import subjobs
from whatif.scheduler.topology import ROOT

Bundle = tuple[bool, Job, list[Task]]
"""(safe, victim job, its pods the bundle takes)."""


def _pending_for_gang(session: Session, job: Job) -> list[Task]:
    """`CollectPendingTasksForGangEviction`."""
    subs = [s for s in subjobs(job) if s.pending()]
    subs = subs[:1] if session.fw.job_ready(job) else [s for s in subs if not s.is_ready()]
    return [t for s in subs for t in s.pending()]


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


def _cluster_victims(session: Session, kind: str, job: Job) -> Iterator[Job]:
    """The jobs of the cluster the action may take pods from, lowest priority first."""
    may_lose, statuses = _victim_test(session, kind, job), _statuses(kind)
    return (v for v in session.jobs_by_priority() if may_lose(v.uid) and v.count(*statuses))


def _takeable(session: Session, victim: Job, kind: str) -> list[Task]:
    """The victim's pods the action may take now: on the session's nodes. A pod bound to a node
    the cluster does not list sits on a node Volcano's cache makes without a Node object
    (`addTask`, pkg/scheduler/cache/event_handlers.go), which the snapshot leaves out as not ready
    (`Snapshot`, pkg/scheduler/cache/cache.go): outside every HyperNode, the virtual root included."""
    statuses = _statuses(kind)
    return [t for t in victim.tasks if t.status in statuses and t.preemptable and t.node in session.nodes]


def _bundles_of_cluster(session: Session, kind: str, job: Job) -> list[Bundle]:
    """`CreateJobBundles` for every pod of the cluster the action may take (the virtual root's
    nodes are all of them), per victim job."""
    local: dict[str, list[Task]] = {}
    for victim in _cluster_victims(session, kind, job):
        tasks = _takeable(session, victim, kind)
        if tasks:
            local[victim.uid] = tasks
    return _bundles(session, local)


def _roi(bundle: Bundle, need: Resources) -> float:
    """`bundleROI`: how much of the need the bundle's pods cover (each resource capped at the
    need) over how much of it the whole victim job holds; a safe bundle costs its job nothing."""
    safe, victim, tasks = bundle
    if safe:
        return INFINITE
    names = [n for n, amount in need.items() if amount >= EPSILON]
    local = total(t.resreq for t in tasks)
    whole = total(t.resreq for t in victim.tasks)
    cover = sum(min(local.get(n, 0.0), need[n]) / need[n] for n in names)
    cost = sum(whole.get(n, 0.0) / need[n] for n in names)
    return cover / cost if cost else INFINITE


def _ordered(session: Session, kind: str, job: Job, bundles: list[Bundle], need: Resources) -> list[Bundle]:
    """`SortBundlesForPreempt` / `SortBundlesForReclaim`: safe bundles first; then the victim
    jobs in reverse scheduling order (gangpreempt) or their queues in victim queue order
    (gangreclaim); then the best cover of the need for the least of the victim's gang; then by
    job and first pod. The victims' order is ranked once, their cover once per bundle."""
    rank = _victim_rank(session, kind, job, {b[1].uid: b[1] for b in bundles})

    def key(bundle: Bundle) -> tuple[bool, int, float, str, str, int]:
        safe, victim, tasks = bundle
        return (not safe, rank[victim.uid], -_roi(bundle, need), victim.uid, tasks[0].uid if tasks else "", len(tasks))

    return sorted(bundles, key=key)


def _victim_rank(session: Session, kind: str, job: Job, victims: dict[str, Job]) -> dict[str, int]:
    """Each victim job's place in the order the sort compares them by: gangpreempt reverses the
    scheduling order of jobs, gangreclaim puts their queues in victim queue order for the job's
    queue (`VictimQueueOrderFn`, which falls back to the reverse of queue order). Both orders
    are total, as their fallbacks are."""
    fw = session.fw
    if kind == "gangpreempt":
        by_job = sort_by(list(victims.values()), lambda left, right: not fw.job_order(left, right))
        return {victim.uid: index for index, victim in enumerate(by_job)}
    preemptor_queue = session.queues[job.queue]
    queues = sort_by(
        [session.queues[name] for name in sorted({v.queue for v in victims.values()})],
        lambda left, right: fw.victim_queue_order(left, right, preemptor_queue),
    )
    place = {queue.name: index for index, queue in enumerate(queues)}
    return {uid: place[victim.queue] for uid, victim in victims.items()}


def _every_candidate(session: Session, kind: str, job: Job, domain: str) -> Iterator[Task]:
    """Every pod the action may take for `job` in the domain, in no particular order."""
    if domain == ROOT:
        for victim in _cluster_victims(session, kind, job):
            yield from _takeable(session, victim, kind)
    else:
        for pods in _candidates(session, kind, job, domain).values():
            yield from pods


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
    only when the selection could work (the need fits, some node would then hold each pod of the
    first sub-group, and a HyperNode its hard topology allows would have room for all of them:
    `FirstPlaces`) and stay evicted while more are added (the nomination only moves the pending
    pods again), which leaves the nodes as evicting the whole selection at once would. A domain
    where not even every candidate would make that room is not searched."""
    fw = session.fw
    need = total(t.resreq for t in pending)
    if domain == ROOT:
        bundles = _bundles_of_cluster(session, kind, job)
    else:
        bundles = _bundles(session, _candidates(session, kind, job, domain))
    selection = _Selection(_ordered(session, kind, job, bundles, need))
    totals = session.hypernode_totals[domain]
    worksheet = eviction_worksheet(session, job)
    if not worksheet:
        return False
    first = [t.resreq for t in worksheet[0].pending()]
    size = 8
    places = FirstPlaces(session, job, worksheet[0], domain, first)
    if not places.could_open(lambda: _every_candidate(session, kind, job, domain), kind, job):
        return False
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
            placed = nominate(session, job, domain)
            if placed is not None:
                evictions.merge(placed)
                stmt.merge(evictions)
                return True
        evictions.discard()
        if selection.covered(size):
            return False
        size *= 4


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


def gangpreempt(session: Session) -> None:
    gang_evict(session, "gangpreempt")


def gangreclaim(session: Session) -> None:
    gang_evict(session, "gangreclaim")
