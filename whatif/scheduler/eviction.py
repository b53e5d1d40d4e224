"""The evicting actions: preempt, reclaim (`actions/preempt/preempt.go`, `actions/reclaim/reclaim.go`)
and their gang-aware forms (`actions/gangpreempt/gangpreempt.go`, `actions/gangreclaim/gangreclaim.go`).

Only admitted, valid, starving jobs act. preempt takes victims in the preemptor's queue (skipping
jobs with a network topology, upstream issue 4374), reclaim from other queues that are reclaimable,
pod by pod per node until the preemptor fits, and the job keeps the evictions only when it is then
pipelined. The gang-aware actions pick whole bundles of victim jobs inside one domain of the job's
topology and ask `UnifiedEvictable` once per domain.
"""

from __future__ import annotations

from collections.abc import Callable

from whatif.scheduler.actions import best_queue, choose_node, pop_best
from whatif.scheduler.model import PENDING, PREEMPTABLE_STATUSES, RUNNING, Job, Node, Task
from whatif.scheduler.plugins import TOO_MANY_PODS
from whatif.scheduler.resources import add, fits, plus, total
from whatif.scheduler.session import Session, Statement, sort_by
from whatif.scheduler.subgroups import subjobs
from whatif.scheduler.topology import ROOT

Filter = Callable[[Task], bool]


def _preemptors(session: Session, skip_topology: bool) -> dict[str, list[Job]]:
    fw = session.fw
    out: dict[str, list[Job]] = {}
    for job in sorted(session.jobs.values(), key=lambda j: j.order):
        if job.is_pending() or job.queue not in session.queues or fw.job_valid(job):
            continue
        if not fw.job_starving(job) or (skip_topology and job.has_topology):
            continue
        out.setdefault(job.queue, []).append(job)
    return out


def _evict_on_node(session: Session, task: Task, node: Node, victims: list[Task], stmt: Statement) -> bool:
    """Evict in victim order until the task fits, then pipeline it there (`normalPreempt`,
    `reclaimForTask`); the node's evictions are undone when it still does not fit."""
    fw = session.fw
    queue = session.queues[session.jobs[task.job].queue]
    if not fits(task.resreq, plus(node.future_idle, total(v.resreq for v in victims))):
        return False
    local = Statement(session)
    ordered = session.victim_order(victims, task)
    while not (fw.allocatable(queue, task) and fits(task.resreq, node.future_idle)):
        if not ordered:
            break
        local.evict(ordered.pop(0))
    if not (fw.allocatable(queue, task) and fits(task.resreq, node.future_idle)):
        local.discard()
        return False
    stmt.merge(local)
    stmt.pipeline(task, node.name)
    return True


def _nodes_for(session: Session, task: Task) -> list[Node]:
    """`PredicateForPreemptAction`: only reasons eviction cannot resolve rule a node out (a full
    pod count can be resolved by evicting)."""
    fw = session.fw
    nodes = [n for n in session.nodes.values() if (fw.predicate(task, n) or TOO_MANY_PODS) == TOO_MANY_PODS]
    return sorted(nodes, key=lambda n: (-fw.node_score(task, n), n.name))


def _preempt_task(session: Session, task: Task, stmt: Statement, victim_filter: Filter) -> bool:
    if task.preemption_never:
        return False
    fw = session.fw
    for node in _nodes_for(session, task):
        candidates = [t for t in node.tasks.values() if victim_filter(t)]
        victims = fw.preemptable(task, candidates)
        if victims and _evict_on_node(session, task, node, victims, stmt):
            return True
    return False


def preempt(session: Session) -> None:
    fw, jobs = session.fw, session.jobs
    by_queue = _preemptors(session, skip_topology=True)
    for queue_name in [q.name for q in sort_queues(session, list(by_queue))]:
        waiting = by_queue[queue_name]
        while waiting:
            job = pop_best(waiting, session)
            stmt = Statement(session)
            tasks = sort_by([t for t in job.pending_tasks() if True], fw.task_order)
            for task in tasks:
                if not fw.job_starving(job):
                    break

                def same_queue(victim: Task, task: Task = task, job: Job = job) -> bool:
                    vj = jobs[victim.job]
                    return (
                        victim.status in PREEMPTABLE_STATUSES
                        and not (task.best_effort and not victim.best_effort)
                        and victim.preemptable
                        and vj.queue == job.queue
                        and vj.uid != job.uid
                    )

                _preempt_task(session, task, stmt, same_queue)
            if fw.job_pipelined(job):
                stmt.commit(job.uid)
            else:
                stmt.discard()
                session.unschedulable.setdefault(job.uid, "preempt")
        for job in [j for j in session.jobs.values() if j.queue == queue_name]:
            _preempt_within_job(session, job)


def _preempt_within_job(session: Session, job: Job) -> None:
    fw = session.fw
    if job.is_pending() or fw.job_valid(job) or not fw.job_starving(job) or job.has_topology:
        return
    for task in sort_by(job.pending_tasks(), fw.task_order):
        stmt = Statement(session)

        def own(victim: Task, task: Task = task) -> bool:
            return (
                victim.job == job.uid
                and victim.status in PREEMPTABLE_STATUSES
                and victim.preemptable
                and not (task.best_effort and not victim.best_effort)
            )

        if not _preempt_task(session, task, stmt, own):
            stmt.discard()
            break
        stmt.commit(job.uid)


def sort_queues(session: Session, names: list[str]) -> list:
    queues = [session.queues[n] for n in names]
    return sort_by(queues, session.fw.queue_order)


def reclaim(session: Session) -> None:
    fw, jobs, queues = session.fw, session.jobs, session.queues
    by_queue = _preemptors(session, skip_topology=False)
    while by_queue:
        queue = best_queue(session, [queues[q] for q in by_queue])
        waiting = by_queue[queue.name]
        if fw.overused(queue):
            del by_queue[queue.name]
            continue
        job = pop_best(waiting, session)
        if not waiting:
            del by_queue[queue.name]
        stmt = Statement(session)
        for task in sort_by(job.pending_tasks(), fw.task_order):
            if not fw.job_starving(job):
                break
            if task.preemption_never or not fw.preemptive(queue, [task]):
                continue
            for node in _nodes_for(session, task):
                reclaimees = [
                    t
                    for t in node.tasks.values()
                    if t.status == RUNNING
                    and t.preemptable
                    and jobs[t.job].queue != job.queue
                    and queues[jobs[t.job].queue].reclaimable
                ]
                victims = fw.reclaimable(task, reclaimees) if reclaimees else []
                if victims and _evict_on_node(session, task, node, victims, stmt):
                    break
        if fw.job_pipelined(job):
            stmt.commit(job.uid)
        else:
            stmt.discard()
            session.unschedulable.setdefault(job.uid, "reclaim")


def _pending_for_gang(session: Session, job: Job) -> list[Task]:
    """`CollectPendingTasksForGangEviction`."""
    subs = [s for s in subjobs(job) if any(t.status == PENDING and not t.best_effort for t in s.tasks)]
    subs = subs[:1] if session.fw.job_ready(job) else [s for s in subs if not s.is_ready()]
    return [t for s in subs for t in s.tasks if t.status == PENDING and not t.best_effort]


def _bundles(session: Session, local: dict[str, list[Task]]) -> list[tuple[bool, Job, list[Task]]]:
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
    by_queue = _preemptors(session, skip_topology=False)
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


def _candidates(session: Session, kind: str, job: Job, domain: str) -> dict[str, list[Task]]:
    """The domain's pods the action may take, per victim job (`preemptJobInDomains` and
    `reclaimJobInDomains`): gangpreempt Bound or Running pods of lower-priority jobs of the same
    queue, gangreclaim Running pods of other queues that are reclaimable; never a job or pod marked
    not preemptable."""
    queues = session.queues
    inside = None if domain == ROOT else session.hypernodes[domain].nodes
    local: dict[str, list[Task]] = {}
    for victim in session.jobs.values():
        if victim.uid == job.uid or victim.preemptable is False:
            continue
        if kind == "gangpreempt":
            if victim.queue != job.queue or victim.priority >= job.priority:
                continue
            statuses = PREEMPTABLE_STATUSES
        else:
            if victim.queue == job.queue or not queues[victim.queue].reclaimable:
                continue
            statuses = frozenset({RUNNING})
        for task in victim.tasks:
            if task.status in statuses and task.preemptable and (inside is None or task.node in inside):
                local.setdefault(victim.uid, []).append(task)
    return local


def _evict_in_domain(
    session: Session, kind: str, job: Job, pending: list[Task], domain: str, allow_whole: bool, stmt: Statement
) -> bool:
    """`selectDomainBundles` and the nomination: bundles safe first, then by victim job; the tasks
    `UnifiedEvictable` allows; bundles added until the job's need fits and its pods can be placed.

    Upstream asks `UnifiedEvictable` once with every bundle of the domain. The in-tree filters are
    per pod (priority, gang, conformance) or walk the list in order with a running allocation
    (capacity), so their answer for the first bundles is the start of their answer for all; the
    model asks for a growing prefix and stops as soon as the selection works."""
    fw = session.fw
    bundles = _bundles(session, _candidates(session, kind, job, domain))
    bundles.sort(key=lambda b: (not b[0], b[1].priority, b[1].uid))
    totals = session.hypernode_totals[domain]
    available = plus(totals.idle, totals.releasing)
    need = total(t.resreq for t in pending)
    nodes = None if domain == ROOT else [session.nodes[n] for n in sorted(session.hypernodes[domain].nodes)]
    size = 8
    while True:
        prefix = bundles[:size]
        allowed = {t.uid for t in fw.unified_evictable(kind, job, [t for b in prefix for t in b[2]])}
        selected: list[Task] = []
        for safe, _victim, tasks in prefix:
            if safe:
                tasks = [t for t in tasks if t.uid in allowed]
            elif not allow_whole or any(t.uid not in allowed for t in tasks):
                continue
            if not tasks:
                continue
            selected += tasks
            if fits(need, add(dict(available), total(t.resreq for t in selected))) and _nominate(
                session, job, pending, nodes, selected, stmt
            ):
                return True
        if size >= len(bundles):
            return False
        size *= 4


def _nominate(
    session: Session, job: Job, pending: list[Task], nodes: list[Node] | None, victims: list[Task], stmt: Statement
) -> bool:
    """`BuildNominationPlanInDomain`: evict every selected victim, pipeline the pending pods on the
    best nodes of the domain (`nodes` None: the whole cluster)."""
    fw = session.fw
    queue = session.queues[job.queue]
    trial = Statement(session)
    for victim in victims:
        trial.evict(victim)
    for task in sort_by(pending, fw.task_order):
        if not fw.allocatable(queue, task):
            continue
        node = choose_node(session, task, nodes)
        if node is not None:
            trial.pipeline(task, node.name)
        if fw.job_pipelined(job):
            break
    if fw.job_pipelined(job):
        stmt.merge(trial)
        return True
    trial.discard()
    return False


def gangpreempt(session: Session) -> None:
    gang_evict(session, "gangpreempt")


def gangreclaim(session: Session) -> None:
    gang_evict(session, "gangreclaim")
